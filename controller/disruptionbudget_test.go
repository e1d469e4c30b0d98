package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

func TestDesiredDisruptionBudget(t *testing.T) {
	tests := map[string]struct {
		replicas *int32
		off      bool
		want     bool
	}{
		"unset: the default, one replica": {replicas: nil},
		"no replicas":                     {replicas: ptr.To[int32](0)},
		"one replica":                     {replicas: ptr.To[int32](1)},
		"two replicas":                    {replicas: ptr.To[int32](2), want: true},
		"many replicas":                   {replicas: ptr.To[int32](100), want: true},
		"two replicas, turned off":        {replicas: ptr.To[int32](2), off: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gateway("shop", route("shop.example.com", "/", v1.PathTypePrefix, "web", 80))
			gw.Spec.Replicas = tc.replicas
			ac := desiredDisruptionBudget(gw, tc.off)
			if !tc.want {
				assert.Nil(t, ac)
				return
			}
			budget := typedChild(t, ac).(*policyv1.PodDisruptionBudget)
			assert.Equal(t, gw.Name, budget.Name, "named like the Deployment")
			assert.Equal(t, gw.Namespace, budget.Namespace)
			assert.Equal(t, childLabels(gw), budget.Labels)
			require.NotNil(t, budget.Spec.Selector)
			assert.Equal(t, selectorLabels(gw), budget.Spec.Selector.MatchLabels, "exactly the gateway's pods, as its Service selects them")
			assert.Empty(t, budget.Spec.Selector.MatchExpressions)
			assert.Equal(t, ptr.To(intstr.FromInt32(1)), budget.Spec.MaxUnavailable)
			assert.Nil(t, budget.Spec.MinAvailable, "maxUnavailable alone: it follows spec.replicas")
			assert.Equal(t, ptr.To(policyv1.AlwaysAllow), budget.Spec.UnhealthyPodEvictionPolicy, "pods that are not Ready never hold up a drain")
			require.Len(t, budget.OwnerReferences, 1)
			assert.Equal(t, gw.Name, budget.OwnerReferences[0].Name)
			assert.True(t, *budget.OwnerReferences[0].Controller)
		})
	}
}

// TestDesiredDisruptionBudgetSelectsThePods: the budget's selector is the
// Deployment's, so it selects the gateway's pods and no others.
func TestDesiredDisruptionBudgetSelectsThePods(t *testing.T) {
	gw := testGateways()["full"]
	d, err := Children(gw, ChildOptions{DefaultImage: testImage, ReloaderImage: testReloaderImage})
	require.NoError(t, err)
	require.NotNil(t, d.DisruptionBudget)
	assert.Equal(t, d.Deployment.Spec.Selector.MatchLabels, d.DisruptionBudget.Spec.Selector.MatchLabels)
}

// TestGatewayDisruptionBudget: through the real API server, a gateway of
// two replicas gets its budget, controlled by it; one deleted by hand is
// put back; scaled to one replica, the gateway's budget goes.
func TestGatewayDisruptionBudget(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "budget")
	gw := gateway("shop", route("shop.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw.Spec.Replicas = ptr.To[int32](2)
	gw = createGateway(t, gw)
	key := client.ObjectKeyFromObject(gw)

	budget := &policyv1.PodDisruptionBudget{}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, env.Client.Get(ctx, key, budget))
	}, waitFor, tick)
	current := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(ctx, key, current))
	assertControlledBy(t, budget, current)
	assert.Equal(t, ptr.To(intstr.FromInt32(1)), budget.Spec.MaxUnavailable)
	assert.Equal(t, selectorLabels(gw), budget.Spec.Selector.MatchLabels)

	require.NoError(t, env.Client.Delete(ctx, budget))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		back := &policyv1.PodDisruptionBudget{}
		require.NoError(c, env.Client.Get(ctx, key, back))
		assert.NotEqual(c, budget.UID, back.UID)
	}, waitFor, tick, "the budget deleted by hand was not put back")

	patchSpec(t, current, `{"spec":{"replicas":1}}`)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := env.Client.Get(ctx, key, &policyv1.PodDisruptionBudget{})
		assert.True(c, apierrors.IsNotFound(err), "the budget of a one-replica gateway is still there: %v", err)
	}, waitFor, tick)
}

// TestGatewayDisruptionBudgetOff: with the budgets turned off a gateway
// of two replicas gets none. The status is written after every child is
// applied, so once it describes the gateway the pass is done.
func TestGatewayDisruptionBudgetOff(t *testing.T) {
	startOperator(t, func(o *Options) { o.NoDisruptionBudget = true })
	ctx := context.Background()
	ns := newNamespace(t, "nobudget")
	gw := gateway("shop", route("shop.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw.Spec.Replicas = ptr.To[int32](2)
	gw = createGateway(t, gw)
	key := client.ObjectKeyFromObject(gw)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cur := &v1.APIGateway{}
		require.NoError(c, env.Client.Get(ctx, key, cur))
		assert.Equal(c, cur.Generation, cur.Status.ObservedGeneration)
	}, waitFor, tick)
	err := env.Client.Get(ctx, key, &policyv1.PodDisruptionBudget{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}
