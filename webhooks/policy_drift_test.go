package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/manifests/policy"
)

// TestPolicyDefaultsLikeDefault holds the MutatingAdmissionPolicy the
// manifests install (manifests/policy, generated from api/v1/defaults) to
// the webhook's patch of the same table, through the real API server:
// every generated gateway is written twice, once
// where the policy is bound and once where only the mutating webhook
// defaults, through both versions, created and applied, in namespaces
// with and without the default-image annotation. The policy's copy must
// never reach the webhook (the policy left its matchConditions nothing to
// do) and both copies must be stored byte for byte alike, or be refused
// alike.
func TestPolicyDefaultsLikeDefault(t *testing.T) {
	rec := &admissionRecorder{calls: map[string][]admissionCall{}}
	startRecordedWebhooks(t, rec, Options{DefaultImage: driftImage, DefaultReplicas: driftReplicas})
	selector := installDefaultsPolicy(t, map[string]string{
		defaults.ParamImage: driftImage, defaults.ParamReplicas: fmt.Sprint(driftReplicas),
	})
	annotated := map[string]string{v1.DefaultImageAnnotation: " " + driftNamespaceImage + " "}
	bound := map[bool]*corev1.Namespace{
		false: labelled(t, driftNamespace(t, nil), selector),
		true:  labelled(t, driftNamespace(t, annotated), selector),
	}
	webhookOnly := map[bool]*corev1.Namespace{false: driftNamespace(t, nil), true: driftNamespace(t, annotated)}
	awaitPolicy(t, rec, bound[false].Name)

	shapes := policyShapes()
	var refused int
	for _, s := range shapes {
		p, w := s.renamed(policyCopy), s.renamed(webhookCopy)
		pObj, wObj := p.object(bound[s.annotated].Name), w.object(webhookOnly[s.annotated].Name)
		written := asJSON(pObj.Object)
		pErr, wErr := p.write(t.Context(), pObj), w.write(t.Context(), wObj)
		if calls := rec.callsFor(pObj.GetNamespace(), p.name); len(calls) > 0 {
			t.Errorf("%s: where the policy is bound, the API server still sent it to the mutating webhook: the policy left a default undone\nreceived: %s",
				s, calls[0].object)
			continue
		}
		if (pErr == nil) != (wErr == nil) {
			t.Errorf("%s: refused with the policy: %v; refused with the webhook: %v\nwritten: %s", s, pErr, wErr, written)
			continue
		}
		if pErr != nil {
			refused++
			continue
		}
		pSpec := asJSON(storedGateway(t, pObj).Spec)
		wSpec := strings.ReplaceAll(asJSON(storedGateway(t, wObj).Spec), webhookCopy, policyCopy)
		assert.Equal(t, wSpec, pSpec, "%s: stored spec, defaulted by the webhook (expected) and by the policy (actual)\nwritten: %s", s, written)
	}
	t.Logf("%d gateways written both ways, %d refused both ways", len(shapes), refused)
	assert.Less(t, refused, len(shapes)/20, "nearly every generated gateway is valid once defaulted")
}

// The prefixes of a shape's two copies' names and hosts: nothing else
// holds them, so the copies compare equal once one is replaced by the
// other.
const (
	policyCopy  = "pcopy-"
	webhookCopy = "wcopy-"
)

// renamed is s under another name and hosts, so that its two copies do
// not conflict.
func (s shape) renamed(prefix string) shape {
	s.name = prefix + s.name
	s.routes = slices.Clone(s.routes)
	for i := range s.routes {
		s.routes[i].host = prefixHost(prefix, s.routes[i].host)
	}
	tls := make([][]string, len(s.tls))
	for i, hosts := range s.tls {
		for _, h := range hosts {
			tls[i] = append(tls[i], prefixHost(prefix, h))
		}
	}
	s.tls = tls
	return s
}

// prefixHost puts prefix in front of host's first label that is not "*".
func prefixHost(prefix, host string) string {
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		return "*." + prefix + rest
	}
	return prefix + host
}

// policyShapes are the drift test's gateways: the generated policy and
// the webhook both evaluate api/v1/defaults.Table, which
// TestPolicyMatchesPatch holds to each other in process for thousands of
// gateways; this is the check that the API server agrees.
func policyShapes() []shape { return driftShapes() }

// installDefaultsPolicy installs the manifests' MutatingAdmissionPolicy and
// binding under names of the test's own, the binding reading params from a
// ConfigMap holding data and matching only namespaces with the returned
// label, so the other tests of the suite still see the webhook alone.
func installDefaultsPolicy(t *testing.T, data map[string]string) map[string]string {
	t.Helper()
	ctx := t.Context()
	mutating, binding, err := policy.DefaultsPolicy()
	require.NoError(t, err)

	params := driftNamespace(t, nil)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: policy.ParamsName, Namespace: params.Name}, Data: data}
	require.NoError(t, env.Client.Create(ctx, cm))

	id := params.Name
	selector := map[string]string{"policy-drift": id}
	mutating.Name = "defaults-" + id
	binding.Name = "defaults-" + id
	binding.Spec.PolicyName = mutating.Name
	binding.Spec.ParamRef.Namespace = params.Name
	binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: selector},
	}
	require.NoError(t, env.Client.Create(ctx, mutating), "the API server refuses the manifests' policy")
	require.NoError(t, env.Client.Create(ctx, binding))
	t.Cleanup(func() {
		assert.NoError(t, env.Client.Delete(context.Background(), binding))
		assert.NoError(t, env.Client.Delete(context.Background(), mutating))
	})
	return selector
}

func labelled(t *testing.T, ns *corev1.Namespace, labels map[string]string) *corev1.Namespace {
	t.Helper()
	patch := client.MergeFrom(ns.DeepCopy())
	ns.Labels = labels
	require.NoError(t, env.Client.Patch(t.Context(), ns, patch))
	return ns
}

// awaitPolicy waits until the API server applies the new policy in
// namespace: its policy informer picks a new binding up asynchronously.
// A dry-run create that needs every default must be defaulted without the
// mutating webhook.
func awaitPolicy(t *testing.T, rec *admissionRecorder, namespace string) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		probe := shape{name: fmt.Sprintf("probe-%d", attempt), routes: []routeShape{{host: "probe.drift.example.com", port: 80}}}
		obj := probe.object(namespace)
		err := env.Client.Create(t.Context(), obj, client.DryRunAll)
		// Until the API server's policy plugin has read the CRD's schema it
		// answers 503 "Resource kind ... not found" (also after an install).
		if !apierrors.IsServiceUnavailable(err) {
			require.NoError(t, err, "a dry-run create of a gateway that needs every default")
		}
		if err == nil && len(rec.callsFor(namespace, probe.name)) == 0 {
			raw, err := json.Marshal(obj.Object["spec"])
			require.NoError(t, err)
			require.Contains(t, string(raw), driftImage, "the policy's first defaults")
			return
		}
		require.Less(t, attempt, 300, "the API server did not apply the policy within 300 attempts")
		time.Sleep(100 * time.Millisecond) // the informer's lag, not an assertion
	}
}
