package admit

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
)

// limitRoutes makes gw's routes n+1 copies of its first one, on their
// own paths, the first n with source ranges.
func limitRoutes(n int) func(*v1.APIGateway) {
	return func(gw *v1.APIGateway) {
		routes := gw.Spec.Routes
		gw.Spec.Routes = nil
		for i := range n + 1 {
			r := *routes[0].DeepCopy()
			r.Path = v1.HTTPPath(fmt.Sprintf("/limited-%d", i))
			if i < n {
				r.SourceRanges = &v1.SourceRanges{Allow: []v1.CIDR{"203.0.113.0/24"}}
			}
			gw.Spec.Routes = append(gw.Spec.Routes, r)
		}
	}
}

func TestSourceRangeWarnings(t *testing.T) {
	tests := map[string]struct {
		trusts  bool
		limited int
		want    []string
	}{
		"no trusted proxy, one route limited": {limited: 1,
			want: []string{"spec.routes[0].sourceRanges: " + warnSourceRangesUntrusted}},
		"no trusted proxy, three routes limited": {limited: 3,
			want: []string{"spec.routes[0].sourceRanges (and 2 more routes): " + warnSourceRangesUntrusted}},
		"trusted proxies":                    {trusts: true, limited: 2},
		"no trusted proxy, no route limited": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gatewayWith(limitRoutes(tc.limited))
			assert.Equal(t, tc.want, sourceRangeWarnings(tc.trusts, gw))
		})
	}
}

// TestValidateWarnsAboutUntrustedSourceRanges: Validate, which the
// webhook and the offline check both call, admits a route with source
// ranges when the operator trusts no front proxy, and says why the ranges
// will not see clients.
func TestValidateWarnsAboutUntrustedSourceRanges(t *testing.T) {
	gw := gatewayWith(limitRoutes(1))
	for _, trusts := range []bool{false, true} {
		errs, warnings := Validate(nil, gw, RelatedObjects{TrustsProxies: trusts})
		require.Empty(t, errs)
		if trusts {
			assert.Empty(t, warnings)
		} else {
			assert.Equal(t, []string{"spec.routes[0].sourceRanges: " + warnSourceRangesUntrusted}, warnings)
		}
	}
}
