package render

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
)

func TestRenderConfigIsDeterministic(t *testing.T) {
	gw := routeSets()["mixed"]
	want, err := Config(gw, Options{})
	require.NoError(t, err)
	reversed := gw.DeepCopy()
	for i, j := 0, len(reversed.Spec.Routes)-1; i < j; i, j = i+1, j-1 {
		reversed.Spec.Routes[i], reversed.Spec.Routes[j] = reversed.Spec.Routes[j], reversed.Spec.Routes[i]
	}
	got, err := Config(reversed, Options{})
	require.NoError(t, err)
	assert.Equal(t, want, got, "the route order changed the configuration")
}

// TestRenderedConfigPassesNginx runs the real `nginx -t` on every route set,
// with the template rendered the way the image's entrypoint does it but with
// a fixed resolver, so it needs neither network nor cluster DNS.
func TestRenderedConfigPassesNginx(t *testing.T) {
	nginx := nginxBinary(t)
	for name, gw := range routeSets() {
		t.Run(name, func(t *testing.T) {
			config, err := Config(gw, Options{})
			require.NoError(t, err)
			out, err := nginxTest(t, nginx, envsubstResolver(config, "127.0.0.1"))
			require.NoError(t, err, "nginx -t refused the configuration:\n%s\n%s", out, config)
			assert.Contains(t, out, "test is successful")
		})
	}
	t.Run("fixed resolvers option", func(t *testing.T) {
		config, err := Config(routeSets()["seed"], Options{Resolvers: []string{"10.96.0.10", "fd00::10"}, ClusterDomain: "corp.internal"})
		require.NoError(t, err)
		assert.Contains(t, config, "resolver 10.96.0.10 [fd00::10] valid=30s;")
		assert.Contains(t, config, `"user-service.default.svc.corp.internal:8080"`)
		out, err := nginxTest(t, nginx, config)
		require.NoError(t, err, "nginx -t: %s", out)
	})
	t.Run("resolvers with ports", func(t *testing.T) {
		config, err := Config(routeSets()["seed"], Options{Resolvers: []string{"127.0.0.1:5353", "[::1]:53"}})
		require.NoError(t, err)
		assert.Contains(t, config, "resolver 127.0.0.1:5353 [::1]:53 valid=30s;")
		out, err := nginxTest(t, nginx, config)
		require.NoError(t, err, "nginx -t: %s", out)
	})
	t.Run("listen address and ports", func(t *testing.T) {
		config, err := Config(routeSets()["seed"], Options{Resolvers: []string{"127.0.0.1"}, listenAddress: "127.0.0.1", httpPort: 18080, healthPort: 18081})
		require.NoError(t, err)
		assert.Contains(t, config, "listen 127.0.0.1:18081;")
		assert.Contains(t, config, "listen 127.0.0.1:18080 default_server;")
		assert.NotContains(t, config, "listen 8080")
		out, err := nginxTest(t, nginx, config)
		require.NoError(t, err, "nginx -t: %s", out)
	})
	t.Run("the checker fails on a broken configuration", func(t *testing.T) {
		out, err := nginxTest(t, nginx, "server { listen 8080; location / { proxy_pass http://unresolvable.invalid; } }\n")
		require.Error(t, err, "nginx -t accepted a static upstream it cannot resolve: %s", out)
	})
}

func TestRenderConfigRefusesHostileStrings(t *testing.T) {
	tests := map[string]struct {
		route   v1.Route
		wantErr string
	}{
		"host breaking out of server_name": {
			route: route("a.example.com; } server { listen 80", "/", v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].host"},
		"host with a variable":   {route: route("$host.example.com", "/", v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].host"},
		"upper-case host":        {route: route("API.example.com", "/", v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].host"},
		"wildcard in the middle": {route: route("a.*.example.com", "/", v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].host"},
		"wildcard on a TLD":      {route: route("*.com", "/", v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].host"},
		"label too long":         {route: route(strings.Repeat("a", 64)+".example.com", "/", v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].host"},
		"host too long":          {route: route(strings.Repeat("a.", 126)+"com", "/", v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].host"},
		"IP address host":        {route: route("10.0.0.1", "/", v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].host"},
		"path closing the block": {route: route("a.example.com", "/x; } location / { return 200", v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].path"},
		"path with a quote":      {route: route("a.example.com", `/x"`, v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].path"},
		"path with a brace":      {route: route("a.example.com", "/x{", v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].path"},
		"path with a variable":   {route: route("a.example.com", "/${NGINX_LOCAL_RESOLVERS}", v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].path"},
		"path with a backslash":  {route: route("a.example.com", `/x\`, v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].path"},
		"path with a newline":    {route: route("a.example.com", "/x\nreturn 200;", v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].path"},
		"path with a space":      {route: route("a.example.com", "/x y", v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].path"},
		"relative path":          {route: route("a.example.com", "x", v1.PathTypePrefix, "web", 80), wantErr: "spec.routes[0].path"},
		"encoded quote":          {route: route("a.example.com", "/x%22", v1.PathTypePrefix, "web", 80), wantErr: `contains '"'`},
		"encoded semicolon":      {route: route("a.example.com", "/x%3B", v1.PathTypePrefix, "web", 80), wantErr: `contains ';'`},
		"encoded newline":        {route: route("a.example.com", "/x%0A", v1.PathTypePrefix, "web", 80), wantErr: "must not percent-encode a control character (%0A)"},
		"encoded dot segment":    {route: route("a.example.com", "/a/%2E%2E/b", v1.PathTypePrefix, "web", 80), wantErr: `contains "/../"`},
		"encoded double slash":   {route: route("a.example.com", "/a%2F/b", v1.PathTypePrefix, "web", 80), wantErr: `contains "//"`},
		"bad percent-encoding":   {route: route("a.example.com", "/a%zz", v1.PathTypePrefix, "web", 80), wantErr: `"%" must start a percent-encoded byte`},
		"invalid UTF-8":          {route: route("a.example.com", "/a%FF", v1.PathTypePrefix, "web", 80), wantErr: "invalid UTF-8"},
		"unknown path type":      {route: route("a.example.com", "/", "Regex", "web", 80), wantErr: "spec.routes[0].pathType"},
		"service breaking out":   {route: route("a.example.com", "/", v1.PathTypePrefix, `web";return 200;#`, 80), wantErr: "spec.routes[0].backendService.name"},
		"service with a dot":     {route: route("a.example.com", "/", v1.PathTypePrefix, "evil.com", 80), wantErr: "spec.routes[0].backendService.name"},
		"port zero":              {route: route("a.example.com", "/", v1.PathTypePrefix, "web", 0), wantErr: "spec.routes[0].backendService.port"},
		"port too large":         {route: route("a.example.com", "/", v1.PathTypePrefix, "web", 70000), wantErr: "spec.routes[0].backendService.port"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			config, err := Config(gateway("evil", tc.route), Options{})
			require.Error(t, err, "rendered:\n%s", config)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.Empty(t, config)
		})
	}
	t.Run("hostile namespace", func(t *testing.T) {
		gw := gateway("evil", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
		gw.Namespace = "ns;x"
		_, err := Config(gw, Options{})
		require.ErrorContains(t, err, "metadata.namespace")
	})
	t.Run("hostile name", func(t *testing.T) {
		// The name is written into the file's header comment; admission's
		// rule (a DNS-1035 label) is checked again.
		for _, name := range []string{"evil\nserver { listen 80; }", "evil;", "Evil", "", "a..b", "dotted.gw", strings.Repeat("a", 64)} {
			gw := gateway(name, route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
			config, err := Config(gw, Options{})
			require.ErrorContains(t, err, "metadata.name", "name %q", name)
			assert.Empty(t, config)
		}
	})
	t.Run("hostile resolver and cluster domain", func(t *testing.T) {
		gw := gateway("evil", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
		for _, r := range []string{"1.1.1.1; include /etc/passwd", "dns.example.com", "dns.example.com:53", "1.1.1.1:0", "1.1.1.1:53;", "1.1.1.1:x"} {
			_, err := Config(gw, Options{Resolvers: []string{r}})
			require.ErrorContains(t, err, "not an IP address or IP:port", "resolver %q", r)
		}
		_, err := Config(gw, Options{ClusterDomain: "x;y"})
		require.ErrorContains(t, err, "clusterDomain")
		_, err = Config(gw, Options{ClusterDomain: "*.local"})
		require.ErrorContains(t, err, "clusterDomain")
	})
	t.Run("every error at once", func(t *testing.T) {
		_, err := Config(gateway("evil",
			route("ok.example.com", "/", v1.PathTypePrefix, "web", 80),
			route("Bad", "/", v1.PathTypePrefix, "web", 80),
			route("ok.example.com", "/a;", v1.PathTypePrefix, "web", 80)), Options{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "spec.routes[1].host")
		assert.Contains(t, err.Error(), "spec.routes[2].path")
	})
}

// envsubstResolver does what the image's entrypoint does to the template,
// with a fixed resolver address instead of the pod's cluster DNS.
func envsubstResolver(config, resolver string) string {
	return strings.ReplaceAll(config, "${"+ResolverVariable+"}", resolver)
}

// nginxTest runs `nginx -t` on config, with every path nginx writes inside
// a temporary prefix.
func nginxTest(t *testing.T, nginx, config string) (string, error) {
	t.Helper()
	prefix := t.TempDir()
	mainPath := writeNginxPrefix(t, prefix, "", config)
	out, err := exec.Command(nginx, nginxArgs(prefix, mainPath, "-t")...).CombinedOutput()
	return string(out), err
}

// TestRenderedConfigLoadsMaximalHosts: nginx loads the configuration of
// the largest gateway admission admits, 100 routes on 100 distinct hosts of
// 253 characters (some wildcards), without widening its own limits: no
// "could not build server_names_hash" error nor the "could not build
// optimal" warning.
func TestRenderedConfigLoadsMaximalHosts(t *testing.T) {
	nginx := nginxBinary(t)
	gw := gateway("maximal")
	for i := range 100 {
		h := maximalHost(i, i%10 == 0)
		require.Len(t, h, 253)
		gw.Spec.Routes = append(gw.Spec.Routes, route(h, "/", v1.PathTypePrefix, "web", 8080))
	}
	config, err := Config(gw, Options{Resolvers: []string{"127.0.0.1"}})
	require.NoError(t, err)
	out, err := nginxTest(t, nginx, config)
	require.NoError(t, err, "nginx -t refused 100 maximal hosts:\n%s", out)
	assert.Contains(t, out, "test is successful")
	assert.NotContains(t, out, "could not build")
	t.Run("a single 47-character host", func(t *testing.T) {
		// The length at which nginx's default bucket size gives up.
		config, err := Config(gateway("short", route(strings.Repeat("a", 35)+".example.com", "/", v1.PathTypePrefix, "web", 80)), Options{Resolvers: []string{"127.0.0.1"}})
		require.NoError(t, err)
		out, err := nginxTest(t, nginx, config)
		require.NoError(t, err, "nginx -t:\n%s", out)
		assert.NotContains(t, out, "could not build")
	})
}

// TestAmbiguousRequestPath holds the 400 rule's regular expression (PCRE in
// nginx; the same syntax in Go's RE2) to the request URIs it must and must
// not refuse. TestDataPlane sends the same kinds of request to nginx.
// nginx's PCRE matches bytes, RE2 runes: each byte of the URI is given to
// RE2 as the rune of the same value (Latin-1), so \xNN means the same to both.
func TestAmbiguousRequestPath(t *testing.T) {
	re := regexp.MustCompile(ambiguousRequestPath)
	latin1 := func(s string) string {
		r := make([]rune, len(s))
		for i := range len(s) {
			r[i] = rune(s[i])
		}
		return string(r)
	}
	tests := map[string]struct {
		uri    string
		refuse bool
	}{
		"plain":                        {uri: "/users/1"},
		"root":                         {uri: "/"},
		"encoded letter":               {uri: "/%75sers"},
		"encoded percent":              {uri: "/100%25"},
		"dot in a name":                {uri: "/a/.well-known/x"},
		"three dots":                   {uri: "/a/.../b"},
		"dots inside a segment":        {uri: "/a/b..c"},
		"encoded slash in the query":   {uri: "/a?next=%2Fb%2F..%2Fc"},
		"dot segment in the query":     {uri: "/a?p=/../b"},
		"query only (absolute form)":   {uri: "?x=//"},
		"encoded slash":                {uri: "/internal/..%2Fpublic/x", refuse: true},
		"encoded slash, lower case":    {uri: "/a%2fb", refuse: true},
		"encoded backslash":            {uri: "/a%5Cb", refuse: true},
		"encoded backslash lower case": {uri: "/a%5cb", refuse: true},
		"encoded dot":                  {uri: "/a/%2E%2E/b", refuse: true},
		"encoded dot lower case":       {uri: "/a/%2e", refuse: true},
		"backslash":                    {uri: `/a\..\b`, refuse: true},
		"hash":                         {uri: "/a#/../b", refuse: true},
		"empty segment":                {uri: "/a//b", refuse: true},
		"leading empty segment":        {uri: "//a", refuse: true},
		"dot segment":                  {uri: "/public/./x", refuse: true},
		"dot dot segment":              {uri: "/a/../b", refuse: true},
		"trailing dot":                 {uri: "/a/.", refuse: true},
		"trailing dot dot":             {uri: "/a/..", refuse: true},
		"dot before the query":         {uri: "/a/.?x", refuse: true},
		"dot dot before the query":     {uri: "/a/..?x", refuse: true},
		"encoded UTF-8":                {uri: "/caf%C3%A9/%E2%82%AC/%F0%9F%98%80"},
		"percent not followed by hex":  {uri: "/100%25zz"},
		"semicolon in the query":       {uri: "/a?x=1;y=2"},
		"high byte in the query":       {uri: "/a?x=\xc0\xae"},
		"path parameter":               {uri: "/public/..;/internal/x", refuse: true},
		"path parameter after a name":  {uri: "/a;jsessionid=1", refuse: true},
		"encoded semicolon":            {uri: "/public/..%3B/internal/x", refuse: true},
		"encoded semicolon lower case": {uri: "/public/..%3b/internal/x", refuse: true},
		"double-encoded dot":           {uri: "/public/%252e%252e/internal", refuse: true},
		"double-encoded slash":         {uri: "/public/..%252Finternal", refuse: true},
		"overlong dot C0":              {uri: "/public/%C0%AE%C0%AE/internal", refuse: true},
		"overlong slash C0 lower case": {uri: "/public/..%c0%af", refuse: true},
		"overlong C1":                  {uri: "/a%C1%9C", refuse: true},
		"overlong three bytes":         {uri: "/a%E0%80%AE", refuse: true},
		"overlong four bytes":          {uri: "/a%F0%80%80%AE", refuse: true},
		"surrogate":                    {uri: "/a%ED%A0%80", refuse: true},
		"lead byte past U+10FFFF":      {uri: "/a%F5%80%80%80", refuse: true},
		"raw overlong dot":             {uri: "/public/\xc0\xae\xc0\xae/internal", refuse: true},
		"raw UTF-8":                    {uri: "/caf\xc3\xa9", refuse: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.refuse, re.MatchString(latin1(tc.uri)), "request URI %q", tc.uri)
		})
	}
}
