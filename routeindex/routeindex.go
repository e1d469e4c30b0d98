// Package routeindex indexes the cluster's APIGateways by route key
// (validation.RouteKey: ingress class, pathType, host and normalised path),
// so that the gateways competing for a route are found with one map read,
// whatever the number of gateways. The validating webhook refuses a new
// route that another gateway already serves; the reconciler decides, after
// admission, which of the gateways holding a route serves it. Both read the
// same index on the manager's APIGateway informer.
package routeindex

import (
	"context"
	"errors"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// Name is the index on the APIGateway informer that holds one value per
// distinct route key (validation.RouteKey) of each gateway, in every
// namespace.
const Name = "apigateway.example.com/route-key"

// Finder finds the APIGateways that hold a route.
type Finder interface {
	// Serving returns the APIGateways, of any namespace, with a route whose
	// validation.RouteKey is key. They are shared with the cache: read only.
	Serving(ctx context.Context, key string) ([]*v1.APIGateway, error)
}

// IndexFunc is the toolscache.IndexFunc of Name: the object's distinct
// route keys, none for anything but an APIGateway, and none for one
// beyond the v1 schema's size limits (validation.WithinSizeLimits), which
// could make hundreds of thousands of keys in every replica; admission
// refuses such a gateway, and the reconciler serves none of its routes.
func IndexFunc(obj any) ([]string, error) {
	gw, ok := obj.(*v1.APIGateway)
	if !ok || !validation.WithinSizeLimits(&gw.Spec) {
		return nil, nil
	}
	return validation.RouteKeys(gw), nil
}

// Index adds Name to the APIGateway informer of c (once: a second call,
// from the webhooks' or the reconciler's setup, reuses it) and returns a
// Finder that reads it. The informer must see every namespace, as the
// manager's cache does when it is not restricted to some (see
// controller.CacheOptions): a route competes with gateways anywhere in the
// cluster.
//
// Why the informer's own index rather than a controller-runtime field index
// read through the client: a cached List with a field selector parses the
// selector, looks up two indexes and copies the result through reflection,
// which was the validating webhook's largest cost under load; this is one
// map read per key.
func Index(ctx context.Context, c cache.Cache) (Finder, error) {
	informer, err := c.GetInformer(ctx, &v1.APIGateway{})
	if err != nil {
		return nil, fmt.Errorf("getting the APIGateway informer: %w", err)
	}
	shared, ok := informer.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("the APIGateway informer (%T) does not expose its indexer", informer)
	}
	if _, found := shared.GetIndexer().GetIndexers()[Name]; !found {
		if err := informer.AddIndexers(toolscache.Indexers{Name: IndexFunc}); err != nil {
			return nil, fmt.Errorf("indexing APIGateways by route: %w", err)
		}
	}
	return NewFinder(shared.GetIndexer()), nil
}

// NewFinder is the Finder over indexer, which must hold the index Name
// (Index's, or a test's toolscache.NewIndexer with IndexFunc).
func NewFinder(indexer toolscache.Indexer) Finder { return indexFinder{indexer} }

// indexFinder is the Finder over an indexer holding Name.
type indexFinder struct{ indexer toolscache.Indexer }

// Serving implements Finder.
func (f indexFinder) Serving(_ context.Context, key string) ([]*v1.APIGateway, error) {
	objs, err := f.indexer.ByIndex(Name, key)
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
