package webhooks

import (
	"context"
	"errors"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// RouteIndex is the index on the APIGateway informer that holds one value
// per distinct route key (validation.RouteKey) of each gateway, in every namespace. The validating
// webhook looks each new route up in it, so finding the gateways that
// already serve a route costs the same with ten or ten thousand gateways.
const RouteIndex = "apigateway.example.com/route-key"

// GatewayFinder finds the APIGateways that serve a route.
type GatewayFinder interface {
	// Serving returns the APIGateways, of any namespace, with a route whose
	// validation.RouteKey is key. They are shared with the cache: read only.
	Serving(ctx context.Context, key string) ([]*v1.APIGateway, error)
}

// indexRouteKeys is the toolscache.IndexFunc of RouteIndex.
func indexRouteKeys(obj any) ([]string, error) {
	gw, ok := obj.(*v1.APIGateway)
	if !ok {
		return nil, nil
	}
	return validation.RouteKeys(gw), nil
}

// IndexGateways adds RouteIndex to the APIGateway informer of c (once: a
// second call reuses it) and returns a GatewayFinder that reads it. The
// informer must see every namespace, as the manager's cache does when it
// is not restricted to some (see controller.CacheOptions): a route is
// checked against gateways anywhere in the cluster.
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
	if _, found := shared.GetIndexer().GetIndexers()[RouteIndex]; !found {
		if err := informer.AddIndexers(toolscache.Indexers{RouteIndex: indexRouteKeys}); err != nil {
			return nil, fmt.Errorf("indexing APIGateways by route: %w", err)
		}
	}
	return indexFinder{shared.GetIndexer()}, nil
}

// indexFinder is the GatewayFinder over an indexer holding RouteIndex.
type indexFinder struct{ indexer toolscache.Indexer }

// Serving implements GatewayFinder.
func (f indexFinder) Serving(_ context.Context, key string) ([]*v1.APIGateway, error) {
	objs, err := f.indexer.ByIndex(RouteIndex, key)
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
