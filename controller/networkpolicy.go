package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

// namespaceNameLabel is the label the API server sets on every namespace
// to its name, which a NetworkPolicy's namespaceSelector can match.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// desiredNetworkPolicy is the NetworkPolicy N selecting gw's pods, built
// only when the operator is told which namespace reads their status port
// (ChildOptions.StatusFrom; nil otherwise). A policy that selects a pod
// isolates it: only the union of what the policies selecting it allow
// gets in. So this one must allow the traffic port (from anywhere, as the
// Service does) or the gateway would stop serving, allows the status port
// only from statusFrom's pods, and the metrics port only from
// metricsFrom's (Prometheus's; closed when empty). The health port is left
// out: the kubelet's probes come from the node, which NetworkPolicies let
// through. Because it allows the traffic port from anywhere, it is opt-in:
// where an admin's own policy narrows who reaches the gateway pods, adding
// it would widen that (see docs/security.md).
func desiredNetworkPolicy(gw *v1.APIGateway, statusFrom, metricsFrom string) *networkingv1ac.NetworkPolicyApplyConfiguration {
	if statusFrom == "" {
		return nil
	}
	rules := []*networkingv1ac.NetworkPolicyIngressRuleApplyConfiguration{
		networkingv1ac.NetworkPolicyIngressRule().WithPorts(policyPort("http")),
		fromNamespace(reloaderName, statusFrom),
	}
	if metricsFrom != "" {
		rules = append(rules, fromNamespace(metricsName, metricsFrom))
	}
	return networkingv1ac.NetworkPolicy(gw.Name, gw.Namespace).
		WithLabels(childLabels(gw)).
		WithOwnerReferences(ownerReference(gw)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(gw))).
			WithPolicyTypes(networkingv1.PolicyTypeIngress).
			WithIngress(rules...))
}

// policyPort is the pods' TCP port named name.
func policyPort(name string) *networkingv1ac.NetworkPolicyPortApplyConfiguration {
	return networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromString(name))
}

// fromNamespace allows the port named port from the pods of namespace ns
// only.
func fromNamespace(port, ns string) *networkingv1ac.NetworkPolicyIngressRuleApplyConfiguration {
	return networkingv1ac.NetworkPolicyIngressRule().WithPorts(policyPort(port)).
		WithFrom(networkingv1ac.NetworkPolicyPeer().WithNamespaceSelector(
			metav1ac.LabelSelector().WithMatchLabels(map[string]string{namespaceNameLabel: ns})))
}

// applyNetworkPolicy applies want's NetworkPolicy, when the operator
// builds one. Turning the option off leaves the policies applied before
// in place (they go with their gateway): deleting them would reopen the
// status port on a flag change.
func (r *Reconciler) applyNetworkPolicy(ctx context.Context, gw *v1.APIGateway, want Desired, note func(string, client.Object, action, error)) {
	if want.NetworkPolicy == nil {
		return
	}
	key := client.ObjectKey{Namespace: gw.Namespace, Name: gw.Name}
	_, act, err := applyChild(ctx, r.clients, gw, networkPolicyChild, key, want.NetworkPolicy)
	note("NetworkPolicy", networkPolicyChild.stub(key), act, err)
}
