package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

// statusPortRules are the ingress rules a gateway's NetworkPolicy must
// hold with the operator in namespace ns: the traffic port from anywhere
// (the policy isolates the pods, and the Service sends from anywhere),
// the status port from ns only, and nothing else.
func statusPortRules(ns string) []networkingv1.NetworkPolicyIngressRule {
	return []networkingv1.NetworkPolicyIngressRule{
		{Ports: namedPort("http")},
		{Ports: namedPort("reloader"), From: namespacePeer(ns)},
	}
}

func namedPort(name string) []networkingv1.NetworkPolicyPort {
	return []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromString(name))}}
}

func namespacePeer(ns string) []networkingv1.NetworkPolicyPeer {
	return []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}}
}

func TestDesiredNetworkPolicy(t *testing.T) {
	gw := gateway("shop", route("shop.example.com", "/", v1.PathTypePrefix, "web", 80))
	tests := map[string]struct {
		statusFrom, metricsFrom string
		want                    []networkingv1.NetworkPolicyIngressRule // nil: no policy
	}{
		"off by default":             {},
		"the operator's namespace":   {statusFrom: "apigateway-system", want: statusPortRules("apigateway-system")},
		"another operator namespace": {statusFrom: "ops", want: statusPortRules("ops")},
		"metrics open to Prometheus's namespace": {statusFrom: "ops", metricsFrom: "monitoring",
			want: append(statusPortRules("ops"), networkingv1.NetworkPolicyIngressRule{Ports: namedPort("metrics"), From: namespacePeer("monitoring")})},
		"metrics alone build no policy": {metricsFrom: "monitoring"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ac := desiredNetworkPolicy(gw, tc.statusFrom, tc.metricsFrom)
			if tc.want == nil {
				assert.Nil(t, ac)
				return
			}
			policy := typedChild(t, ac).(*networkingv1.NetworkPolicy)
			assert.Equal(t, gw.Name, policy.Name)
			assert.Equal(t, gw.Namespace, policy.Namespace)
			assert.Equal(t, selectorLabels(gw), policy.Spec.PodSelector.MatchLabels, "selects the gateway's pods, as its Service does")
			assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, policy.Spec.PolicyTypes, "egress untouched")
			assert.Equal(t, tc.want, policy.Spec.Ingress)
			require.Len(t, policy.OwnerReferences, 1)
			assert.Equal(t, gw.Name, policy.OwnerReferences[0].Name)
		})
	}
}

// TestDesiredNetworkPolicyNamesTheDeploymentsPorts: the policy names the
// pods' ports, so it must name ports the pod template has, with the
// status port the one the operator reads (StatusPort).
func TestDesiredNetworkPolicyNamesTheDeploymentsPorts(t *testing.T) {
	gw := gateway("shop", route("shop.example.com", "/", v1.PathTypePrefix, "web", 80))
	d, err := Children(gw, ChildOptions{DefaultImage: testImage, ReloaderImage: testReloaderImage, StatusFrom: "ops"})
	require.NoError(t, err)
	ports := map[string]int32{}
	for _, c := range d.Deployment.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			ports[*p.Name] = *p.ContainerPort
		}
	}
	assert.Equal(t, int32(StatusPort), ports["reloader"])
	assert.Equal(t, int32(MetricsPort), ports["metrics"])
	assert.Contains(t, ports, "http")
}

// TestGatewayNetworkPolicyIsApplied: with StatusFrom set, the operator
// applies the policy through the real API server, controlled by the
// gateway, and puts it back when it is edited by hand.
func TestGatewayNetworkPolicyIsApplied(t *testing.T) {
	startOperator(t, func(o *Options) { o.StatusFrom = "apigateway-system" })
	ctx := context.Background()
	ns := newNamespace(t, "netpol")
	gw := gateway("shop", route("shop.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw = createGateway(t, gw)

	key := client.ObjectKey{Namespace: ns, Name: gw.Name}
	policy := &networkingv1.NetworkPolicy{}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, env.Client.Get(ctx, key, policy))
	}, waitFor, tick)
	current := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(ctx, key, current))
	assertControlledBy(t, policy, current)
	assert.Equal(t, statusPortRules("apigateway-system"), policy.Spec.Ingress)

	// A hand edit that opens the status port to everyone is undone. The
	// operator's next passes may still be writing the policy (its first
	// write creates it, the next applies it): the edit is retried on a
	// conflict, as kubectl edit would be.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, key, policy); err != nil {
			return err
		}
		policy.Spec.Ingress[1].From = nil
		return env.Client.Update(ctx, policy)
	}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got := &networkingv1.NetworkPolicy{}
		require.NoError(c, env.Client.Get(ctx, key, got))
		assert.Equal(c, statusPortRules("apigateway-system"), got.Spec.Ingress)
	}, waitFor, tick)
}
