// Package clusterdns is a DNS server on loopback that plays the cluster
// DNS for the tests' gateways: their nginx resolves backends at request
// time through it.
package clusterdns

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Serve runs a DNS server on the UDP address addr that plays the
// cluster DNS for the gateways' backends: every name under svc.<domain>.
// is the address answer; AAAA questions get NODATA (nginx asks A and AAAA
// and fails the whole lookup when either is refused); anything else is
// NXDOMAIN. It returns the address it listens on and stop.
func Serve(addr, domain string, answer net.IP) (string, func() error, error) {
	return ServeLookup(addr, domain, func(string) []net.IP { return []net.IP{answer} })
}

// ServeLookup is Serve with the addresses (IPv4) of each name under
// svc.<domain>. looked up at every question, by the part before that
// ("web.shop" for a Service web in namespace shop); a name without any is
// NXDOMAIN.
func ServeLookup(addr, domain string, lookup func(name string) []net.IP) (string, func() error, error) {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return "", nil, err
	}
	zone := "svc." + strings.TrimSuffix(domain, ".") + "."
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		m.Authoritative = true
		for _, q := range req.Question {
			name := strings.ToLower(q.Name)
			var ips []net.IP
			if dns.IsSubDomain(zone, name) && name != zone {
				ips = lookup(strings.TrimSuffix(name, "."+zone))
			}
			switch {
			case len(ips) == 0:
				m.Rcode = dns.RcodeNameError
			case q.Qtype == dns.TypeA:
				for _, ip := range ips {
					m.Answer = append(m.Answer, &dns.A{
						Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30},
						A:   ip,
					})
				}
			}
		}
		_ = w.WriteMsg(m)
	})
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: handler, NotifyStartedFunc: func() { close(started) }}
	served := make(chan error, 1)
	go func() { served <- srv.ActivateAndServe() }()
	select {
	case <-started:
	case err := <-served:
		return "", nil, fmt.Errorf("DNS server: %w", err)
	case <-time.After(10 * time.Second):
		_ = pc.Close()
		return "", nil, fmt.Errorf("DNS server did not start within 10s")
	}
	return pc.LocalAddr().String(), func() error {
		err := srv.Shutdown()
		<-served //nolint:errcheck // ActivateAndServe's error after Shutdown says only that it stopped
		return err
	}, nil
}
