package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestRenderRedirect checks the return each kind of redirect renders to,
// in each location of its route: a Location that changes neither scheme,
// host nor port is a path (absolute_redirect off); the rest of the raw
// path comes from the map that skips the prefix's segments; a wildcard
// host is checked before it is written; a redirect to another scheme of
// the same host answers only the requests on the other scheme.
func TestRenderRedirect(t *testing.T) {
	prefix := func(v string) *v1.RedirectPath {
		return &v1.RedirectPath{Type: v1.ReplacePrefixMatch, Value: v1.HTTPPath(v)}
	}
	tests := map[string]struct {
		host, path string
		pathType   v1.PathType
		backend    bool
		rd         v1.HTTPRedirect
		want       []string
		not        []string
	}{
		"a prefix replaced": {
			host: "api.example.com", path: "/old/", rd: v1.HTTPRedirect{Path: prefix("/new/"), StatusCode: ptr.To[int32](301)},
			want: []string{
				"absolute_redirect off;",
				`return 301 "/new/$is_args$args";`,
				`return 301 "/new$redirect_path_`,
				`"~^(?:/[^/?]*){1}(/[^?]*)" $1;`,
			},
			not: []string{"proxy_pass", "$request_uri\";"},
		},
		"a prefix replaced below two segments": {
			host: "api.example.com", path: "/api/v1/", rd: v1.HTTPRedirect{Path: prefix("/")},
			want: []string{`return 302 "$redirect_path_`, `"~^(?:/[^/?]*){2}(/[^?]*)" $1;`, `return 302 "/$is_args$args";`},
		},
		"the path kept, another host": {
			host: "api.example.com", path: "/a/b", pathType: v1.PathTypeExact, rd: v1.HTTPRedirect{Hostname: "www.example.com"},
			want: []string{`return 302 "$gateway_forwarded_proto://www.example.com$request_uri";`},
			not:  []string{"absolute_redirect off;", "map $request_uri", "proxy_pass"},
		},
		"https, its own port left out": {
			host: "api.example.com", path: "/", rd: v1.HTTPRedirect{Scheme: "https", Hostname: "new.example.com", Port: ptr.To[v1.PortNumber](443), Path: &v1.RedirectPath{Type: v1.ReplaceFullPath, Value: "/x"}},
			want: []string{`return 302 "https://new.example.com/x$is_args$args";`},
			not:  []string{"if ($gateway_forwarded_proto", "map $request_uri"},
		},
		"a wildcard host's first label checked": {
			host: "*.example.com", path: "/", rd: v1.HTTPRedirect{Port: ptr.To[v1.PortNumber](8080)},
			want: []string{`if ($host !~ "^[a-z0-9-]{1,63}\.")`, `return 302 "$gateway_forwarded_proto://$host:8080$request_uri";`},
		},
		"to https of the same host, before the backend": {
			host: "api.example.com", path: "/", backend: true, rd: v1.HTTPRedirect{Scheme: "https"},
			want: []string{"if ($gateway_forwarded_proto != \"https\") {\n            return 302 \"https://$host$request_uri\";\n        }\n", "proxy_pass"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pt := tc.pathType
			if pt == "" {
				pt = v1.PathTypePrefix
			}
			r := route(tc.host, tc.path, pt, "web", 80)
			if !tc.backend {
				r.BackendService = v1.BackendService{}
			}
			rd := tc.rd
			r.Redirect = &rd
			assertRendered(t, gateway("gw", r), Options{}, tc.want, tc.not)
		})
	}
}

// TestRenderRedirectRefusesWhatItWouldEscape: a redirect whose strings
// bypassed admission is refused by the renderer, never written.
func TestRenderRedirectRefusesWhatItWouldEscape(t *testing.T) {
	for name, rd := range map[string]v1.HTTPRedirect{
		"a hostname with a quote":    {Hostname: `a".example.com`},
		"a hostname with a variable": {Hostname: "$host"},
		"a path with a variable":     {Path: &v1.RedirectPath{Type: v1.ReplaceFullPath, Value: "/$request_uri"}},
		"a path with a newline":      {Path: &v1.RedirectPath{Type: v1.ReplaceFullPath, Value: "/a\r\nSet-Cookie: x"}},
		"a path to another host":     {Path: &v1.RedirectPath{Type: v1.ReplaceFullPath, Value: "//evil.example.com"}},
		"a scheme of another kind":   {Scheme: "javascript"},
		"a status of another kind":   {Path: &v1.RedirectPath{Type: v1.ReplaceFullPath, Value: "/"}, StatusCode: ptr.To[int32](200)},
	} {
		t.Run(name, func(t *testing.T) {
			r := route("api.example.com", "/", v1.PathTypePrefix, "web", 80)
			r.BackendService = v1.BackendService{}
			r.Redirect = &rd
			config, err := Config(gateway("gw", r), Options{})
			require.Error(t, err)
			assert.Empty(t, config)
		})
	}
}

// FuzzRenderRedirectStrings: whatever a redirect's hostname and path
// hold, the configuration either is refused or has the directives of the
// same redirect with harmless strings: no string ends a directive or adds
// one.
func FuzzRenderRedirectStrings(f *testing.F) {
	for _, s := range hostileStrings() {
		f.Add(s, s)
		f.Add("www.example.com", "/a"+s)
		f.Add(s+".example.com", "/")
	}
	f.Add("www.example.com", "/a-b._~!&()*+,=:@%41")
	f.Fuzz(func(t *testing.T, hostname, path string) {
		config, err := Config(fuzzRedirectGateway(hostname, path), Options{Resolvers: []string{"127.0.0.1"}})
		if err != nil {
			require.Empty(t, config)
			return
		}
		// (An empty hostname leaves the scheme's redirect of /prefix to
		// a backend it does not have: refused above.)
		want, err := Config(fuzzRedirectGateway("h.example.com", "/h"), Options{Resolvers: []string{"127.0.0.1"}})
		require.NoError(t, err, "a harmless gateway")
		assert.Equal(t, directives(t, want), directives(t, config), "%s", config)
	})
}

// fuzzRedirectGateway is a redirect of every path kind with hostname and
// path.
func fuzzRedirectGateway(hostname, path string) *v1.APIGateway {
	redirect := func(p string, rd v1.HTTPRedirect) v1.Route {
		r := route("fuzz.example.com", p, v1.PathTypePrefix, "web", 80)
		r.BackendService = v1.BackendService{}
		r.Redirect = &rd
		return r
	}
	return gateway("fuzz",
		redirect("/full", v1.HTTPRedirect{Hostname: v1.Hostname(hostname), Path: &v1.RedirectPath{Type: v1.ReplaceFullPath, Value: v1.HTTPPath(path)}}),
		redirect("/prefix", v1.HTTPRedirect{Scheme: "https", Hostname: v1.Hostname(hostname), Path: &v1.RedirectPath{Type: v1.ReplacePrefixMatch, Value: v1.HTTPPath(path)}}))
}
