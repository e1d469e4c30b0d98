package webhooks

import "example.com/apigateway-operator/api/v1/validation/validationtest"

// The fixtures and the error check shared with the other suite.
type wantErr validationtest.WantErr

var (
	validGateway = validationtest.ValidGateway
	route        = validationtest.Route
	gatewayWith  = validationtest.GatewayWith
	onHost       = validationtest.OnHost
	checkErrors  = validationtest.CheckErrors[wantErr]
)
