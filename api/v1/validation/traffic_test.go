package validation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

func TestValidateTraffic(t *testing.T) {
	const (
		invalid   = field.ErrorTypeInvalid
		duplicate = field.ErrorTypeDuplicate
		tooMany   = field.ErrorTypeTooMany
		tooLong   = field.ErrorTypeTooLong
	)
	backend := func(name string, port, weight int32) v1.WeightedBackend {
		return v1.WeightedBackend{Name: v1.ServiceName(name), Port: v1.PortNumber(port), Weight: weight}
	}
	header := func(name, value string) v1.HTTPHeader {
		return v1.HTTPHeader{Name: v1.HTTPHeaderName(name), Value: v1.HTTPHeaderValue(value)}
	}
	hostile := []string{`a"b`, `a\b`, "a$host", "a\nb", "a\rb", "a\x00b", "é", " lead", "trail ", "a\tb"}
	tests := map[string]struct {
		mutate func(*v1.Route)
		want   []wantErr
	}{
		"every setting": {mutate: func(r *v1.Route) {
			r.AdditionalBackends = []v1.WeightedBackend{backend("canary", 80, 20), backend("drained", 80, 0)}
			r.Timeouts = &v1.RouteTimeouts{ConnectSeconds: ptr.To[int32](75), ReadSeconds: ptr.To[int32](3600)}
			r.RewritePrefix = "/"
			r.RequestHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{header("X-Team", "a; b {c} 'd' #e")},
				Add: []v1.HTTPHeader{header("X-Tag", "")}, Remove: []v1.HTTPHeaderName{"Cookie"}}
			r.ResponseHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{header("Cache-Control", "no-store")}}
			r.MaxBodySize = "9999g"
			r.RateLimit = &v1.RateLimit{RequestsPerSecond: 10000, Burst: 10000}
		}},
		"weights adding up to 100": {mutate: func(r *v1.Route) {
			r.AdditionalBackends = []v1.WeightedBackend{backend("a", 80, 60), backend("b", 80, 40)}
		}},
		"weights over 100": {
			mutate: func(r *v1.Route) {
				r.AdditionalBackends = []v1.WeightedBackend{backend("a", 80, 60), backend("b", 80, 41)}
			},
			want: []wantErr{{"spec.routes[0].additionalBackends", invalid, "add up to more than 100", RuleAdditionalBackends}},
		},
		"a weight out of range": {
			mutate: func(r *v1.Route) {
				r.AdditionalBackends = []v1.WeightedBackend{backend("a", 80, -1), backend("b", 80, 101)}
			},
			want: []wantErr{
				{"spec.routes[0].additionalBackends[0].weight", invalid, "from 0 to 100", RuleAdditionalBackends},
				{"spec.routes[0].additionalBackends[1].weight", invalid, "from 0 to 100", RuleAdditionalBackends},
			},
		},
		"the primary again": {
			mutate: func(r *v1.Route) { r.AdditionalBackends = []v1.WeightedBackend{backend("user-service", 8080, 10)} },
			want:   []wantErr{{"spec.routes[0].additionalBackends", invalid, "additionalBackends[0] lists the same Service port as backendService", RuleAdditionalBackends}},
		},
		"a backend twice": {
			mutate: func(r *v1.Route) {
				r.AdditionalBackends = []v1.WeightedBackend{backend("a", 80, 10), backend("a", 80, 10)}
			},
			want: []wantErr{{"spec.routes[0].additionalBackends[1]", duplicate, "as additionalBackends[0]", RuleAdditionalBackends}},
		},
		"a bad backend": {
			mutate: func(r *v1.Route) { r.AdditionalBackends = []v1.WeightedBackend{backend("9a", 0, 10)} },
			want: []wantErr{
				{"spec.routes[0].additionalBackends[0].name", invalid, "DNS-1035", RuleAdditionalBackends},
				{"spec.routes[0].additionalBackends[0].port", invalid, "from 1 to 65535", RuleAdditionalBackends},
			},
		},
		"eight backends": {
			mutate: func(r *v1.Route) {
				for i := range 8 {
					r.AdditionalBackends = append(r.AdditionalBackends, backend("b", int32(80+i), 1))
				}
			},
			want: []wantErr{{"spec.routes[0].additionalBackends", tooMany, "", RuleAdditionalBackends}},
		},
		"timeouts out of range": {
			mutate: func(r *v1.Route) {
				r.Timeouts = &v1.RouteTimeouts{ConnectSeconds: ptr.To[int32](76), ReadSeconds: ptr.To[int32](0)}
			},
			want: []wantErr{
				{"spec.routes[0].timeouts.connectSeconds", invalid, "from 1 to 75", RuleTimeouts},
				{"spec.routes[0].timeouts.readSeconds", invalid, "from 1 to 3600", RuleTimeouts},
			},
		},
		"a rewrite on an Exact route": {
			mutate: func(r *v1.Route) { r.PathType, r.RewritePrefix = v1.PathTypeExact, "/v2" },
			want:   []wantErr{{"spec.routes[0].rewritePrefix", invalid, "an Exact route has none", RuleRewritePrefix}},
		},
		"a rewrite with an escape": {
			mutate: func(r *v1.Route) { r.RewritePrefix = "/caf%C3%A9" },
			want:   []wantErr{{"spec.routes[0].rewritePrefix", invalid, "percent-encoded", RuleRewritePrefix}},
		},
		"a rewrite with a dot segment": {
			mutate: func(r *v1.Route) { r.RewritePrefix = "/a/../b" },
			want:   []wantErr{{"spec.routes[0].rewritePrefix", invalid, "segments", RuleRewritePrefix}},
		},
		"a reserved header, in any case": {
			mutate: func(r *v1.Route) {
				r.RequestHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{header("HOST", "evil")}, Remove: []v1.HTTPHeaderName{"x-forwarded-for"}}
				r.ResponseHeaders = &v1.HeaderModifier{Add: []v1.HTTPHeader{header("Transfer-Encoding", "chunked")}}
			},
			want: []wantErr{
				{"spec.routes[0].requestHeaders.set[0].name", invalid, "sets itself", RuleHeaders},
				{"spec.routes[0].requestHeaders.remove[0]", invalid, "sets itself", RuleHeaders},
				{"spec.routes[0].responseHeaders.add[0].name", invalid, "hop-by-hop", RuleHeaders},
			},
		},
		"the forwarded headers are reserved": {
			mutate: func(r *v1.Route) {
				r.RequestHeaders = &v1.HeaderModifier{
					Set:    []v1.HTTPHeader{header("Forwarded", "for=1.2.3.4"), header("X-Forwarded-Proto", "https")},
					Add:    []v1.HTTPHeader{header("x-forwarded-host", "evil.example")},
					Remove: []v1.HTTPHeaderName{"X-FORWARDED-PORT"},
				}
			},
			want: []wantErr{
				{"spec.routes[0].requestHeaders.set[0].name", invalid, "sets itself", RuleHeaders},
				{"spec.routes[0].requestHeaders.set[1].name", invalid, "sets itself", RuleHeaders},
				{"spec.routes[0].requestHeaders.add[0].name", invalid, "sets itself", RuleHeaders},
				{"spec.routes[0].requestHeaders.remove[0]", invalid, "sets itself", RuleHeaders},
			},
		},
		"a header named twice across lists": {
			mutate: func(r *v1.Route) {
				r.RequestHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{header("X-A", "1")}, Remove: []v1.HTTPHeaderName{"x-a"}}
			},
			want: []wantErr{{"spec.routes[0].requestHeaders", duplicate, "set[0] and remove[0] name one header", RuleHeaders}},
		},
		"a header named thrice in one list": {
			mutate: func(r *v1.Route) {
				r.ResponseHeaders = &v1.HeaderModifier{Add: []v1.HTTPHeader{header("X-A", "1"), header("X-A", "2"), header("X-A", "3")}}
			},
			want: []wantErr{{"spec.routes[0].responseHeaders.add[1]", duplicate, "", RuleHeaders}},
		},
		"a backend thrice": {
			mutate: func(r *v1.Route) {
				r.AdditionalBackends = []v1.WeightedBackend{backend("a", 80, 10), backend("a", 80, 10), backend("a", 80, 10)}
			},
			want: []wantErr{{"spec.routes[0].additionalBackends[1]", duplicate, "as additionalBackends[0]", RuleAdditionalBackends}},
		},
		"a header name nginx would read": {
			mutate: func(r *v1.Route) { r.RequestHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{header("X-$host", "1")}} },
			want:   []wantErr{{"spec.routes[0].requestHeaders.set[0].name", invalid, "only letters, digits and '-'", RuleHeaders}},
		},
		"an 8 KiB value": {
			mutate: func(r *v1.Route) {
				r.ResponseHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{header("X-A", strings.Repeat("a", 8<<10))}}
			},
			want: []wantErr{{"spec.routes[0].responseHeaders.set[0].value", tooLong, "", RuleHeaders}},
		},
		"17 headers": {
			mutate: func(r *v1.Route) {
				r.RequestHeaders = &v1.HeaderModifier{Remove: make([]v1.HTTPHeaderName, 17)}
			},
			want: []wantErr{{"spec.routes[0].requestHeaders.remove", tooMany, "", RuleHeaders}},
		},
		"a body size nginx does not read": {
			mutate: func(r *v1.Route) { r.MaxBodySize = "10M;" },
			want:   []wantErr{{"spec.routes[0].maxBodySize", invalid, "nginx's notation", RuleMaxBodySize}},
		},
		"a rate limit out of range": {
			mutate: func(r *v1.Route) { r.RateLimit = &v1.RateLimit{RequestsPerSecond: 0, Burst: -1} },
			want: []wantErr{
				{"spec.routes[0].rateLimit.requestsPerSecond", invalid, "from 1 to 10000", RuleRateLimit},
				{"spec.routes[0].rateLimit.burst", invalid, "from 0 to 10000", RuleRateLimit},
			},
		},
	}
	for i, v := range hostile {
		tests["hostile value "+string(rune('a'+i))] = struct {
			mutate func(*v1.Route)
			want   []wantErr
		}{
			mutate: func(r *v1.Route) { r.RequestHeaders = &v1.HeaderModifier{Add: []v1.HTTPHeader{header("X-A", v)}} },
			want:   []wantErr{{"spec.routes[0].requestHeaders.add[0].value", invalid, "printable ASCII", RuleHeaders}},
		}
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gatewayWith(func(gw *v1.APIGateway) { tc.mutate(&gw.Spec.Routes[0]) })
			checkErrors(t, tc.want, Validate(nil, gw))
		})
	}
}
