package webhooks

import (
	"context"

	"example.com/apigateway-operator/services"
)

// ServicePorter tells which backend Services exist and which port numbers
// they have, for the port warning.
type ServicePorter interface {
	// Ports maps each of names that is a Service in namespace to its port
	// numbers. Names it does not know are left out; nil means it knows none.
	Ports(ctx context.Context, namespace string, names []string) map[string][]int32
}

// The manager's Service cache, which the reconciler's pooled upstreams
// read too, is the webhooks' ServicePorter. Why a cache: the warning needs
// the ports of any Service a route may name, so a lookup per route
// against the API server would cost one round trip each (up to 100 per
// admission, inside a 5 s timeout), and the manager's main cache is
// restricted to the operator's own children.
var _ ServicePorter = &services.Cache{}
