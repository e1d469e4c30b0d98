package webhooks

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestValidatorWarnsAboutUntrustedSourceRanges: the validating webhook
// passes the operator's trust in front proxies to admit.Validate, which
// warns about routes' sourceRanges without it.
func TestValidatorWarnsAboutUntrustedSourceRanges(t *testing.T) {
	gw := gatewayWith(func(gw *v1.APIGateway) {
		gw.Spec.Routes[0].SourceRanges = &v1.SourceRanges{Allow: []v1.CIDR{"203.0.113.0/24"}}
	})
	for _, trusts := range []bool{false, true} {
		warnings, err := (&Validator{Gateways: testFinder(t), TrustsProxies: trusts}).ValidateCreate(t.Context(), gw)
		require.NoError(t, err)
		found := false
		for _, w := range warnings {
			found = found || strings.HasPrefix(w, "spec.routes[0].sourceRanges: the operator trusts no front proxy")
		}
		assert.Equal(t, !trusts, found, "warnings: %q", warnings)
	}
}
