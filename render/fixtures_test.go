package render

import (
	"example.com/apigateway-operator/api/v1/validation/validationtest"
	"example.com/apigateway-operator/render/rendertest"
)

// The shared fixtures (package rendertest), under the names these tests use.
var (
	route               = rendertest.Route
	gateway             = rendertest.Gateway
	everySetting        = rendertest.EverySetting
	trafficGateway      = rendertest.Traffic
	routeSets           = rendertest.RouteSets
	benchGateway        = rendertest.Bench
	benchTrafficGateway = rendertest.BenchTraffic
	hostileStrings      = validationtest.HostileStrings
	maximalHost         = validationtest.MaximalHost
)
