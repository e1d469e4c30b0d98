package dataplane

import (
	"net/http"

	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// The hosts of RedirectRoutes.
const (
	RedirectHost    = "api.example.com"
	RedirectAppHost = "app.example.com"
)

// RedirectServices are the echo backends RedirectRoutes send to.
var RedirectServices = []string{"secure"}

// RedirectRoutes are routes with redirects (routes[].redirect), the one
// table of the nginx data-plane test (RedirectRequests): a prefix
// replaced by another (301) and by "/" (307), the whole path replaced on
// another scheme, host and port (308), the path kept on another host
// (303), an app root (an Exact "/" to /app/, the default 302), a prefix
// on a wildcard host with another port, and http to https in front of a
// backend, the path kept or its prefix replaced (the scheme's own port
// left out). ports gives each Service's port.
func RedirectRoutes(ports map[string]int32) []v1.Route {
	redirect := func(host, path string, pt v1.PathType, rd v1.HTTPRedirect) v1.Route {
		return v1.Route{Host: v1.Hostname(host), Path: v1.HTTPPath(path), PathType: pt, Redirect: &rd}
	}
	prefix := func(v string) *v1.RedirectPath {
		return &v1.RedirectPath{Type: v1.ReplacePrefixMatch, Value: v1.HTTPPath(v)}
	}
	full := func(v string) *v1.RedirectPath {
		return &v1.RedirectPath{Type: v1.ReplaceFullPath, Value: v1.HTTPPath(v)}
	}
	backend := v1.BackendService{Name: "secure", Port: v1.PortNumber(ports["secure"])}
	secure := v1.Route{Host: RedirectHost, Path: "/secure/", PathType: v1.PathTypePrefix, BackendService: backend,
		Redirect: &v1.HTTPRedirect{Scheme: "https"}}
	tls := v1.Route{Host: RedirectHost, Path: "/tls/", PathType: v1.PathTypePrefix, BackendService: backend,
		Redirect: &v1.HTTPRedirect{Scheme: "https", Port: ptr.To[v1.PortNumber](443), Path: prefix("/")}}
	return []v1.Route{
		redirect(RedirectHost, "/old/", v1.PathTypePrefix, v1.HTTPRedirect{Path: prefix("/new/"), StatusCode: ptr.To[int32](301)}),
		redirect(RedirectHost, "/gone/", v1.PathTypePrefix, v1.HTTPRedirect{Path: prefix("/"), StatusCode: ptr.To[int32](307)}),
		redirect(RedirectHost, "/docs", v1.PathTypeExact, v1.HTTPRedirect{
			Scheme: "https", Hostname: "docs.example.com", Port: ptr.To[v1.PortNumber](8443), Path: full("/caf%C3%A9/"), StatusCode: ptr.To[int32](308)}),
		redirect(RedirectHost, "/moved/", v1.PathTypePrefix, v1.HTTPRedirect{Hostname: "www.example.com", StatusCode: ptr.To[int32](303)}),
		redirect(RedirectAppHost, "/", v1.PathTypeExact, v1.HTTPRedirect{Path: full("/app/")}),
		redirect("*.example.com", "/old/", v1.PathTypePrefix, v1.HTTPRedirect{Port: ptr.To[v1.PortNumber](8080), Path: prefix("/new")}),
		secure, tls,
	}
}

// RedirectRequest is a request to a gateway of RedirectRoutes and its
// answer.
type RedirectRequest struct {
	Host, Target string
	Header       http.Header
	// Trusted sends the request from the gateway's trusted front proxy,
	// whose X-Forwarded-Proto the gateway believes.
	Trusted bool
	// Status and Location are the redirect's; Status 0 for a request the
	// route proxies to Service, 404 for one no route takes, 400 for one
	// the gateway refuses.
	Status   int
	Location string
	Service  string
}

// RedirectRequests are requests to RedirectRoutes, by name: each kind of
// redirect with and without a query, each side of the scheme's decision,
// and the raw forms a Location must keep (or refuse) as sent.
func RedirectRequests() map[string]RedirectRequest {
	forwarded := func(proto string) http.Header { return http.Header{"X-Forwarded-Proto": {proto}} }
	return map[string]RedirectRequest{
		"prefix replaced":                       {Target: "/old/a/b", Status: 301, Location: "/new/a/b"},
		"prefix replaced, query kept":           {Target: "/old/a/b?x=1&y=%2F&z", Status: 301, Location: "/new/a/b?x=1&y=%2F&z"},
		"prefix alone":                          {Target: "/old", Status: 301, Location: "/new/"},
		"prefix alone with its slash":           {Target: "/old/", Status: 301, Location: "/new/"},
		"prefix alone, query kept":              {Target: "/old?q", Status: 301, Location: "/new/?q"},
		"the rest as sent, percent-encoded":     {Target: "/old/caf%C3%A9/%20", Status: 301, Location: "/new/caf%C3%A9/%20"},
		"an encoded CR LF stays encoded":        {Target: "/old/a%0D%0ASet-Cookie:%20x=1", Status: 301, Location: "/new/a%0D%0ASet-Cookie:%20x=1"},
		"the prefix percent-encoded":            {Target: "/%6Fld/a", Status: 301, Location: "/new/a"},
		"an encoded slash refused":              {Target: "/old/%2F%2Fevil.example", Status: 400},
		"another path":                          {Target: "/older/a", Status: 404},
		"prefix to /":                           {Target: "/gone/x/y?z=1", Status: 307, Location: "/x/y?z=1"},
		"prefix to /, the prefix alone":         {Target: "/gone", Status: 307, Location: "/"},
		"prefix to /, a slash":                  {Target: "/gone/", Status: 307, Location: "/"},
		"full path, scheme, host and port":      {Target: "/docs", Status: 308, Location: "https://docs.example.com:8443/caf%C3%A9/"},
		"full path, query kept":                 {Target: "/docs?a=1&b", Status: 308, Location: "https://docs.example.com:8443/caf%C3%A9/?a=1&b"},
		"full path, an Exact route":             {Target: "/docs/x", Status: 404},
		"another host, the request's scheme":    {Target: "/moved/a?b=c", Status: 303, Location: "http://www.example.com/moved/a?b=c"},
		"another host, a proxy's https":         {Target: "/moved/a", Header: forwarded("https"), Trusted: true, Status: 303, Location: "https://www.example.com/moved/a"},
		"another host, a forged https":          {Target: "/moved/a", Header: forwarded("https"), Status: 303, Location: "http://www.example.com/moved/a"},
		"https, its own port left out":          {Target: "/tls/x?y", Status: 302, Location: "https://api.example.com/x?y"},
		"https on https: proxied as sent":       {Target: "/tls/x", Header: forwarded("https"), Trusted: true, Service: "secure"},
		"app root":                              {Host: RedirectAppHost, Target: "/", Status: 302, Location: "/app/"},
		"app root, query kept":                  {Host: RedirectAppHost, Target: "/?lang=en", Status: 302, Location: "/app/?lang=en"},
		"app root, another path":                {Host: RedirectAppHost, Target: "/app/", Status: 404},
		"wildcard host kept, port set":          {Host: "t1.example.com", Target: "/old/a?b", Status: 302, Location: "http://t1.example.com:8080/new/a?b"},
		"wildcard host, a label of other bytes": {Host: "a~b.example.com", Target: "/old/a", Status: 400},
		"http to https":                         {Target: "/secure/x?y=1", Status: 302, Location: "https://api.example.com/secure/x?y=1"},
		"http to https, a forged https":         {Target: "/secure/x", Header: forwarded("https"), Status: 302, Location: "https://api.example.com/secure/x"},
		"http to https, a proxy's http":         {Target: "/secure/x", Header: forwarded("http"), Trusted: true, Status: 302, Location: "https://api.example.com/secure/x"},
		"https from a proxy: proxied":           {Target: "/secure/x?y=1", Header: forwarded("https"), Trusted: true, Service: "secure"},
	}
}
