package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestGarbageCollectorDeletesTheChildren deletes a gateway with the real
// garbage collector running: the children go through their owner
// references, and so does what the real Deployment controller made of the
// Deployment.
func TestGarbageCollectorDeletesTheChildren(t *testing.T) {
	startOperator(t)
	startControllerManager(t)
	ctx := context.Background()
	ns := newNamespace(t, "gc")
	gw := gateway("collected", route("collected.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw = createGateway(t, gw)
	_, ch := settled(t, gw)

	var rs appsv1.ReplicaSet
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		list := &appsv1.ReplicaSetList{}
		require.NoError(c, env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(selectorLabels(gw))))
		require.Len(c, list.Items, 1, "the Deployment controller made no ReplicaSet")
		rs = list.Items[0]
		require.Equal(c, ch.dep.UID, metav1.GetControllerOf(&rs).UID)
	}, time.Minute, tick)

	require.NoError(t, env.Client.Delete(ctx, gw))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, obj := range []client.Object{&ch.cm, &ch.dep, &ch.svc, &ch.ing, &rs} {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			assert.True(c, apierrors.IsNotFound(err), "%T %s still exists (%v)", obj, obj.GetName(), err)
		}
	}, 2*time.Minute, 250*time.Millisecond)
}

// TestGarbageCollectorKeepsForeignObjects deletes, with the real garbage
// collector running, a gateway created in a namespace that already had a
// user's Service of its name: the gateway's own children go, the user's
// Service stays as it was.
func TestGarbageCollectorKeepsForeignObjects(t *testing.T) {
	startOperator(t, shortRetry)
	startControllerManager(t)
	ctx := context.Background()
	ns := newNamespace(t, "gc-foreign")
	before := createForeign(t, foreignService(ns, "kept", nil))
	gw := gateway("kept", route("kept.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw = createGateway(t, gw)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cur := &v1.APIGateway{}
		require.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), cur))
		require.Equal(c, cur.Generation, cur.Status.ObservedGeneration, "status not yet written")
	}, waitFor, tick)
	cm, dep := &corev1.ConfigMap{}, &appsv1.Deployment{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kept-config"}, cm))
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), dep))

	// Foreground: the gateway is gone only once the collector has deleted
	// everything that names it as owner, so what is left afterwards stays.
	require.NoError(t, env.Client.Delete(ctx, gw, client.PropagationPolicy(metav1.DeletePropagationForeground)))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, obj := range []client.Object{gw, cm, dep} {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			assert.True(c, apierrors.IsNotFound(err), "%T %s still exists (%v)", obj, obj.GetName(), err)
		}
	}, 2*time.Minute, 250*time.Millisecond)
	assertUntouched(t, before)
}

// startControllerManager runs the real garbage collector, and the
// Deployment and ReplicaSet controllers whose ReplicaSet it must collect
// too, against the shared control plane until the test ends (only these
// tests want them: the others play the Deployment controller themselves).
func startControllerManager(t *testing.T) {
	t.Helper()
	env.RunControllers(t, "garbagecollector", "deployment", "replicaset")
}
