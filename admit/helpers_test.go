package admit

import (
	"testing"

	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/api/v1/validation/validationtest"
)

// The fixtures and the error check shared with the other suite.
type wantErr validationtest.WantErr

var (
	validGateway = validationtest.ValidGateway
	route        = validationtest.Route
	gatewayWith  = validationtest.GatewayWith
	checkErrors  = validationtest.CheckErrors[wantErr]
)

// defaulted is gw as the defaults table makes it with the operator's
// default flags.
func defaulted(t *testing.T, gw *v1.APIGateway) *v1.APIGateway {
	t.Helper()
	op := defaults.Operator{Image: defaults.DefaultImage, Replicas: defaults.DefaultReplicas}
	out, err := defaults.Defaulted(gw, op.Params(nil))
	require.NoError(t, err)
	return out
}
