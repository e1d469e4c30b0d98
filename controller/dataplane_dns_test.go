package controller

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"
)

// startServiceDNS runs a DNS server on a free loopback UDP port that plays
// the cluster DNS for the data-plane test: every Service name under
// svc.<defaultClusterDomain> is 127.0.0.1, where the test's backends
// listen. AAAA questions get NODATA (no error, no answer): nginx asks A and
// AAAA and fails the whole lookup when either is refused. Anything else is
// NXDOMAIN. It returns the server's ip:port and stops when the test ends.
func startServiceDNS(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(answerServices), NotifyStartedFunc: func() { close(started) }}
	served := make(chan error, 1)
	go func() { served <- srv.ActivateAndServe() }()
	select {
	case <-started:
	case err := <-served:
		t.Fatalf("DNS server: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("DNS server did not start within 10s")
	}
	t.Cleanup(func() {
		require.NoError(t, srv.Shutdown())
		<-served //nolint:errcheck // ActivateAndServe's error after Shutdown says only that it stopped
	})
	return pc.LocalAddr().String()
}

func answerServices(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	zone := "svc." + defaultClusterDomain + "."
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
