package render

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"example.com/apigateway-operator/test/dataplane"
)

// trustedProxy is the loopback address the redirect test's gateway
// believes the X-Forwarded-Proto of; its other requests come from
// 127.0.0.1, which it does not.
const trustedProxy = "127.0.0.2"

// TestDataPlaneRedirects: routes with redirects through the real nginx,
// with requests sent byte for byte (dataplane.RedirectRequests: each
// kind of redirect with and without a query, the raw path kept as sent,
// both sides of the scheme's decision). A redirect's answer carries its
// status and Location and no other header a client could have written,
// and no backend sees it; a request a redirect to another scheme leaves
// reaches the backend.
func TestDataPlaneRedirects(t *testing.T) {
	bin := nginxBinary(t)
	ports := startEchoBackends(t, dataplane.RedirectServices...)
	gw := gateway("redirects", dataplane.RedirectRoutes(ports)...)
	nginx := startNginx(t, bin, func(opts Options) (string, error) {
		opts.TrustedProxies = []string{trustedProxy}
		return Config(gw, opts)
	}, startServiceDNS(t))
	for name, tc := range dataplane.RedirectRequests() {
		t.Run(name, func(t *testing.T) {
			host, from := tc.Host, "127.0.0.1"
			if host == "" {
				host = dataplane.RedirectHost
			}
			if tc.Trusted {
				from = trustedProxy
			}
			resp, body, err := dataplane.RawResponse(from, nginx.httpAddr, "GET "+tc.Target+" HTTP/1.1", host, dataplane.HeaderLines(tc.Header)...)
			require.NoError(t, err, nginx.logs())
			if tc.Service != "" {
				require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s\n%s", body, nginx.logs())
				assert.Equal(t, tc.Service, echoed(t, body).Service)
				assert.Equal(t, tc.Target, echoed(t, body).RequestURI)
				return
			}
			require.Equal(t, tc.Status, resp.StatusCode, "body: %s", body)
			assert.Equal(t, []string(nil), resp.Header.Values("Set-Cookie"), "a header the client wrote into its path")
			if tc.Location == "" {
				assert.Empty(t, resp.Header.Values("Location"))
				return
			}
			assert.Equal(t, []string{tc.Location}, resp.Header.Values("Location"))
		})
	}
}
