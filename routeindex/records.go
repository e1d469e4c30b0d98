package routeindex

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/ownership"
)

// WatchRecords starts the cache's informers of HostClaims and
// DomainBindings with the cache, so Records reads synced lists from the
// first request: the reconciler and the validating webhook decide from the
// same records.
func WatchRecords(ctx context.Context, c cache.Cache) error {
	for _, obj := range []client.Object{&v1.HostClaim{}, &v1.DomainBinding{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	return nil
}

// Records are the HostClaims and DomainBindings as reader (the manager's
// cache, after WatchRecords) has them. The lists share the cache's
// objects: read only.
func Records(ctx context.Context, reader client.Reader) (ownership.Records, error) {
	var claims v1.HostClaimList
	if err := reader.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		return ownership.Records{}, fmt.Errorf("listing HostClaims: %w", err)
	}
	var bindings v1.DomainBindingList
	if err := reader.List(ctx, &bindings, client.UnsafeDisableDeepCopy); err != nil {
		return ownership.Records{}, fmt.Errorf("listing DomainBindings: %w", err)
	}
	return ownership.Records{Claims: claims.Items, Bindings: bindings.Items}, nil
}
