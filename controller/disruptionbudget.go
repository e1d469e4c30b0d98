package controller

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/render"
)

// minDisruptionBudgetReplicas is the fewest replicas a gateway has a
// PodDisruptionBudget with: with one pod, a budget of one unavailable
// pod would never refuse an eviction, and a budget of none would block
// every node drain.
const minDisruptionBudgetReplicas = 2

// desiredDisruptionBudget is the PodDisruptionBudget N of a gateway of
// two replicas or more, selecting exactly its pods (as its Service does)
// and letting one at a time go: a node drain or an autoscaler's eviction
// waits until the pod evicted before has a Ready replacement, so the
// gateway always serves from all but one pod. maxUnavailable, not
// minAvailable, so that it follows spec.replicas without being rebuilt.
// Pods that are not Ready may always be evicted (AlwaysAllow): they serve
// nothing, and a gateway whose pods all fail would otherwise hold up the
// drain of their nodes. Nil for fewer replicas, or when the operator is
// told to build none (off): the reconciler then deletes the gateway's.
func desiredDisruptionBudget(gw *v1.APIGateway, off bool) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	if off || render.Replicas(gw) < minDisruptionBudgetReplicas {
		return nil
	}
	return policyv1ac.PodDisruptionBudget(gw.Name, gw.Namespace).
		WithLabels(childLabels(gw)).
		WithOwnerReferences(ownerReference(gw)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(gw))).
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithUnhealthyPodEvictionPolicy(policyv1.AlwaysAllow))
}

// applyDisruptionBudget applies want's PodDisruptionBudget, or deletes
// the gateway's when it has none (fewer than two replicas, or the
// operator's --gateway-disruption-budget=false). Unlike the
// NetworkPolicy, a budget left behind is not harmless: the eviction API
// refuses to evict a pod that two budgets select, so a platform team that
// turns the operator's off for a budget of its own needs the operator's
// gone. The deletion reads the cache only: a budget of the gateway's
// without its labels (removed by hand) stays until the gateway goes,
// which saves the default, one-replica gateway a live read per pass.
func (r *Reconciler) applyDisruptionBudget(ctx context.Context, gw *v1.APIGateway, want Desired, note func(string, client.Object, action, error)) {
	key := client.ObjectKey{Namespace: gw.Namespace, Name: gw.Name}
	var (
		act action
		err error
	)
	if want.DisruptionBudget == nil {
		act, err = deleteCachedChild(ctx, r.clients, gw, disruptionBudgetChild, key)
	} else {
		_, act, err = applyChild(ctx, r.clients, gw, disruptionBudgetChild, key, want.DisruptionBudget)
	}
	note("PodDisruptionBudget", disruptionBudgetChild.stub(key), act, err)
}
