package controller

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestHTTPRouteRedirects: a route whose redirect answers every request
// gets a rule of its own, its path and Gateway API's RequestRedirect
// filter with the same scheme, hostname, port, path and status (302
// spelt out), and no backend; a redirect to the other scheme of the same
// host, one limited by source ranges, or one to a percent-encoded path is
// the gateway's to answer (its path goes to Service N with the others);
// past 8 redirects on a host, the rest go to Service N too, and the rules
// stay within Gateway API's 16.
func TestHTTPRouteRedirects(t *testing.T) {
	redirect := func(path string, pt v1.PathType, rd v1.HTTPRedirect) v1.Route {
		r := route("api.example.com", path, pt, "", 0)
		r.Redirect = &rd
		return r
	}
	secure := route("api.example.com", "/secure/", v1.PathTypePrefix, "secure", 80)
	secure.Redirect = &v1.HTTPRedirect{Scheme: "https"}
	office := redirect("/office/", v1.PathTypePrefix, v1.HTTPRedirect{Hostname: "office.example.com"})
	office.SourceRanges = &v1.SourceRanges{Allow: []v1.CIDR{"10.0.0.0/8"}}
	cafe := redirect("/menu", v1.PathTypeExact, v1.HTTPRedirect{Path: &v1.RedirectPath{Type: v1.ReplaceFullPath, Value: "/caf%C3%A9/"}})
	gw := httpRouteGateway("redirects", publicGateway, office, cafe,
		redirect("/old/", v1.PathTypePrefix, v1.HTTPRedirect{Path: &v1.RedirectPath{Type: v1.ReplacePrefixMatch, Value: "/new/"}, StatusCode: ptr.To[int32](301)}),
		redirect("/docs", v1.PathTypeExact, v1.HTTPRedirect{Scheme: "https", Hostname: "docs.example.com", Port: ptr.To[v1.PortNumber](8443),
			Path: &v1.RedirectPath{Type: v1.ReplaceFullPath, Value: "/"}}),
		secure,
		route("api.example.com", "/users/", v1.PathTypePrefix, "users", 80))
	r := builtHTTPRoutes(t, gw)["api.example.com"]
	require.NotNil(t, r)
	filters := map[string]*gatewayv1.HTTPRequestRedirectFilter{}
	var proxied []string
	for _, rule := range r.Spec.Rules {
		for _, m := range rule.Matches {
			key := fmt.Sprintf("%s %s", *m.Path.Type, *m.Path.Value)
			if len(rule.Filters) == 0 {
				require.Len(t, rule.BackendRefs, 1, key)
				proxied = append(proxied, key)
				continue
			}
			require.Len(t, rule.Filters, 1, key)
			assert.Empty(t, rule.BackendRefs, key)
			assert.Equal(t, gatewayv1.HTTPRouteFilterRequestRedirect, rule.Filters[0].Type)
			filters[key] = rule.Filters[0].RequestRedirect
		}
	}
	assert.ElementsMatch(t, []string{"PathPrefix /office", "Exact /menu", "PathPrefix /secure", "PathPrefix /users"}, proxied,
		"a redirect limited by source ranges is nginx's to answer (the Gateway would answer every address), "+
			"and so is one to an encoded path (Traefik encodes it again)")
	assert.Equal(t, map[string]*gatewayv1.HTTPRequestRedirectFilter{
		"PathPrefix /old": {
			Path:       &gatewayv1.HTTPPathModifier{Type: gatewayv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To("/new/")},
			StatusCode: ptr.To(301),
		},
		"Exact /docs": {
			Scheme: ptr.To("https"), Hostname: ptr.To[gatewayv1.PreciseHostname]("docs.example.com"), Port: ptr.To[gatewayv1.PortNumber](8443),
			Path:       &gatewayv1.HTTPPathModifier{Type: gatewayv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr.To("/")},
			StatusCode: ptr.To(302),
		},
	}, filters)

	t.Run("past 8 redirects", func(t *testing.T) {
		var routes []v1.Route
		for i := range 12 {
			routes = append(routes, redirect(fmt.Sprintf("/r%02d/", i), v1.PathTypePrefix, v1.HTTPRedirect{Hostname: "www.example.com"}))
		}
		for i := range 20 {
			routes = append(routes, route("api.example.com", fmt.Sprintf("/p%02d/", i), v1.PathTypePrefix, "web", 80))
		}
		r := builtHTTPRoutes(t, httpRouteGateway("many", publicGateway, routes...))["api.example.com"]
		require.NotNil(t, r)
		assert.LessOrEqual(t, len(r.Spec.Rules), maxHTTPRouteRules)
		redirects, paths := 0, 0
		for _, rule := range r.Spec.Rules {
			if len(rule.Filters) > 0 {
				redirects++
			}
			paths += len(rule.Matches)
		}
		assert.Equal(t, maxRedirectRules, redirects)
		assert.Equal(t, 32, paths, "every path, in a rule of its own or with Service N")
	})
}
