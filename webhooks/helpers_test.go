package webhooks

import "example.com/apigateway-operator/api/v1/validation/validationtest"

var (
	validGateway = validationtest.ValidGateway
	route        = validationtest.Route
	gatewayWith  = validationtest.GatewayWith
	onHost       = validationtest.OnHost
)
