package admit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
)

// Host and path end up in the generated nginx configuration, so their
// rules are the security boundary against configuration injection. Each
// hostile string must be rejected on its own field, and the message that
// quotes it must stay one printable, bounded line.
func TestHostileStringsAreRejected(t *testing.T) {
	huge := strings.Repeat("/a", 1<<20)
	tests := map[string]struct {
		host, path string
	}{
		"path closing the location block":  {path: "/a { return 200 'pwned'; } location /b"},
		"path ending the directive":        {path: "/a;proxy_pass http://evil"},
		"path with an nginx variable":      {path: "/$host"},
		"path with a comment":              {path: "/a#}"},
		"path with double quotes":          {path: `/a"b`},
		"path with single quotes":          {path: "/a'b"},
		"path with a backslash":            {path: `/a\b`},
		"path with a tab":                  {path: "/a\tb"},
		"path with CRLF":                   {path: "/a\r\nserver { }"},
		"path with LF":                     {path: "/a\ninclude /etc/passwd;"},
		"path with NUL":                    {path: "/a\x00b"},
		"path with DEL":                    {path: "/a\x7fb"},
		"path with a regex marker":         {path: "~ ^/admin"},
		"path with an exact marker":        {path: "= /admin"},
		"path with unicode":                {path: "/caf\u00e9"},
		"path with a right-to-left mark":   {path: "/a\u200fb"},
		"path with a full-width semicolon": {path: "/a\uff1b"},
		"path with invalid UTF-8":          {path: "/a\xff\xfe"},
		"path with backticks":              {path: "/`id`"},
		"path with angle brackets":         {path: "/<script>"},
		"path with encoded NUL":            {path: "/a%00"},
		"path with encoded newline":        {path: "/a%0a"},
		"path traversal":                   {path: "/static/../../etc/passwd"},
		"path of a megabyte":               {path: huge},
		"host closing the server block":    {host: "api.example.com; } server { listen 80"},
		"host with an nginx variable":      {host: "$host"},
		"host with a space":                {host: "api example.com"},
		"host with CRLF":                   {host: "api.example.com\r\nX: y"},
		"host with NUL":                    {host: "api.example.com\x00.evil"},
		"host in unicode":                  {host: "b\u00fccher.example"},
		"host with a homoglyph":            {host: "\u0430pi.example.com"},
		"host with a regex":                {host: "~^(?<x>.+)\\.example\\.com$"},
		"host of a megabyte":               {host: strings.Repeat("a.", 1<<19)},
		"host with a slash":                {host: "api.example.com/admin"},
		"host with an at sign":             {host: "user@api.example.com"},
		"host with invalid UTF-8":          {host: "api.\xff.com"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := validGateway()
			want := "spec.routes[0].path"
			if tc.host != "" {
				gw.Spec.Routes[0].Host = v1.Hostname(tc.host)
				gw.Spec.TLS = nil
				want = "spec.routes[0].host"
			} else {
				gw.Spec.Routes[0].Path = v1.HTTPPath(tc.path)
			}
			// The defaults must not turn a hostile string into an
			// accepted one.
			gw = defaulted(t, gw)
			errs, _ := Validate(nil, gw, RelatedObjects{})
			require.NotEmpty(t, errs)
			for _, e := range errs {
				assert.Equal(t, want, e.Field)
				msg := e.Error()
				assert.Less(t, len(msg), 2048, "the message must not repeat a huge value")
				assert.NotContains(t, msg, "\n")
				assert.NotContains(t, msg, "\r")
				assert.NotContains(t, msg, "\x00")
			}
		})
	}
}
