package render

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"example.com/apigateway-operator/test/dataplane"
	"example.com/apigateway-operator/test/ports"
)

// The data plane's helpers (package dataplane), under the names these
// tests use.
var (
	nginxBinary       = dataplane.NginxBinary
	writeNginxPrefix  = dataplane.WritePrefix
	nginxArgs         = dataplane.Args
	rawRequest        = dataplane.RawRequest
	startEchoBackends = dataplane.StartEchoBackends
)

type echoReply = dataplane.EchoReply

// dataPlaneWait bounds every wait of the data-plane test: nginx starting,
// stopping or reloading, and each request.
const dataPlaneWait = dataplane.Wait

// startServiceDNS plays the cluster DNS of DefaultClusterDomain: every
// Service is 127.0.0.1 (dataplane.StartServiceDNS).
func startServiceDNS(t testing.TB) string { return dataplane.StartServiceDNS(t, DefaultClusterDomain) }

// nginxProcess is nginx serving a gateway's configuration rendered for
// loopback, and what it was rendered with.
type nginxProcess struct {
	*dataplane.Nginx
	opts                 Options
	httpAddr, healthAddr string
}

// reload renders nothing: it loads config, as a pod's reloader would.
func (n *nginxProcess) reload(t *testing.T, config string) { n.Reload(t, config) }

// logs are nginx's output and error log, for failure messages.
func (n *nginxProcess) logs() string { return n.Logs() }

// startNginx renders gw for loopback (ports reserved until the test ends,
// see test/ports: nginx binds them with SO_REUSEADDR; the given resolver)
// and runs nginx on it until the test ends.
func startNginx(t testing.TB, bin string, render func(Options) (string, error), resolver string) *nginxProcess {
	t.Helper()
	return startNginxOn(t, bin, "127.0.0.1", render, resolver)
}

// startNginxOn is startNginx listening on address (such as ::1) instead
// of 127.0.0.1.
func startNginxOn(t testing.TB, bin, address string, render func(Options) (string, error), resolver string) *nginxProcess {
	t.Helper()
	opts := Options{Resolvers: []string{resolver}, listenAddress: address, httpPort: ports.For(t), healthPort: ports.For(t)}
	config, err := render(opts)
	require.NoError(t, err)
	n := &nginxProcess{
		opts:       opts,
		httpAddr:   net.JoinHostPort(address, strconv.Itoa(opts.httpPort)),
		healthAddr: net.JoinHostPort(address, strconv.Itoa(opts.healthPort)),
	}
	n.Nginx, err = dataplane.StartNginx(t, bin, config, n.healthAddr, HealthPath)
	require.NoError(t, err)
	return n
}
