package controller

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// ServesHTTPRoutes asks the API server whether it serves
// gateway.networking.k8s.io/v1 HTTPRoutes, for Options.GatewayAPI and
// CacheOptions. The operator asks once, as it starts: on a cluster that
// gains Gateway API later it needs a restart, and a gateway that wants
// HTTPRoutes meanwhile says so in its status (GatewayAPIMissing).
func ServesHTTPRoutes(cfg *rest.Config) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	resources, err := dc.ServerResourcesForGroupVersion(gatewayv1.GroupVersion.String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("asking the API server for %s: %w", gatewayv1.GroupVersion, err)
	}
	for _, r := range resources.APIResources {
		if r.Name == "httproutes" {
			return true, nil
		}
	}
	return false, nil
}
