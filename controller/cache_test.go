package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

// appliedEntry is a managed fields entry of FieldOwner's with operation op.
func appliedEntry(op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: FieldOwner, Operation: op, APIVersion: "v1", FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(fields)}
}

func TestChildTransform(t *testing.T) {
	const dataFields = `{"f:data":{".":{},"f:k":{}}}`
	cm := func(entries ...metav1.ManagedFieldsEntry) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gw-config", ResourceVersion: "7", ManagedFields: entries,
				Labels: map[string]string{LabelName: nameValue}},
			Data: map[string]string{"k": "v"},
		}
	}
	applied, err := configDigest(corev1ac.ConfigMap("gw-config", "ns").WithData(map[string]string{"k": "v"}))
	require.NoError(t, err)
	nothing, err := configDigest(corev1ac.ConfigMap("gw-config", "ns"))
	require.NoError(t, err)

	tests := map[string]struct {
		in any
		// untouched: the object passes through as it is.
		untouched bool
		// digest is what the transform records.
		digest string
		// keepsManagedFields: an Update entry of FieldOwner still to be
		// folded into its apply by upgradeManagedFields.
		keepsManagedFields bool
	}{
		"applied":               {in: cm(appliedEntry(metav1.ManagedFieldsOperationApply, dataFields)), digest: applied},
		"created, not upgraded": {in: cm(appliedEntry(metav1.ManagedFieldsOperationUpdate, dataFields)), keepsManagedFields: true},
		"another manager's apply": {in: cm(metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(dataFields)}), digest: nothing},
		"unreadable managed fields": {in: cm(appliedEntry(metav1.ManagedFieldsOperationApply, `{"x:data":{}}`)), untouched: true},
		"a tombstone":               {in: toolscache.DeletedFinalStateUnknown{Key: "ns/gw-config", Obj: cm()}, untouched: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			orig := tc.in
			if o, ok := tc.in.(*corev1.ConfigMap); ok {
				orig = o.DeepCopy()
			}
			out, err := configMapChild.transform(tc.in)
			require.NoError(t, err)
			if tc.untouched {
				assert.Equal(t, orig, out)
				return
			}
			got := out.(*corev1.ConfigMap)
			assert.Equal(t, tc.digest, cachedDigest(got))
			assert.Nil(t, got.Data, "the configuration stays in the cache")
			assert.Nil(t, got.Labels)
			assert.Equal(t, tc.keepsManagedFields, len(got.ManagedFields) > 0)

			again, err := configMapChild.transform(got.DeepCopy())
			require.NoError(t, err)
			assert.Equal(t, got, again, "not idempotent")

			got.ResourceVersion = "8"
			assert.Empty(t, cachedDigest(got), "a digest outlived its resourceVersion")
		})
	}
}

// TestUpgradePending holds upgradePending to the condition under which
// upgradeManagedFields writes: csaupgrade returning a patch.
func TestUpgradePending(t *testing.T) {
	const fields = `{"f:data":{".":{},"f:k":{}}}`
	apply := appliedEntry(metav1.ManagedFieldsOperationApply, fields)
	update := appliedEntry(metav1.ManagedFieldsOperationUpdate, fields)
	statusUpdate := update
	statusUpdate.Subresource = "status"
	otherUpdate := update
	otherUpdate.Manager = "kubectl-edit"
	tests := map[string]struct {
		entries []metav1.ManagedFieldsEntry
		want    bool
	}{
		"none":                   {},
		"applied":                {entries: []metav1.ManagedFieldsEntry{apply}},
		"created":                {entries: []metav1.ManagedFieldsEntry{update}, want: true},
		"applied, then repaired": {entries: []metav1.ManagedFieldsEntry{apply, update}, want: true},
		"another manager":        {entries: []metav1.ManagedFieldsEntry{apply, otherUpdate}},
		"a status update":        {entries: []metav1.ManagedFieldsEntry{apply, statusUpdate}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", ResourceVersion: "1", ManagedFields: tc.entries},
				Data: map[string]string{"k": "v"}}
			assert.Equal(t, tc.want, upgradePending(obj))
			patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj.DeepCopy(), sets.New(FieldOwner), FieldOwner)
			require.NoError(t, err)
			assert.Equal(t, tc.want, patch != nil, "csaupgrade's verdict")
		})
	}
}

func TestSlimGateway(t *testing.T) {
	gw := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	gw.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "argocd.argoproj.io/tracking-id": "shop:example.com/APIGateway:shop/gw"}
	want := gw.DeepCopy()
	want.ManagedFields, want.Annotations = nil, nil

	out, err := slimGateway(gw)
	require.NoError(t, err)
	assert.Equal(t, want, out)
	again, err := slimGateway(out)
	require.NoError(t, err)
	assert.Equal(t, want, again)
}

// TestCacheHoldsSlimObjects reads a reconciled gateway and its children
// through a cache built with CacheOptions, as the manager's is, and checks
// that it holds the digest of what the operator applied instead of the
// managed fields and the children's bulk, and keeps what the reconciler
// reads.
func TestCacheHoldsSlimObjects(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "slim")
	res := env.Kubectl(ctx, strings.NewReader(`
apiVersion: example.com/v1
kind: APIGateway
metadata: {name: slim, namespace: `+ns+`}
spec:
  image: nginx:1.27
  replicas: 2
  routes: [{host: slim.example.com, path: /, pathType: Prefix, backendService: {name: web, port: 80}}]
`), "apply", "-f", "-")
	require.NoError(t, res.Err, "%s", res.Stderr)
	gw := &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slim"}}
	t.Cleanup(func() { deleteGateway(gw) })
	gw, ch := settled(t, gw)
	require.NotEmpty(t, gw.Annotations[corev1.LastAppliedConfigAnnotation])
	setDeploymentStatus(t, gw, 1)

	opts := CacheOptions()
	opts.Scheme = env.Scheme
	c, err := cache.New(env.Config, opts)
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() { _ = c.Start(cctx) }()
	require.True(t, c.WaitForCacheSync(ctx))

	cached := &v1.APIGateway{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(gw), cached))
	assert.Empty(t, cached.ManagedFields)
	assert.Empty(t, cached.Annotations)
	assert.Equal(t, gw.Spec, cached.Spec)

	key := client.ObjectKeyFromObject(gw)
	live := &appsv1.Deployment{}
	dep := &appsv1.Deployment{}
	require.EventuallyWithT(t, func(c2 *assert.CollectT) {
		require.NoError(c2, env.Client.Get(ctx, key, live))
		require.NoError(c2, c.Get(ctx, key, dep))
		require.Equal(c2, live.ResourceVersion, dep.ResourceVersion)
	}, waitFor, tick)
	assert.Equal(t, live.Status, dep.Status)
	assert.Equal(t, live.Generation, dep.Generation)
	assert.Equal(t, live.OwnerReferences, dep.OwnerReferences)
	require.Contains(t, live.Spec.Template.Annotations, PodInputsAnnotation)
	require.Contains(t, live.Spec.Template.Annotations, "prometheus.io/scrape")
	assert.Equal(t, appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{
		Annotations: map[string]string{PodInputsAnnotation: live.Spec.Template.Annotations[PodInputsAnnotation]}}}}, dep.Spec,
		"of the template's annotations, those the reconciler reads")
	assertCachedDigest(t, live, dep, deploymentChild)

	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(&ch.cm), cm))
	assert.Nil(t, cm.Data)
	assertCachedDigest(t, &ch.cm, cm, configMapChild)

	svc := &corev1.Service{}
	require.NoError(t, c.Get(ctx, key, svc))
	require.NotEmpty(t, ch.svc.Spec.Ports)
	for i, p := range ch.svc.Spec.Ports {
		assert.Equal(t, corev1.ServicePort{Port: p.Port, Protocol: p.Protocol}, svc.Spec.Ports[i], "of a port, its number and protocol")
	}
	assert.Len(t, svc.Spec.Ports, len(ch.svc.Spec.Ports))
	assert.Empty(t, svc.Spec.ClusterIP)
	assertCachedDigest(t, &ch.svc, svc, serviceChild)

	ing := &networkingv1.Ingress{}
	require.NoError(t, c.Get(ctx, key, ing))
	assert.Equal(t, networkingv1.IngressSpec{}, ing.Spec)
	assertCachedDigest(t, &ch.ing, ing, ingressChild)

}

// TestAPIServerDropsSelfLink holds the fact the cached digest's place rests
// on: a selfLink sent to the API server is not stored.
func TestAPIServerDropsSelfLink(t *testing.T) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: newNamespace(t, "selflink"), Name: "cm"}}
	cm.SetSelfLink("1 digest")
	require.NoError(t, env.Client.Create(ctx, cm))
	assert.Empty(t, cm.GetSelfLink(), "the create's answer")
	cm.SetSelfLink("2 digest")
	require.NoError(t, env.Client.Update(ctx, cm))
	stored := &corev1.ConfigMap{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(cm), stored))
	assert.Empty(t, stored.GetSelfLink())
}

// assertCachedDigest checks that cached, live as the cache holds it, has no
// managed fields and the digest of what the operator applied to live.
func assertCachedDigest[O client.Object, A runtime.ApplyConfiguration](t *testing.T, live, cached O, k child[O, A]) {
	t.Helper()
	require.Equal(t, live.GetResourceVersion(), cached.GetResourceVersion(), "%T changed meanwhile", live)
	assert.Empty(t, cached.GetManagedFields())
	want, err := appliedDigest(live, k.extract)
	require.NoError(t, err)
	assert.Equal(t, want, cachedDigest(cached), "%T", live)
	assert.Empty(t, cached.GetLabels())
	assert.Empty(t, cached.GetAnnotations())
	assert.Equal(t, live.GetOwnerReferences(), cached.GetOwnerReferences())
}
