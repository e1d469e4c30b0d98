package controller

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/push"
)

// TestAStaleConfigMapIsNotOverwritten plays a cache that has not yet seen
// the ConfigMap the last pass wrote, with pushes on: the serial the cached
// copy carries is one the operator has handed out since, and the pods may
// have loaded a later one. The stale pass must not write the ConfigMap
// (its apply carries the cached resourceVersion as a precondition, and
// conflicts) and so must not push; it asks to be run again instead of
// failing. The next pass, from a cache that caught up, writes the change
// with a serial above every one before. The writes go to the real API
// server; the interceptor only serves the stale read.
func TestAStaleConfigMapIsNotOverwritten(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "stalecm")
	real, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	require.NoError(t, err)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: DefaultPushKeySecret}}
	require.NoError(t, real.Create(ctx, secret))
	keys := &pushKeys{secret: client.ObjectKeyFromObject(secret), live: real, write: real}

	gw := gateway("shop", route("shop.stalecm.example.com", "/v0", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw = createGateway(t, gw)
	cmKey := client.ObjectKey{Namespace: ns, Name: configMapName(gw)}

	reconcileWith := func(c client.WithWatch) ctrl.Result {
		t.Helper()
		res, _ := reconcileThrough(t, gw, c, real, keys)
		return res
	}
	configMap := func() (*corev1.ConfigMap, uint64) {
		t.Helper()
		cm := &corev1.ConfigMap{}
		require.NoError(t, real.Get(ctx, cmKey, cm))
		id, err := push.ParseIdentity([]byte(cm.Data[push.IdentityKey]))
		require.NoError(t, err, "the ConfigMap holds no push identity")
		return cm, id.Serial
	}
	routeTo := func(path string) {
		t.Helper()
		cur := &v1.APIGateway{}
		require.NoError(t, real.Get(ctx, client.ObjectKeyFromObject(gw), cur))
		cur.Spec.Routes[0].Path = v1.HTTPPath(path)
		require.NoError(t, real.Update(ctx, cur))
	}

	reconcileWith(real)
	stale, first := configMap()
	routeTo("/v1")
	reconcileWith(real)
	written, second := configMap()
	require.Contains(t, written.Data[configKey], "/v1")
	require.Greater(t, second, first)

	// The cache still has the first ConfigMap.
	behind := interceptor.NewClient(real, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if cm, ok := obj.(*corev1.ConfigMap); ok && key == cmKey {
				stale.DeepCopyInto(cm)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	routeTo("/v2")
	res := reconcileWith(behind)
	assert.Equal(t, staleRetry, res.RequeueAfter, "the stale pass asks to run again")
	after, serial := configMap()
	assert.Equal(t, written.ResourceVersion, after.ResourceVersion, "the stale pass wrote the ConfigMap")
	assert.Equal(t, second, serial)
	assert.NotContains(t, after.Data[configKey], "/v2")

	// Caught up: the change is written, above every serial before.
	reconcileWith(real)
	caught, third := configMap()
	assert.Contains(t, caught.Data[configKey], "/v2")
	assert.Greater(t, third, second)
}

// reconcileThrough runs one pass of a reconciler over gw whose cached
// reads go through cached and whose live reads and writes reach the real
// API server, and returns its result and the events it recorded.
func reconcileThrough(t *testing.T, gw *v1.APIGateway, cached, real client.WithWatch, keys *pushKeys) (ctrl.Result, []string) {
	t.Helper()
	ctx := context.Background()
	cur := &v1.APIGateway{}
	require.NoError(t, real.Get(ctx, client.ObjectKeyFromObject(gw), cur))
	recorder := events.NewFakeRecorder(100)
	r := &Reconciler{clients: clients{cached: cached, live: real}, recorder: recorder,
		opts: Options{DefaultImage: testImage, ReloaderImage: testReloaderImage}, gateways: heldBy(cur),
		prober: newProber(newPodStatusClient(nil), 0), httpRoutes: routesThrough(nil),
		keys: keys, pusher: newPusher(newPodStatusClient(nil), logr.Discard(), func(client.ObjectKey) {})}
	res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gw)})
	require.NoError(t, err)
	close(recorder.Events)
	var recorded []string
	for e := range recorder.Events {
		recorded = append(recorded, e)
	}
	return res, recorded
}

// TestACacheBehindTheCreateWritesNothing plays the pass that follows the
// one that created a gateway's children, reading a Service from a cache
// that saw the create's upgrade of the managed fields but not the apply
// after it (whose Apply entry still holds the server's defaults). The
// child is already what the operator wants: the pass writes nothing and
// records no Updated event (the CI flake of TestHTTPRouteGatewayGetsHTTPRoutes).
func TestACacheBehindTheCreateWritesNothing(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "behindcreate")
	real, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	require.NoError(t, err)
	gw := gateway("shop", route("shop.behindcreate.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw = createGateway(t, gw)
	svcKey := client.ObjectKey{Namespace: ns, Name: gw.Name}

	// The create's pass, keeping the Service as its upgrade left it.
	var upgraded *corev1.Service
	watching := interceptor.NewClient(real, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			err := c.Patch(ctx, obj, patch, opts...)
			if svc, ok := obj.(*corev1.Service); ok && err == nil && client.ObjectKeyFromObject(svc) == svcKey && upgraded == nil {
				upgraded = svc.DeepCopy()
			}
			return err
		},
	})
	_, recorded := reconcileThrough(t, gw, watching, real, nil)
	require.NotNil(t, upgraded, "the create's pass did not upgrade the Service's managed fields")
	require.Len(t, recorded, 1)
	assert.Contains(t, recorded[0], "Created")
	written := &corev1.Service{}
	require.NoError(t, real.Get(ctx, svcKey, written))
	require.NotEqual(t, upgraded.ResourceVersion, written.ResourceVersion, "the create's apply wrote nothing after the upgrade")

	// The next pass reads that Service through the cache's transform.
	cachedSvc, err := serviceChild.transform(upgraded.DeepCopy())
	require.NoError(t, err)
	behind := interceptor.NewClient(real, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if svc, ok := obj.(*corev1.Service); ok && key == svcKey {
				cachedSvc.(*corev1.Service).DeepCopyInto(svc)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	_, recorded = reconcileThrough(t, gw, behind, real, nil)
	assert.Empty(t, recorded, "a pass over children that are as wanted recorded events")
	after := &corev1.Service{}
	require.NoError(t, real.Get(ctx, svcKey, after))
	assert.Equal(t, written.ResourceVersion, after.ResourceVersion, "the pass wrote the Service again")
}
