package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

// shortRetry makes a gateway whose child name is taken look again quickly.
func shortRetry(o *Options) { o.NameTakenRetry = 200 * time.Millisecond }

// TestForeignObjectsAreLeftAlone creates a gateway in a namespace that
// already has a user's own Service, Ingress and ConfigMap of its children's
// names, without the operator's labels, so the operator's cache does not
// see them. None of them is written, the gateway says why, and nothing
// that depends on them is applied: no Deployment mounting someone else's
// ConfigMap.
func TestForeignObjectsAreLeftAlone(t *testing.T) {
	op := startOperator(t, shortRetry)
	ctx := context.Background()
	ns := newNamespace(t, "foreign")
	foreign := []client.Object{
		foreignService(ns, "payments", nil),
		foreignIngress(ns, "payments", nil),
		foreignConfigMap(ns, "payments-config", nil),
	}
	before := createForeign(t, foreign...)

	gw := gateway("payments", route("payments.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw = createGateway(t, gw)
	cur := waitCondition(t, gw, v1.ConditionDegraded, "True", ReasonChildNameTaken)
	assertCondition(t, cur.Status.Conditions, v1.ConditionReady, "False", ReasonChildNameTaken)
	msg := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionDegraded).Message
	for _, want := range []string{
		"ConfigMap payments-config: already exists and is not controlled by this APIGateway; delete or rename it, or rename the gateway",
		"Service payments: already exists and is not controlled by this APIGateway",
		"Deployment payments: not applied: its pods would mount ConfigMap payments-config, whose name is taken",
		"Ingress payments: not applied: it would send the gateway's hosts to Service payments, whose name is taken",
	} {
		assert.Contains(t, msg, want)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		reasons, err := gatewayEvents(ctx, cur)
		require.NoError(c, err)
		assert.Contains(c, reasons, "Warning ChildNameTaken ConfigMap/payments-config")
		assert.Contains(c, reasons, "Warning ChildNameTaken Service/payments")
	}, waitFor, tick)

	// Let the gateway retry a few times: no pass may touch them either.
	seen := op.reconcileCount(ns + "/payments")
	require.Eventually(t, func() bool { return op.reconcileCount(ns+"/payments") >= seen+3 }, waitFor, tick,
		"a gateway with a taken name is not retried")
	assertUntouched(t, before)
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(gw), &appsv1.Deployment{})
	assert.True(t, apierrors.IsNotFound(err), "a Deployment was created although its ConfigMap is someone else's: %v", err)
}

// TestForeignLabelledObjectsAreLeftAlone is TestForeignObjectsAreLeftAlone
// with objects that carry the operator's labels, so they are in its cache,
// but are not controlled by the gateway: an Ingress with no owner and a
// Deployment controlled by an earlier APIGateway of the same name.
func TestForeignLabelledObjectsAreLeftAlone(t *testing.T) {
	op := startOperator(t, shortRetry)
	ns := newNamespace(t, "labelled")
	gw := gateway("orders", route("orders.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	labels := childLabels(gw)
	dep := foreignDeployment(ns, "orders", labels)
	dep.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "APIGateway", Name: "orders",
		UID: "6f1c2d3e-0000-4000-8000-000000000001", Controller: ptr.To(true)}}
	before := createForeign(t, foreignIngress(ns, "orders", labels), dep)

	gw = createGateway(t, gw)
	cur := waitCondition(t, gw, v1.ConditionDegraded, "True", ReasonChildNameTaken)
	assertCondition(t, cur.Status.Conditions, v1.ConditionReady, "False", ReasonChildNameTaken)
	msg := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionDegraded).Message
	assert.Contains(t, msg, "Ingress orders: already exists and is not controlled by this APIGateway")
	assert.Contains(t, msg, "Deployment orders: controlled by an earlier APIGateway of this name, probably being deleted")

	seen := op.reconcileCount(ns + "/orders")
	require.Eventually(t, func() bool { return op.reconcileCount(ns+"/orders") >= seen+3 }, waitFor, tick)
	assertUntouched(t, before)
	// The children whose names are free are the gateway's.
	ctx := context.Background()
	cm, svc := &corev1.ConfigMap{}, &corev1.Service{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders-config"}, cm))
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, svc))
	assertControlledBy(t, cm, cur)
	assertControlledBy(t, svc, cur)
}

// TestChildCreatedOnceTheNameIsFree deletes the foreign Service a gateway
// is waiting for. Nothing the operator watches changes (the Service is not
// in its cache), so only the gateway's own retry can notice; it then
// creates the Service and the Ingress that depends on it.
func TestChildCreatedOnceTheNameIsFree(t *testing.T) {
	startOperator(t, shortRetry)
	ctx := context.Background()
	ns := newNamespace(t, "freed")
	svc := foreignService(ns, "freed", nil)
	createForeign(t, svc)
	gw := gateway("freed", route("freed.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw = createGateway(t, gw)
	waitCondition(t, gw, v1.ConditionDegraded, "True", ReasonChildNameTaken)

	require.NoError(t, env.Client.Delete(ctx, svc))
	cur := waitCondition(t, gw, v1.ConditionDegraded, "False", ReasonChildrenApplied)
	_, ch := settled(t, cur)
	for _, obj := range []client.Object{&ch.cm, &ch.dep, &ch.svc, &ch.ing} {
		assertControlledBy(t, obj, cur)
	}
	assert.NotEqual(t, svc.UID, ch.svc.UID)
	assert.Equal(t, selectorLabels(cur), ch.svc.Spec.Selector)
}

// TestCreatedChildrenAreOwnedAsApplied: a child the operator creates ends
// with one managed-fields entry of FieldOwner, an Apply, as if it had been
// applied. Were the Create's Update entry left beside it, a field later
// dropped from the spec would stay, co-owned by that entry: here the
// Ingress must lose its class and TLS when the spec does.
func TestCreatedChildrenAreOwnedAsApplied(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "created")
	gw := gateway("created", route("created.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw.Spec.IngressClassName = ptr.To("nginx")
	gw.Spec.TLS = []v1.GatewayTLS{{Hosts: []string{"created.example.com"}, SecretName: "created-tls"}}
	gw = createGateway(t, gw)
	gw, ch := settled(t, gw)
	require.Equal(t, ptr.To("nginx"), ch.ing.Spec.IngressClassName)
	require.Len(t, ch.ing.Spec.TLS, 1)
	// The events say which path made them.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		reasons, err := gatewayEvents(ctx, gw)
		require.NoError(c, err)
		assert.Contains(c, reasons, "Normal Created: Created ConfigMap created-config, Deployment created, Service created, Ingress created")
	}, waitFor, tick)
	for _, obj := range []client.Object{&ch.cm, &ch.dep, &ch.svc, &ch.ing} {
		var ours []string
		for _, e := range obj.GetManagedFields() {
			if e.Manager == FieldOwner {
				ours = append(ours, string(e.Operation)+" "+e.Subresource)
			}
		}
		assert.Equal(t, []string{"Apply "}, ours, "%T %s: %s's managed-fields entries", obj, obj.GetName(), FieldOwner)
	}

	require.NoError(t, env.Client.Patch(ctx, gw, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"ingressClassName":null,"tls":null}}`))))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ing := &networkingv1.Ingress{}
		require.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), ing))
		assert.Nil(c, ing.Spec.IngressClassName)
		assert.Empty(c, ing.Spec.TLS)
	}, waitFor, tick)
}

// foreignService is a user's Service: its own selector and port.
func foreignService(ns, name string, labels map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "payments-backend"},
			Ports:    []corev1.ServicePort{{Name: "web", Port: 8080, TargetPort: intstr.FromInt32(9090)}},
		},
	}
}

// foreignIngress is a user's Ingress to their own Service.
func foreignIngress(ns, name string, labels map[string]string) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: "internal.example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/billing", PathType: ptr.To(networkingv1.PathTypeExact),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: "billing", Port: networkingv1.ServiceBackendPort{Number: 8080}}},
			}}}},
		}}},
	}
}

// foreignConfigMap is a user's ConfigMap.
func foreignConfigMap(ns, name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Data:       map[string]string{"billing.properties": "currency=EUR\n"},
	}
}

// foreignDeployment is a user's Deployment of their own image.
func foreignDeployment(ns, name string, labels map[string]string) *appsv1.Deployment {
	sel := map[string]string{"app": "billing"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "billing", Image: "example.com/billing:1.0"}}},
			},
		},
	}
}

// createForeign creates objs and returns them as the API server stored them.
func createForeign(t *testing.T, objs ...client.Object) []client.Object {
	t.Helper()
	stored := make([]client.Object, len(objs))
	for i, obj := range objs {
		require.NoError(t, env.Client.Create(context.Background(), obj))
		stored[i] = obj.DeepCopyObject().(client.Object)
	}
	return stored
}

// assertUntouched checks that each object is exactly as stored: never
// written (same resourceVersion), the same spec or data byte for byte, the
// same labels, and no owner.
func assertUntouched(t *testing.T, stored []client.Object) {
	t.Helper()
	for _, want := range stored {
		got := want.DeepCopyObject().(client.Object)
		require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(want), got))
		what := fmt.Sprintf("%T %s", want, want.GetName())
		assert.Equal(t, want.GetResourceVersion(), got.GetResourceVersion(), "%s was written", what)
		assert.Equal(t, contents(t, want), contents(t, got), "%s changed", what)
		assert.Equal(t, want.GetLabels(), got.GetLabels(), "%s's labels changed", what)
		assert.Equal(t, want.GetOwnerReferences(), got.GetOwnerReferences(), "%s's owners changed", what)
	}
}

// contents is the JSON of obj's spec, or of its data for a ConfigMap.
func contents(t *testing.T, obj client.Object) string {
	t.Helper()
	var fields map[string]json.RawMessage
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &fields))
	if spec, ok := fields["spec"]; ok {
		return string(spec)
	}
	return string(fields["data"])
}

// TestApplyCarriesTheUIDItChecked: an apply to a child the reconciler
// checked is refused by the API server when the object of that name is no
// longer the one checked (deleted, and its name taken by another), and the
// other object is left exactly as it was.
func TestApplyCarriesTheUIDItChecked(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "uid")
	gw := gateway("shop", route("uid.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace, gw.UID = ns, "uid-of-the-gateway"
	want, err := Children(gw, ChildOptions{DefaultImage: testImage})
	require.NoError(t, err)

	// The name is taken since the check, by an object of someone else.
	taken := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: configMapName(gw)}, Data: map[string]string{"mine": "yes"}}
	require.NoError(t, env.Client.Create(ctx, taken))
	checked := configMapChild.stub(client.ObjectKeyFromObject(taken))
	checked.SetUID("uid-of-the-child-that-was-checked")

	_, _, err = apply(ctx, env.Client, configMapChild, checked, want.ConfigMap)
	require.Error(t, err, "the apply must not write over another object")
	assert.True(t, apierrors.IsConflict(err) || apierrors.IsInvalid(err), "%v", err)
	after := &corev1.ConfigMap{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(taken), after))
	assert.Equal(t, map[string]string{"mine": "yes"}, after.Data)
	assert.Empty(t, after.OwnerReferences)

	// Deleted, not replaced: the apply must not create it again.
	require.NoError(t, env.Client.Delete(ctx, taken))
	_, _, err = apply(ctx, env.Client, configMapChild, checked, want.ConfigMap)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	assert.True(t, apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(taken), &corev1.ConfigMap{})))

	// The object that was checked: applied.
	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: configMapName(gw)}}
	require.NoError(t, env.Client.Create(ctx, mine))
	_, act, err := apply(ctx, env.Client, configMapChild, mine, want.ConfigMap)
	require.NoError(t, err)
	assert.Equal(t, updated, act)
}
