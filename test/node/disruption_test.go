package node

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/apigateway-operator/test/testenv"
)

// A gateway of two replicas gets a PodDisruptionBudget that lets one pod
// go at a time, as a node drain asks (the Eviction API): with both pods
// Ready the first eviction is allowed; while the evicted pod's
// replacement is not Ready yet, evicting the other pod is refused (429),
// so the gateway keeps a pod serving; once the replacement is Ready the
// budget allows one eviction again.
func TestGatewayDisruptionBudget(t *testing.T) {
	ctx := t.Context()
	startServiceDNS(t)
	ns := testenv.NewNamespace(t, env.Client, "budget")
	backend := startBackend(t, ns)
	startOperator(t)
	gw := newGateway(ns, "steady", backend, 2)
	require.NoError(t, env.Client.Create(ctx, gw))
	awaitLive(t, gw)
	awaitDisruptionsAllowed(t, client.ObjectKeyFromObject(gw), 1)
	pods := gatewayPods(t, gw)
	require.Len(t, pods, 2)
	first, second := pods[0], pods[1]

	require.NoError(t, evict(t, &first), "the first eviction, with both pods Ready")
	evicted := time.Now()
	var replacement *corev1.Pod
	for _, p := range gatewayPods(t, gw) {
		if p.UID != first.UID && p.UID != second.UID {
			replacement = &p
		}
	}
	if replacement != nil {
		require.False(t, podReady(replacement), "the replacement was Ready at once: nothing to refuse")
	}
	err := evict(t, &second)
	require.Error(t, err, "the second eviction, before the replacement is Ready, was allowed")
	require.True(t, apierrors.IsTooManyRequests(err), "refused otherwise than with 429: %v", err)
	assert.Contains(t, err.Error(), "disruption budget")
	t.Logf("the second eviction, %s after the first: %v", time.Since(evicted).Round(time.Millisecond), err)
	var cur corev1.Pod
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(&second), &cur))
	assert.Nil(t, cur.DeletionTimestamp, "the refused eviction deleted the pod")

	awaitDisruptionsAllowed(t, client.ObjectKeyFromObject(gw), 1)
	t.Logf("the budget allowed an eviction again %s after the first", time.Since(evicted).Round(time.Millisecond))
	now := gatewayPods(t, gw)
	assert.Len(t, now, 2)
	assert.False(t, slices.ContainsFunc(now, func(p corev1.Pod) bool { return p.UID == first.UID || !podReady(&p) }),
		"the budget allows one again only with two Ready pods, the evicted one not among them")
}

// evict asks the Eviction API to evict pod, as kubectl drain does.
func evict(t testing.TB, pod *corev1.Pod) error {
	t.Helper()
	return env.Client.SubResource("eviction").Create(t.Context(), pod, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
	})
}

// awaitDisruptionsAllowed waits until the budget named key, as the
// disruption controller last computed it for its current spec, allows
// want evictions.
func awaitDisruptionsAllowed(t testing.TB, key client.ObjectKey, want int32) {
	t.Helper()
	var budget policyv1.PodDisruptionBudget
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, env.Client.Get(t.Context(), key, &budget))
		assert.Equal(c, budget.Generation, budget.Status.ObservedGeneration)
		assert.Equal(c, want, budget.Status.DisruptionsAllowed)
	}, waitFor, tick, "PodDisruptionBudget %s never allowed %d evictions", key, want)
}
