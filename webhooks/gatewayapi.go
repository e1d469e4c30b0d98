package webhooks

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// GatewayAPI tells whether the cluster serves Gateway API's HTTPRoutes
// (controller.GatewayAPI does, from the manager's cache).
type GatewayAPI interface {
	ServesHTTPRoutes(ctx context.Context) (bool, error)
}

// warnNoGatewayAPI is the warning for a gateway that asks for HTTPRoutes
// on a cluster without them: admitted, since Gateway API may be installed
// next (the operator picks it up), but not served until then.
const warnNoGatewayAPI = "spec.exposure.type is HTTPRoute, but the cluster does not serve gateway.networking.k8s.io/v1 " +
	"HTTPRoutes: the gateway gets neither HTTPRoutes nor an Ingress, and reports GatewayAPIMissing, " +
	"until Gateway API's CRDs are installed"

// gatewayAPIWarnings warns when gw asks for HTTPRoutes and api says the
// cluster serves none. Without api, or when it cannot tell, there is no
// warning: the gateway's status says GatewayAPIMissing anyway.
func gatewayAPIWarnings(ctx context.Context, api GatewayAPI, gw *v1.APIGateway) admission.Warnings {
	if api == nil || !validation.ExposedByHTTPRoute(&gw.Spec) {
		return nil
	}
	if served, err := api.ServesHTTPRoutes(ctx); err != nil || served {
		return nil
	}
	return admission.Warnings{warnNoGatewayAPI}
}
