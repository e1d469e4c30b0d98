package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestAStaleReadKeepsTheClaim plays what the cache does under load: a
// gateway's reconcile starts (a child's event queued it) before the cache
// has the status the last pass wrote, so the gateway looks unclaimed. Two
// gateways of one namespace, made at once, claim the same route, each
// unaware of the other; the first claimed earlier. The stale pass of the
// first must neither stamp it again, later than the second's claim, nor
// act on that: the first keeps its claim, its Ingress and Accepted=True,
// and the second loses the route. Before the claims were written first, and
// only over the status they were read with, the stale pass handed the
// route to the second for good (TestFlakyAPIServer failed on it beside a
// CPU hog). The writes go to the real API server; the interceptor only
// serves the stale read.
func TestAStaleReadKeepsTheClaim(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "stale")
	first := createGateway(t, competitor(ns, "first", route("stale.example.com", "/api/", v1.PathTypePrefix, "api-a", 80)))
	stale := first.DeepCopy() // as created: no status, the create's resourceVersion
	real, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	require.NoError(t, err)

	reconcileWith := func(c client.WithWatch, gw *v1.APIGateway, index ...*v1.APIGateway) {
		t.Helper()
		r := &Reconciler{clients: clients{cached: c, live: real}, recorder: events.NewFakeRecorder(100),
			opts: Options{DefaultImage: testImage, ReloaderImage: testReloaderImage}, gateways: heldBy(index...),
			prober: newProber(newPodStatusClient(nil), 0), httpRoutes: routesThrough(nil)}
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gw)})
		require.NoError(t, err)
	}
	current := func(gw *v1.APIGateway) *v1.APIGateway {
		t.Helper()
		cur := &v1.APIGateway{}
		require.NoError(t, real.Get(ctx, client.ObjectKeyFromObject(gw), cur))
		return cur
	}
	accepted := func(gw *v1.APIGateway) string {
		cond := meta.FindStatusCondition(current(gw).Status.Conditions, v1.ConditionAccepted)
		require.NotNil(t, cond, "%s has no Accepted condition", gw.Name)
		return string(cond.Status) + " " + cond.Reason
	}

	reconcileWith(real, first, first)
	claimed := current(first).Status.Claims
	require.NotNil(t, claimed)
	require.Equal(t, "True Accepted", accepted(first))

	// The second's pass, run beside the first's, did not see the first's
	// claim either: both claim the route, the first earlier.
	second := createGateway(t, competitor(ns, "second", route("stale.example.com", "/api/", v1.PathTypePrefix, "api-b", 80)))
	reconcileWith(real, second, stale, second)
	require.Equal(t, "True Accepted", accepted(second))

	// The cache has the second's claim but not yet the first's.
	behind := interceptor.NewClient(real, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if gw, ok := obj.(*v1.APIGateway); ok && key == client.ObjectKeyFromObject(first) {
				stale.DeepCopyInto(gw)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	reconcileWith(behind, first, stale, current(second))

	assert.Equal(t, claimed, current(first).Status.Claims, "the stale pass stamped the first's claims again")
	assert.Equal(t, "True Accepted", accepted(first))
	assert.NoError(t, real.Get(ctx, client.ObjectKeyFromObject(first), &networkingv1.Ingress{}), "the first's Ingress")

	// Once the caches catch up, the first claim holds the route.
	reconcileWith(real, second, current(first), current(second))
	reconcileWith(real, first, current(first), current(second))
	assert.Equal(t, "True Accepted", accepted(first))
	assert.Equal(t, "False "+v1.ReasonRouteConflict, accepted(second))
}
