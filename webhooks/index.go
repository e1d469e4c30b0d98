package webhooks

import (
	"context"
	"errors"
	"fmt"
	"slices"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	v1 "example.com/apigateway-operator/api/v1"
)

// HostPathIndex is the index on the APIGateway informer that holds one
// value per distinct route host and path of each gateway,
// "namespace/host path" (a space cannot occur in a host or path). The
// validating webhook looks each new route up in it, so finding the gateways
// that already serve a host+path costs the same with ten or ten thousand
// gateways in the namespace.
const HostPathIndex = "apigateway.example.com/host-path"

// GatewayFinder finds the APIGateways that serve a host and path.
type GatewayFinder interface {
	// Serving returns the APIGateways of namespace with a route on key, a
	// value of HostPathKeys. They are shared with the cache: read only.
	Serving(ctx context.Context, namespace, key string) ([]*v1.APIGateway, error)
}

// HostPathKeys returns gw's distinct host+path keys.
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

// indexHostPaths is the toolscache.IndexFunc of HostPathIndex.
func indexHostPaths(obj any) ([]string, error) {
	gw, ok := obj.(*v1.APIGateway)
	if !ok {
		return nil, nil
	}
	keys := HostPathKeys(gw)
	for i, k := range keys {
		keys[i] = indexValue(gw.Namespace, k)
	}
	return keys, nil
}

// indexValue is the HostPathIndex value of key in namespace.
func indexValue(namespace, key string) string { return namespace + "/" + key }

// IndexGateways adds HostPathIndex to the APIGateway informer of c (once:
// a second call reuses it) and returns a GatewayFinder that reads it.
//
// Why the informer's own index rather than a controller-runtime field index
// read through the client: a cached List with a field selector parses the
// selector, looks up two indexes and copies the result through reflection,
// which was the validating webhook's largest cost under load; this is one
// map read per key.
func IndexGateways(ctx context.Context, c cache.Cache) (GatewayFinder, error) {
	informer, err := c.GetInformer(ctx, &v1.APIGateway{})
	if err != nil {
		return nil, fmt.Errorf("getting the APIGateway informer: %w", err)
	}
	shared, ok := informer.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("the APIGateway informer (%T) does not expose its indexer", informer)
	}
	if _, found := shared.GetIndexer().GetIndexers()[HostPathIndex]; !found {
		if err := informer.AddIndexers(toolscache.Indexers{HostPathIndex: indexHostPaths}); err != nil {
			return nil, fmt.Errorf("indexing APIGateways by host and path: %w", err)
		}
	}
	return indexFinder{shared.GetIndexer()}, nil
}

// indexFinder is the GatewayFinder over an indexer holding HostPathIndex.
type indexFinder struct{ indexer toolscache.Indexer }

// Serving implements GatewayFinder.
func (f indexFinder) Serving(_ context.Context, namespace, key string) ([]*v1.APIGateway, error) {
	objs, err := f.indexer.ByIndex(HostPathIndex, indexValue(namespace, key))
	if err != nil {
		return nil, err
	}
	gws := make([]*v1.APIGateway, 0, len(objs))
	for _, o := range objs {
		gw, ok := o.(*v1.APIGateway)
		if !ok {
			return nil, errors.New("the APIGateway index holds another kind of object")
		}
		gws = append(gws, gw)
	}
	return gws, nil
}
