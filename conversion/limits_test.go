package conversion_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/conversion"
	"example.com/apigateway-operator/manifests/policy"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

// longExactGateway has 100 Exact routes on host whose 1,001-byte paths are half
// '&', the object that produced a 620 KB annotation while '&' took six
// bytes, and an own annotation of note bytes.
func longExactGateway(ns, name, host string, note int) *v1.APIGateway {
	gw := &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.APIGatewaySpec{
		Image: "nginx:1.27", Replicas: ptr.To[int32](2)}}
	if note > 0 {
		gw.Annotations = map[string]string{"example.com/note": strings.Repeat("n", note)}
	}
	for i := range 100 {
		path := fmt.Sprintf("/%03d", i) + strings.Repeat("&a", 498) + "/"
		gw.Spec.Routes = append(gw.Spec.Routes, hubRoute(host, path, v1.PathTypeExact, "svc", 80))
	}
	return gw
}

// TestV1alpha1ListsSurviveTheLargestAdmittedObject: the API server fails a
// whole v1alpha1 LIST when one converted object's annotations exceed
// 256 KiB. Admission refuses a v1 object whose v1alpha1 form would, with a
// field error saying why, and a LIST through v1alpha1 keeps working next
// to the largest object it admits.
func TestV1alpha1ListsSurviveTheLargestAdmittedObject(t *testing.T) {
	startWebhooks(t)
	ctx, ns := t.Context(), testenv.NewNamespace(t, env.Client, "conversion")

	base := longExactGateway(ns, "probe", "aaaa.example.com", 0)
	dataBytes, err := conversion.V1alpha1AnnotationBytes(base)
	require.NoError(t, err)
	t.Logf("100 long Exact routes: a %d-byte v1alpha1 annotation", dataBytes)
	// The own annotation that brings the v1alpha1 form exactly to the
	// limit: its key and value count, as the API server counts them.
	room := conversion.MaxV1alpha1AnnotationBytes - dataBytes - len("example.com/note")
	require.Positive(t, room)

	largest := longExactGateway(ns, "largest", "aaaa.example.com", room)
	size, err := conversion.V1alpha1AnnotationBytes(largest)
	require.NoError(t, err)
	require.Equal(t, conversion.MaxV1alpha1AnnotationBytes, size)
	require.NoError(t, env.Client.Create(ctx, largest), "the largest object admission allows")

	over := longExactGateway(ns, "over", "bbbb.example.com", room+1)
	err = env.Client.Create(ctx, over)
	require.True(t, apierrors.IsInvalid(err), "one byte more must be refused: %v", err)
	assert.Contains(t, err.Error(), "spec: Invalid value")
	assert.Contains(t, err.Error(), "too large to be read through v1alpha1")

	require.NoError(t, env.Client.Create(ctx, alphaGateway(ns, "small", "small.example.com")))
	alphas := &v1alpha1.APIGatewayList{}
	require.NoError(t, env.Client.List(ctx, alphas, client.InNamespace(ns)), "a v1alpha1 LIST beside the largest object")
	require.Len(t, alphas.Items, 2)
	res := env.Kubectl(ctx, nil, "get", "apigateways.v1alpha1.example.com", "-n", ns, "-o", "name")
	require.NoError(t, res.Err, res.Stderr)
	assert.Equal(t, "apigateway.example.com/largest\napigateway.example.com/small\n", res.Stdout)
}

// TestRestoredDataMeetsTheV1Rules: a write through v1alpha1 is checked
// against the v1alpha1 schema, which has no tls, ingressClassName or
// resources, and the conversion annotation brings those back. Admission
// must hold them to the v1 rules itself (conversion restores nothing
// beyond the v1 schema's size limits: TestDataBeyondTheV1LimitsIsNotRestored).
func TestRestoredDataMeetsTheV1Rules(t *testing.T) {
	startWebhooks(t)
	ctx, ns := t.Context(), testenv.NewNamespace(t, env.Client, "conversion")
	tests := map[string]struct {
		spec func(*v1.APIGatewaySpec)
		want string
	}{
		"an ingressClassName that is no name": {spec: func(s *v1.APIGatewaySpec) {
			s.IngressClassName = ptr.To("Not A Class")
		}, want: `spec.ingressClassName: Invalid value: "Not A Class"`},
		"requests above limits": {spec: func(s *v1.APIGatewaySpec) {
			s.Resources = &corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			}
		}, want: "spec.resources.requests[cpu]: Invalid value"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			hub := &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restored"}, Spec: v1.APIGatewaySpec{
				Image: "nginx:1.27", Replicas: ptr.To[int32](2),
				Routes: []v1.Route{hubRoute("r.example.com", "/", v1.PathTypePrefix, "svc", 80)}}}
			tc.spec(&hub.Spec)
			// What a client sends after editing a v1alpha1 object's
			// annotation by hand: the value conversion itself writes.
			alpha := &v1alpha1.APIGateway{}
			require.NoError(t, conversion.V1ToV1alpha1(hub, alpha))
			require.Contains(t, alpha.Annotations, conversion.DataAnnotation)
			err := env.Client.Create(ctx, alpha)
			require.True(t, apierrors.IsInvalid(err), "want a refusal, got %v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestDataBeyondTheV1LimitsIsNotRestored: a v1alpha1 write whose
// conversion annotation holds 2,000 parent Gateways (v1 allows 32; they fit
// in some 33 KB) or 17 TLS entries (v1 allows 16) is stored with what
// v1alpha1 says and the annotation kept as written, whether or not
// admission runs: conversion never restores data no v1 write could store,
// so the route index and the reconciler never see it.
func TestDataBeyondTheV1LimitsIsNotRestored(t *testing.T) {
	startWebhooks(t)
	ctx, ns := t.Context(), testenv.NewNamespace(t, env.Client, "conversion")
	tests := map[string]func(*v1.APIGatewaySpec){
		"2,000 parentRefs": func(s *v1.APIGatewaySpec) {
			s.Exposure = &v1.Exposure{Type: v1.ExposureHTTPRoute, HTTPRoute: &v1.HTTPRouteExposure{}}
			for i := range 2000 {
				s.Exposure.HTTPRoute.ParentRefs = append(s.Exposure.HTTPRoute.ParentRefs, v1.ParentGatewayReference{Name: fmt.Sprintf("gateway-%d", i)})
			}
		},
		"17 tls entries": func(s *v1.APIGatewaySpec) {
			for range 17 {
				s.TLS = append(s.TLS, v1.GatewayTLS{Hosts: []string{"smuggled.example.com"}, SecretName: "tls"})
			}
		},
	}
	for name, set := range tests {
		t.Run(name, func(t *testing.T) {
			hub := &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "smuggled"}, Spec: v1.APIGatewaySpec{
				Image: "nginx:1.27", Replicas: ptr.To[int32](2),
				Routes: []v1.Route{hubRoute("smuggled.example.com", "/", v1.PathTypePrefix, "svc", 80)}}}
			set(&hub.Spec)
			alpha := &v1alpha1.APIGateway{}
			require.NoError(t, conversion.V1ToV1alpha1(hub, alpha))
			written := alpha.Annotations[conversion.DataAnnotation]
			require.NotEmpty(t, written)
			require.NoError(t, env.Client.Create(ctx, alpha))

			stored := &v1.APIGateway{}
			require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(hub), stored))
			assert.Nil(t, stored.Spec.Exposure, "no parentRefs restored")
			assert.Empty(t, stored.Spec.TLS, "no tls restored")
			assert.Equal(t, written, stored.Annotations[conversion.DataAnnotation], "the annotation is kept as written")
			assert.Equal(t, []v1.Route{hubRoute("smuggled.example.com", "/", v1.PathTypePrefix, "svc", 80)}, stored.Spec.Routes)
			require.NoError(t, env.Client.Delete(ctx, stored))
		})
	}
}

// TestLimitsPolicyHoldsWithoutTheWebhook: with the admission webhooks
// skipped (their paths answer 404 and they fail open, as in an outage or
// a flood), the limits policy of manifests/policy still refuses a v1
// object whose v1alpha1 form would break v1alpha1 reads, and admits the
// largest one within its bound, beside which a v1alpha1 LIST works.
func TestLimitsPolicyHoldsWithoutTheWebhook(t *testing.T) {
	ctx, ns := t.Context(), testenv.NewNamespace(t, env.Client, "conversion")
	mgr, err := ctrl.NewManager(env.Config, env.ManagerOptions())
	require.NoError(t, err)
	mgr.GetWebhookServer().Register(webhooks.ConvertPath, conversion.NewWebhookHandler())
	env.StartManager(t, mgr)
	installLimitsPolicy(t)

	base := longExactGateway(ns, "probe", "aaaa.example.com", 1)
	// The own annotation that brings the policy's bound to the limit.
	room := conversion.MaxV1alpha1AnnotationBytes - conversion.LimitsPolicyBound(t, base) + 1
	largest := longExactGateway(ns, "largest", "aaaa.example.com", room)
	require.Equal(t, conversion.MaxV1alpha1AnnotationBytes, conversion.LimitsPolicyBound(t, largest))
	over := longExactGateway(ns, "over", "bbbb.example.com", room+1)

	// Until the API server applies the policy, it admits everything.
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return env.Client.Create(ctx, over.DeepCopy(), client.DryRunAll) != nil, nil
	}))
	err = env.Client.Create(ctx, over)
	require.True(t, apierrors.IsInvalid(err), "one byte more must be refused: %v", err)
	assert.Contains(t, err.Error(), "ValidatingAdmissionPolicy 'apigateway-operator-limits'")
	assert.Contains(t, err.Error(), "too large to be read through v1alpha1")

	require.NoError(t, env.Client.Create(ctx, largest), "the largest object the policy admits")
	require.NoError(t, env.Client.Create(ctx, alphaGateway(ns, "small", "small.example.com")))
	alphas := &v1alpha1.APIGatewayList{}
	require.NoError(t, env.Client.List(ctx, alphas, client.InNamespace(ns)), "a v1alpha1 LIST beside the largest object")
	require.Len(t, alphas.Items, 2)
}

// installLimitsPolicy installs manifests/policy/limits.yaml until the
// test ends.
func installLimitsPolicy(t *testing.T) {
	t.Helper()
	p, b, err := policy.LimitsPolicy()
	require.NoError(t, err)
	for _, obj := range []client.Object{p, b} {
		require.NoError(t, env.Client.Create(t.Context(), obj))
		t.Cleanup(func() { require.NoError(t, env.Client.Delete(context.Background(), obj)) })
	}
}
