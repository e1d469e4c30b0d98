package render

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/netns"
)

// sourceProxies are the front proxies the source-range gateway trusts,
// one per family: the address they report in X-Forwarded-For decides.
var sourceProxies = []string{"127.0.0.5", "2001:db8::5"}

// sourceRoutes: /office/ serves 127.0.0.0/24 and 2001:db8::/32 but one
// address of each (deny inside allow); /open/ serves everyone but
// 127.0.0.4 and 2001:db9::/32; /ruled has a rule and no backendService
// and serves 127.0.0.1 and 2001:db8::1 only.
func sourceRoutes(ports map[string]int32) []v1.Route {
	office := route("api.example.com", "/office/", v1.PathTypePrefix, "office", ports["office"])
	office.SourceRanges = &v1.SourceRanges{
		Allow: []v1.CIDR{"127.0.0.0/24", "2001:db8::/32"},
		Deny:  []v1.CIDR{"127.0.0.3/32", "2001:db8::bad/128"},
	}
	open := route("api.example.com", "/open/", v1.PathTypePrefix, "open", ports["open"])
	open.SourceRanges = &v1.SourceRanges{Deny: []v1.CIDR{"127.0.0.4/32", "2001:db9::/32"}}
	ruled := v1.Route{Host: "api.example.com", Path: "/ruled", PathType: v1.PathTypeExact, Rules: []v1.RouteRule{{
		Matches:        []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "X-Canary", Type: v1.MatchPresent}}}},
		BackendService: v1.BackendService{Name: "office", Port: v1.PortNumber(ports["office"])},
	}}, SourceRanges: &v1.SourceRanges{Allow: []v1.CIDR{"127.0.0.1/32", "2001:db8::1/128"}}}
	return []v1.Route{office, open, ruled}
}

// sourceRequest is a request from a source address, with the
// X-Forwarded-For it sends (none when ""), and the answer it gets: the
// echo backend's name, or a status of the gateway's own.
type sourceRequest struct {
	from, forwardedFor, target string
	canary                     bool
	service                    string
	status                     int
}

// startSourceGateway runs nginx on address with sourceRoutes and the
// trusted sourceProxies.
func startSourceGateway(t *testing.T, address string) *nginxProcess {
	t.Helper()
	ports := startEchoBackends(t, "office", "open")
	gw := gateway("sources", sourceRoutes(ports)...)
	return startNginxOn(t, nginxBinary(t), address, func(opts Options) (string, error) {
		opts.TrustedProxies = sourceProxies
		return Config(gw, opts)
	}, startServiceDNS(t))
}

// sendFrom sends each request from its own source address through nginx
// and checks who answers.
func sendFrom(t *testing.T, nginx *nginxProcess, requests map[string]sourceRequest) {
	t.Helper()
	for name, tc := range requests {
		t.Run(name, func(t *testing.T) {
			header := http.Header{}
			if tc.forwardedFor != "" {
				header.Set("X-Forwarded-For", tc.forwardedFor)
			}
			if tc.canary {
				header.Set("X-Canary", "1")
			}
			resp, data := send(t, gatewayClient(tc.from), nginx.httpAddr, http.MethodGet, tc.target, header, strings.NewReader(""))
			if tc.service == "" {
				assert.Equal(t, tc.status, resp.StatusCode, "body: %s", data)
				return
			}
			require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s\n%s", data, nginx.logs())
			assert.Equal(t, tc.service, echoed(t, data).Service)
		})
	}
}

// TestDataPlaneSourceRanges: through real nginx, with real HTTP from
// loopback addresses of 127.0.0.0/8, each decision on both sides: an
// address allowed and one outside allow, a denied address inside allow,
// deny alone; the 403 comes before the rules and the 404 of a route
// without backendService, and a path no route covers is 404 to everyone.
// A trusted proxy's X-Forwarded-For decides, for IPv4 and IPv6 clients;
// an untrusted peer's never does, either way.
func TestDataPlaneSourceRanges(t *testing.T) {
	nginx := startSourceGateway(t, "127.0.0.1")
	sendFrom(t, nginx, map[string]sourceRequest{
		"allowed":                         {from: "127.0.0.1", target: "/office/x", service: "office"},
		"outside allow":                   {from: "127.0.1.1", target: "/office/x", status: http.StatusForbidden},
		"denied inside allow":             {from: "127.0.0.3", target: "/office/x", status: http.StatusForbidden},
		"denied, no allow":                {from: "127.0.0.4", target: "/open/x", status: http.StatusForbidden},
		"not denied, no allow":            {from: "127.0.1.1", target: "/open/x", service: "open"},
		"allowed, no rule takes it":       {from: "127.0.0.1", target: "/ruled", status: http.StatusNotFound},
		"allowed, the rule takes it":      {from: "127.0.0.1", target: "/ruled", canary: true, service: "office"},
		"refused before the rules":        {from: "127.0.0.2", target: "/ruled", canary: true, status: http.StatusForbidden},
		"refused before the 404":          {from: "127.0.0.2", target: "/ruled", status: http.StatusForbidden},
		"no route, allowed address":       {from: "127.0.0.1", target: "/nowhere", status: http.StatusNotFound},
		"no route, refused address":       {from: "127.0.0.3", target: "/nowhere", status: http.StatusNotFound},
		"forged, outside allow":           {from: "127.0.1.1", forwardedFor: "127.0.0.1", target: "/office/x", status: http.StatusForbidden},
		"forged, denied":                  {from: "127.0.0.3", forwardedFor: "127.0.0.1", target: "/office/x", status: http.StatusForbidden},
		"forged deny, allowed":            {from: "127.0.0.1", forwardedFor: "127.0.0.3", target: "/office/x", service: "office"},
		"forged by an untrusted proxy":    {from: "127.0.0.6", forwardedFor: "127.0.0.1", target: "/ruled", canary: true, status: http.StatusForbidden},
		"proxy reports allowed":           {from: "127.0.0.5", forwardedFor: "127.0.0.1", target: "/office/x", service: "office"},
		"proxy reports denied":            {from: "127.0.0.5", forwardedFor: "127.0.0.3", target: "/office/x", status: http.StatusForbidden},
		"proxy reports outside allow":     {from: "127.0.0.5", forwardedFor: "198.51.100.7", target: "/office/x", status: http.StatusForbidden},
		"proxy reports allowed IPv6":      {from: "127.0.0.5", forwardedFor: "2001:db8::7", target: "/office/x", service: "office"},
		"proxy reports denied IPv6":       {from: "127.0.0.5", forwardedFor: "2001:db8::bad", target: "/office/x", status: http.StatusForbidden},
		"proxy reports outside IPv6":      {from: "127.0.0.5", forwardedFor: "2001:db9::1", target: "/office/x", status: http.StatusForbidden},
		"proxy reports, client forged":    {from: "127.0.0.5", forwardedFor: "127.0.0.1, 127.0.0.3", target: "/office/x", status: http.StatusForbidden},
		"proxy reports, forged deny":      {from: "127.0.0.5", forwardedFor: "127.0.0.3, 127.0.0.1", target: "/office/x", service: "office"},
		"proxy reports to a narrow route": {from: "127.0.0.5", forwardedFor: "127.0.0.1", target: "/ruled", canary: true, service: "office"},
		"the proxy itself, narrow route":  {from: "127.0.0.5", target: "/ruled", canary: true, status: http.StatusForbidden},
	})
}

// TestDataPlaneSourceRangesIPv6: the same gateway on ::1, in a network
// namespace of the test's own whose loopback holds addresses of
// 2001:db8::/32 and 2001:db9::/32, with real HTTP from each.
func TestDataPlaneSourceRangesIPv6(t *testing.T) {
	if !netns.Isolated(t) {
		return
	}
	for _, a := range []string{"2001:db8::1", "2001:db8::5", "2001:db8::6", "2001:db8::bad", "2001:db8:1::1", "2001:db9::1"} {
		require.NoError(t, netns.Run("ip", "-6", "addr", "add", a+"/128", "dev", "lo", "nodad"))
	}
	nginx := startSourceGateway(t, "::1")
	sendFrom(t, nginx, map[string]sourceRequest{
		"allowed":                      {from: "2001:db8::1", target: "/office/x", service: "office"},
		"allowed, another /48":         {from: "2001:db8:1::1", target: "/office/x", service: "office"},
		"outside allow":                {from: "2001:db9::1", target: "/office/x", status: http.StatusForbidden},
		"loopback outside allow":       {from: "::1", target: "/office/x", status: http.StatusForbidden},
		"denied inside allow":          {from: "2001:db8::bad", target: "/office/x", status: http.StatusForbidden},
		"denied, no allow":             {from: "2001:db9::1", target: "/open/x", status: http.StatusForbidden},
		"not denied, no allow":         {from: "2001:db8::bad", target: "/open/x", service: "open"},
		"narrow route, allowed":        {from: "2001:db8::1", target: "/ruled", canary: true, service: "office"},
		"narrow route, refused":        {from: "2001:db8:1::1", target: "/ruled", canary: true, status: http.StatusForbidden},
		"forged, outside allow":        {from: "2001:db9::1", forwardedFor: "2001:db8::1", target: "/office/x", status: http.StatusForbidden},
		"forged, denied":               {from: "2001:db8::bad", forwardedFor: "2001:db8::1", target: "/office/x", status: http.StatusForbidden},
		"forged by an untrusted proxy": {from: "2001:db8::6", forwardedFor: "2001:db8::1", target: "/ruled", canary: true, status: http.StatusForbidden},
		"proxy reports allowed":        {from: "2001:db8::5", forwardedFor: "2001:db8::1", target: "/ruled", canary: true, service: "office"},
		"proxy reports denied":         {from: "2001:db8::5", forwardedFor: "2001:db8::bad", target: "/office/x", status: http.StatusForbidden},
		"proxy reports allowed IPv4":   {from: "2001:db8::5", forwardedFor: "127.0.0.1", target: "/office/x", service: "office"},
		"proxy reports denied IPv4":    {from: "2001:db8::5", forwardedFor: "127.0.0.4", target: "/open/x", status: http.StatusForbidden},
	})
}
