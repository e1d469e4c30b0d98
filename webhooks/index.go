package webhooks

import (
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

// HostPathIndex is the cache field index on APIGateway that holds one value
// per distinct route host and path, "host path" (a space cannot occur in
// either). The validating webhook looks a new route up in it, so finding the
// gateways that already serve a host+path costs the same with ten or ten
// thousand gateways in the namespace. SetupWithManager registers it; other
// packages may query it but must not register it again.
const HostPathIndex = "spec.routes.hostPath"

// HostPathKeys returns gw's values in HostPathIndex.
func HostPathKeys(gw *v1.APIGateway) []string {
	keys := make([]string, 0, len(gw.Spec.Routes))
	for _, r := range gw.Spec.Routes {
		if k := hostPathKey(r); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

func hostPathKey(r v1.Route) string { return r.Host + " " + r.Path }

// indexHostPaths is the client.IndexerFunc of HostPathIndex.
func indexHostPaths(obj client.Object) []string {
	gw, ok := obj.(*v1.APIGateway)
	if !ok {
		return nil
	}
	return HostPathKeys(gw)
}
