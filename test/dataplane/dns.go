package dataplane

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"example.com/apigateway-operator/test/clusterdns"
)

// StartServiceDNS runs a DNS server on a free loopback UDP port that plays
// the cluster DNS: every Service name under svc.<clusterDomain> is
// 127.0.0.1, where the echo backends listen (clusterdns). It returns the
// server's ip:port and stops when the test ends.
func StartServiceDNS(t testing.TB, clusterDomain string) string {
	t.Helper()
	addr, stop, err := clusterdns.Serve("127.0.0.1:0", clusterDomain, net.IPv4(127, 0, 0, 1))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, stop()) })
	return addr
}
