package routeindex

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"

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
// cache, after WatchRecords) has them, indexed by host
// (ownership.Records.Indexed: a lookup reads the few records that may
// overlap its host). The lists share the cache's objects: read only.
func Records(ctx context.Context, reader client.Reader) (ownership.Records, error) {
	var claims v1.HostClaimList
	if err := reader.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		return ownership.Records{}, fmt.Errorf("listing HostClaims: %w", err)
	}
	var bindings v1.DomainBindingList
	if err := reader.List(ctx, &bindings, client.UnsafeDisableDeepCopy); err != nil {
		return ownership.Records{}, fmt.Errorf("listing DomainBindings: %w", err)
	}
	return indexed(claims.Items, bindings.Items), nil
}

// lastIndexed holds the records Records last indexed, by their versions'
// fingerprint: records change rarely, and indexing them costs about what
// one scan of them does, so the index is built once per change, not per
// reconcile.
var lastIndexed struct {
	sync.Mutex
	sum     uint64
	records ownership.Records
}

// indexed are the records of claims and bindings, indexed (the last index
// when they are the same objects at the same versions).
func indexed(claims []v1.HostClaim, bindings []v1.DomainBinding) ownership.Records {
	sumClaims, okClaims := fingerprint(len(claims), func(i int) client.Object { return &claims[i] })
	sumBindings, okBindings := fingerprint(len(bindings), func(i int) client.Object { return &bindings[i] })
	if !okClaims || !okBindings {
		return ownership.Records{Claims: claims, Bindings: bindings}.Indexed()
	}
	sum := sumClaims ^ sumBindings<<1
	lastIndexed.Lock()
	defer lastIndexed.Unlock()
	r := lastIndexed.records
	if lastIndexed.sum != sum || len(r.Claims) != len(claims) || len(r.Bindings) != len(bindings) {
		r = ownership.Records{Claims: claims, Bindings: bindings}.Indexed()
		lastIndexed.sum, lastIndexed.records = sum, r
	}
	return r
}

// fingerprint sums a hash of each of n objects' UID and resource version:
// the same whatever the order a cache lists them in. It reports false for
// an object without a UID (a fake client's, in a unit test), which the API
// server never serves: only a UID and a resource version name one version
// of one object.
func fingerprint(n int, obj func(int) client.Object) (uint64, bool) {
	var sum uint64
	for i := range n {
		h := fnv.New64a()
		o := obj(i)
		if o.GetUID() == "" || o.GetResourceVersion() == "" {
			return 0, false
		}
		_, _ = h.Write([]byte(o.GetUID()))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(o.GetResourceVersion()))
		sum += h.Sum64()
	}
	return sum, true
}
