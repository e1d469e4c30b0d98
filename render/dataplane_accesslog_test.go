package render

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/ports"
)

// accessLogGateway has a route answered by a backend, one whose backend
// is down (a reserved port nothing listens on: connection refused, 502),
// and one whose name holds decoded UTF-8 and the path whitelist's marks.
func accessLogGateway(up, down int32) *v1.APIGateway {
	return gateway("logged",
		route("api.example.com", "/users", v1.PathTypePrefix, "users", up),
		route("api.example.com", "/orders", v1.PathTypeExact, "orders", down),
		route("api.example.com", "/caf%C3%A9/a!&(x)*+,=:@~", v1.PathTypePrefix, "users", up))
}

// TestDataPlaneAccessLog sends requests through real nginx to a gateway
// that asks for the access log and reads the lines nginx wrote to its
// standard output: one per request, each a JSON object of strings with
// the route's name as validation.RouteMatch writes it, the status and the
// backend; the query string, the Authorization and Cookie headers and the
// body never appear. nginx is stopped before its output is read, so every
// line it will write is there, and no wait is needed.
func TestDataPlaneAccessLog(t *testing.T) {
	bin := nginxBinary(t)
	up := startEchoBackends(t, "users")["users"]
	down := int32(ports.For(t))
	resolver := startServiceDNS(t)
	gw := withAccessLog(accessLogGateway(up, down))
	nginx := startNginx(t, bin, func(opts Options) (string, error) { return Config(gw, opts) }, resolver)

	const secret = "secret"
	upAddr, downAddr := "127.0.0.1:"+strconv.Itoa(int(up)), "127.0.0.1:"+strconv.Itoa(int(down))
	type want struct {
		status                         int
		route, method, path, host      string
		upstreamAddr, upstreamStatus   string
		upstreamResponseTimeIsMeasured bool
	}
	requests := map[string]struct {
		line    string
		host    string
		headers []string
		want    want
	}{
		"answered": {
			line: "GET /users/1?token=" + secret + "&x=1 HTTP/1.1", host: "api.example.com",
			headers: []string{"Authorization: Bearer " + secret, "Cookie: session=" + secret, "Proxy-Authorization: Basic " + secret, "Referer: https://app.example.com/?token=" + secret},
			want: want{status: 200, route: "Prefix api.example.com/users", method: "GET", path: "/users/1", host: "api.example.com",
				upstreamAddr: upAddr, upstreamStatus: "200", upstreamResponseTimeIsMeasured: true},
		},
		"backend down": {
			line: "GET /orders?token=" + secret + " HTTP/1.1", host: "api.example.com",
			want: want{status: 502, route: "Exact api.example.com/orders", method: "GET", path: "/orders", host: "api.example.com",
				upstreamAddr: downAddr, upstreamStatus: "502", upstreamResponseTimeIsMeasured: true},
		},
		"a name in UTF-8": {
			line: "DELETE /caf%C3%A9/a!&(x)*+,=:@~/1 HTTP/1.1", host: "API.example.com",
			want: want{status: 200, route: "Prefix api.example.com/caf\u00e9/a!&(x)*+,=:@~", method: "DELETE", path: "/caf%C3%A9/a!&(x)*+,=:@~/1", host: "api.example.com",
				upstreamAddr: upAddr, upstreamStatus: "200", upstreamResponseTimeIsMeasured: true},
		},
		"no route": {
			line: "GET /nothing?token=" + secret + " HTTP/1.1", host: "api.example.com",
			want: want{status: 404, method: "GET", path: "/nothing", host: "api.example.com"},
		},
		"no host": {
			line: "GET /users HTTP/1.1", host: "unknown.test",
			want: want{status: 404, method: "GET", path: "/users", host: "unknown.test"},
		},
		"refused as ambiguous": {
			line: "GET /users/..%2Fadmin?token=" + secret + " HTTP/1.1", host: "api.example.com",
			want: want{status: 400, method: "GET", path: "/users/..%2Fadmin", host: "api.example.com"},
		},
	}
	for name, rq := range requests {
		status, body, err := rawRequest(nginx.httpAddr, rq.line, rq.host, append(rq.headers, "X-Request-ID: "+name)...)
		require.NoError(t, err, nginx.logs())
		require.Equal(t, rq.want.status, status, "%s: %s", name, body)
	}
	// A body, and a query string, in a POST.
	post, err := http.NewRequest(http.MethodPost, "http://"+nginx.httpAddr+"/users/form?password="+secret, strings.NewReader("password="+secret))
	require.NoError(t, err)
	post.Host = "api.example.com"
	post.Header.Set("X-Request-ID", "post")
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(post)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)

	nginx.Stop(t)
	output := nginx.Output()
	lines := strings.Split(strings.TrimSuffix(output, "\n"), "\n")
	require.Len(t, lines, len(requests)+1, "one line per request:\n%s", output)
	byID := map[string]map[string]string{}
	keys := make([]string, len(accessLogFields))
	for i, f := range accessLogFields {
		keys[i] = f.key
	}
	slices.Sort(keys)
	for _, l := range lines {
		var entry map[string]string // every value a string
		require.NoError(t, json.Unmarshal([]byte(l), &entry), "a line that is no JSON object of strings: %s", l)
		got := make([]string, 0, len(entry))
		for k := range entry {
			got = append(got, k)
		}
		slices.Sort(got)
		assert.Equal(t, keys, got, "the keys of %s", l)
		byID[entry["request_id"]] = entry
	}
	assert.NotContains(t, output, secret, "a query string, credential, Referer or body in the log")
	// A request no route answered leaves the route's name unset: a warning
	// per request in the images' error log (notice level) unless switched
	// off.
	assert.NotContains(t, nginx.logs(), "uninitialized", "nginx warns of the route's name")

	for name, rq := range requests {
		t.Run(name, func(t *testing.T) {
			e, ok := byID[name]
			require.True(t, ok, "no line with request_id %q:\n%s", name, output)
			assert.Equal(t, rq.want.route, e["route"])
			assert.Equal(t, strconv.Itoa(rq.want.status), e["status"])
			assert.Equal(t, rq.want.method, e["method"])
			assert.Equal(t, rq.want.path, e["path"])
			assert.Equal(t, rq.want.host, e["host"])
			assert.Equal(t, rq.want.upstreamAddr, e["upstream_addr"])
			assert.Equal(t, rq.want.upstreamStatus, e["upstream_status"])
			assert.Equal(t, "127.0.0.1", e["client"])
			assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$`, e["time"])
			assert.Regexp(t, `^\d+\.\d{3}$`, e["request_time"])
			assert.Regexp(t, `^[1-9]\d*$`, e["bytes_sent"])
			if rq.want.upstreamResponseTimeIsMeasured {
				assert.Regexp(t, `^\d+\.\d{3}$`, e["upstream_response_time"])
			} else {
				assert.Empty(t, e["upstream_response_time"])
			}
		})
	}
	t.Run("the POST's body is counted, not written", func(t *testing.T) {
		e := byID["post"]
		assert.Equal(t, "Prefix api.example.com/users", e["route"])
		assert.Equal(t, "/users/form", e["path"])
		assert.Equal(t, "POST", e["method"])
		n, err := strconv.Atoi(e["request_length"])
		require.NoError(t, err)
		assert.Greater(t, n, len("password="+secret))
	})
}

// TestDataPlaneAccessLogOff: a gateway without spec.accessLog writes no
// line, though the main configuration logs every request as the nginx
// images' does (dataplane.WritePrefix); without the rendered
// "access_log off" it would.
func TestDataPlaneAccessLogOff(t *testing.T) {
	bin := nginxBinary(t)
	up := startEchoBackends(t, "users")["users"]
	resolver := startServiceDNS(t)
	gw := accessLogGateway(up, int32(ports.For(t)))
	send := func(t *testing.T, nginx *nginxProcess) {
		t.Helper()
		for _, target := range []string{"/users/1?token=secret", "/orders", "/nothing"} {
			_, _, err := rawRequest(nginx.httpAddr, "GET "+target+" HTTP/1.1", "api.example.com")
			require.NoError(t, err, nginx.logs())
		}
		_, _, err := rawRequest(nginx.httpAddr, "GET / HTTP/1.1", "unknown.test")
		require.NoError(t, err)
		nginx.Stop(t)
	}
	t.Run("rendered", func(t *testing.T) {
		nginx := startNginx(t, bin, func(opts Options) (string, error) { return Config(gw, opts) }, resolver)
		send(t, nginx)
		assert.Empty(t, nginx.Output())
	})
	t.Run("without its access_log off, the image's log would write", func(t *testing.T) {
		nginx := startNginx(t, bin, func(opts Options) (string, error) {
			config, err := Config(gw, opts)
			return strings.Replace(config, "\naccess_log off;\n", "\n", 1), err
		}, resolver)
		send(t, nginx)
		assert.Equal(t, 4, strings.Count(nginx.Output(), "\n"), nginx.Output())
		assert.Contains(t, nginx.Output(), "token=secret", "the images' format writes the query string")
	})
}
