package dataplane

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"
)

// StartServiceDNS runs a DNS server on a free loopback UDP port that plays
// the cluster DNS: every Service name under svc.<clusterDomain> is
// 127.0.0.1, where the echo backends listen. AAAA questions get NODATA (no
// error, no answer): nginx asks A and AAAA and fails the whole lookup when
// either is refused. Anything else is NXDOMAIN. It returns the server's
// ip:port and stops when the test ends.
func StartServiceDNS(t testing.TB, clusterDomain string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	started := make(chan struct{})
	zone := "svc." + clusterDomain + "."
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		answerServices(w, req, zone)
	}), NotifyStartedFunc: func() { close(started) }}
	served := make(chan error, 1)
	go func() { served <- srv.ActivateAndServe() }()
	select {
	case <-started:
	case err := <-served:
		t.Fatalf("DNS server: %v", err)
	case <-time.After(Wait):
		t.Fatalf("DNS server did not start within %s", Wait)
	}
	t.Cleanup(func() {
		require.NoError(t, srv.Shutdown())
		<-served //nolint:errcheck // ActivateAndServe's error after Shutdown says only that it stopped
	})
	return pc.LocalAddr().String()
}

func answerServices(w dns.ResponseWriter, req *dns.Msg, zone string) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	for _, q := range req.Question {
		name := strings.ToLower(q.Name)
		switch {
		case !dns.IsSubDomain(zone, name) || name == zone:
			m.Rcode = dns.RcodeNameError
		case q.Qtype == dns.TypeA:
			m.Answer = append(m.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30},
				A:   net.IPv4(127, 0, 0, 1),
			})
		}
	}
	_ = w.WriteMsg(m)
}
