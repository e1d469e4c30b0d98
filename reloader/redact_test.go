package reloader

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRedactQueries(t *testing.T) {
	for _, tc := range []struct{ name, line, want string }{
		{
			name: "request, upstream and referrer",
			line: `2026/11/28 14:00:00 [error] 7#7: *1 connect() failed (111: Connection refused) while connecting to upstream, client: 10.0.0.1, server: a.example.com, request: "GET /x?token=s3 HTTP/1.1", upstream: "http://10.1.0.1:80/x?token=s3", host: "a.example.com", referrer: "https://b.example.com/p?code=c4"`,
			want: `2026/11/28 14:00:00 [error] 7#7: *1 connect() failed (111: Connection refused) while connecting to upstream, client: 10.0.0.1, server: a.example.com, request: "GET /x?[redacted] HTTP/1.1", upstream: "http://10.1.0.1:80/x?[redacted]", host: "a.example.com", referrer: "https://b.example.com/p?[redacted]"`,
		},
		{
			name: "no query string",
			line: `[error] 7#7: *1 upstream timed out, client: 10.0.0.1, server: a, request: "GET /x HTTP/1.1", upstream: "http://10.1.0.1:80/x", host: "a"`,
			want: `[error] 7#7: *1 upstream timed out, client: 10.0.0.1, server: a, request: "GET /x HTTP/1.1", upstream: "http://10.1.0.1:80/x", host: "a"`,
		},
		{
			name: "an empty query",
			line: `[error] x, client: 10.0.0.1, request: "GET /x? HTTP/1.1"`,
			want: `[error] x, client: 10.0.0.1, request: "GET /x?[redacted] HTTP/1.1"`,
		},
		{
			name: "a line without a request keeps its question marks",
			line: `[emerg] 1#1: unknown directive "what?" in /etc/nginx/nginx.conf:3`,
			want: `[emerg] 1#1: unknown directive "what?" in /etc/nginx/nginx.conf:3`,
		},
		{
			name: "an HTTP/0.9 request line",
			line: `[info] x, client: 10.0.0.1, request: "GET /x?a=b"`,
			want: `[info] x, client: 10.0.0.1, request: "GET /x?[redacted]"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, redactQueries(tc.line))
		})
	}
}
