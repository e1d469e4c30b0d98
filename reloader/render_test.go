package reloader

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRender(t *testing.T) {
	tests := map[string]struct {
		template, want string
		resolvers      []string
	}{
		"the variable":      {template: "resolver ${V} valid=30s;", resolvers: []string{"10.96.0.10"}, want: "resolver 10.96.0.10 valid=30s;"},
		"several resolvers": {template: "resolver ${V};", resolvers: []string{"10.0.0.1", "[fd00::1]"}, want: "resolver 10.0.0.1 [fd00::1];"},
		"every occurrence":  {template: "${V} ${V}", resolvers: []string{"1.1.1.1"}, want: "1.1.1.1 1.1.1.1"},
		"nginx variables stay": {template: "set $backend x; proxy_pass http://$backend; ${HOME} $V", resolvers: []string{"1.1.1.1"},
			want: "set $backend x; proxy_pass http://$backend; ${HOME} $V"},
		"no resolver": {template: "resolver ${V} valid=30s;", want: "resolver  valid=30s;"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, string(Render([]byte(tc.template), "V", tc.resolvers)))
		})
	}
}

// TestNameservers reads resolv.conf as the nginx images'
// 15-local-resolvers.envsh does.
func TestNameservers(t *testing.T) {
	tests := map[string]struct {
		conf string
		want []string
	}{
		"a pod's": {conf: "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n",
			want: []string{"10.96.0.10"}},
		"IPv6 in brackets": {conf: "nameserver fd00::a\nnameserver 10.0.0.1\n", want: []string{"[fd00::a]", "10.0.0.1"}},
		"spacing":          {conf: "  nameserver\t10.0.0.2  \n#nameserver 10.0.0.3\n", want: []string{"10.0.0.2"}},
		"none":             {conf: "search x\n"},
		"a bare keyword":   {conf: "nameserver\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, Nameservers([]byte(tc.conf)))
		})
	}
}

func TestProbeConfigHash(t *testing.T) {
	h := Hash([]byte("x"))
	assert.Equal(t, h, probeConfigHash(probeConfig("/run/s.sock", h)))
	assert.Empty(t, probeConfigHash([]byte("server {}")))
	assert.Empty(t, probeConfigHash(nil))
}

func TestNginxMessage(t *testing.T) {
	tests := map[string]struct{ out, want string }{
		"the emerg line": {
			out:  "nginx: [emerg] no name servers defined in /etc/nginx/conf.d/gateway.conf:4\nnginx: configuration file /etc/nginx/nginx.conf test failed\n",
			want: "nginx: [emerg] no name servers defined in /etc/nginx/conf.d/gateway.conf:4",
		},
		"warnings left out": {out: "nginx: [warn] x\nnginx: [emerg] y\n", want: "nginx: [emerg] y"},
		"from the error log": {
			out:  "2026/11/26 07:59:10 [emerg] 11892#11892: no name servers defined in /etc/nginx/conf.d/gateway.conf:4\n",
			want: "nginx: [emerg] no name servers defined in /etc/nginx/conf.d/gateway.conf:4",
		},
		"no level": {out: "exec: nginx: not found\n", want: "exec: nginx: not found"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, nginxMessage([]byte(tc.out)))
		})
	}
}

func TestBound(t *testing.T) {
	tests := map[string]struct {
		in    string
		limit int
		want  string
	}{
		"short":              {in: "ok", limit: 10, want: "ok"},
		"exactly the limit":  {in: "0123456789", limit: 10, want: "0123456789"},
		"cut":                {in: "0123456789x", limit: 10, want: "0123456..."},
		"control characters": {in: "a\nb\x1b[31mc", limit: 20, want: "a b [31mc"},
		"invalid UTF-8":      {in: "a\xffb", limit: 10, want: "a b"},
		"on a rune boundary": {in: strings.Repeat("é", 10), limit: 8, want: "éé..."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Bound(tc.in, tc.limit)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len(got), tc.limit)
		})
	}
}
