package controller

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"example.com/apigateway-operator/test/clusterdns"
)

// startServiceDNS runs a DNS server on a free loopback UDP port that plays
// the cluster DNS for the data-plane test: every Service name under
// svc.<defaultClusterDomain> is 127.0.0.1, where the test's backends
// listen (clusterdns). It returns the server's ip:port and stops when the
// test ends.
func startServiceDNS(t *testing.T) string {
	t.Helper()
	addr, stop, err := clusterdns.Serve("127.0.0.1:0", defaultClusterDomain, net.IPv4(127, 0, 0, 1))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, stop()) })
	return addr
}
