package webhooks

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "example.com/apigateway-operator/api/v1"
)

// stubGatewayAPI answers ServesHTTPRoutes with served, or err.
type stubGatewayAPI struct {
	served bool
	err    error
}

func (s stubGatewayAPI) ServesHTTPRoutes(context.Context) (bool, error) { return s.served, s.err }

func exposedByHTTPRoute(gw *v1.APIGateway) {
	gw.Spec.TLS = nil // TLS is the parent Gateway's with HTTPRoute exposure
	gw.Spec.Exposure = &v1.Exposure{Type: v1.ExposureHTTPRoute, HTTPRoute: &v1.HTTPRouteExposure{
		ParentRefs: []v1.ParentGatewayReference{{Name: "public"}},
	}}
}

func TestGatewayAPIWarnings(t *testing.T) {
	tests := map[string]struct {
		api       GatewayAPI
		httpRoute bool
		want      admission.Warnings
	}{
		"HTTPRoute exposure, no Gateway API":     {api: stubGatewayAPI{}, httpRoute: true, want: admission.Warnings{warnNoGatewayAPI}},
		"HTTPRoute exposure, Gateway API served": {api: stubGatewayAPI{served: true}, httpRoute: true},
		"Ingress exposure, no Gateway API":       {api: stubGatewayAPI{}},
		"cannot tell":                            {api: stubGatewayAPI{err: errors.New("cache not started")}, httpRoute: true},
		"no GatewayAPI given":                    {httpRoute: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := validGateway()
			if tc.httpRoute {
				exposedByHTTPRoute(gw)
			}
			assert.Equal(t, tc.want, gatewayAPIWarnings(t.Context(), tc.api, gw))
		})
	}
}

// TestValidatorWarnsWithoutGatewayAPI: the validating webhook admits a
// gateway that asks for HTTPRoutes on a cluster without them, with the
// warning, on create and on update.
func TestValidatorWarnsWithoutGatewayAPI(t *testing.T) {
	v := &Validator{Gateways: testFinder(t), GatewayAPI: stubGatewayAPI{}}
	gw := gatewayWith(exposedByHTTPRoute)
	warnings, err := v.ValidateCreate(t.Context(), gw)
	require.NoError(t, err)
	assert.Contains(t, warnings, warnNoGatewayAPI)
	warnings, err = v.ValidateUpdate(t.Context(), gw, gw)
	require.NoError(t, err)
	assert.Contains(t, warnings, warnNoGatewayAPI)
}
