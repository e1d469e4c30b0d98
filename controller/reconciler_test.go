package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

func TestSeedExampleGetsItsChildren(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	sample, err := os.ReadFile(filepath.Join(env.Root, "manifests", "samples", "apigateway_v1.yaml"))
	require.NoError(t, err)
	res := env.Kubectl(ctx, strings.NewReader(string(sample)), "apply", "-f", "-")
	require.NoError(t, res.Err)
	gw := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "my-app-gateway"}, gw))
	t.Cleanup(func() { deleteGateway(gw) })

	gw, ch := settled(t, gw)
	for _, obj := range []client.Object{&ch.cm, &ch.dep, &ch.svc, &ch.ing} {
		assertControlledBy(t, obj, gw)
	}
	config := ch.cm.Data[configKey]
	assert.Contains(t, config, `set $backend "user-service.default.svc.cluster.local:8080";`)
	assert.Contains(t, config, `set $backend "product-service.default.svc.cluster.local:8081";`)
	if testing.Verbose() {
		t.Logf("rendered configuration of the seed example:\n%s", config)
	}
	assert.Equal(t, int32(2), *ch.dep.Spec.Replicas)
	assert.Equal(t, "nginx/nginx-plus:latest", ch.dep.Spec.Template.Spec.Containers[0].Image)
	assert.NotContains(t, ch.dep.Spec.Template.Annotations, ConfigHashAnnotation, "a route change would roll the pods")
	assert.Contains(t, ch.dep.Spec.Template.Annotations, PodInputsAnnotation)
	assert.Equal(t, intstr.FromString("http"), ch.svc.Spec.Ports[0].TargetPort)
	require.Len(t, ch.ing.Spec.Rules, 1)
	assert.Equal(t, "api.example.com", ch.ing.Spec.Rules[0].Host)
	assert.Equal(t, "app.kubernetes.io/instance=my-app-gateway,app.kubernetes.io/name=apigateway", gw.Status.Selector)

	waitCondition(t, gw, v1.ConditionReady, "False", ReasonReplicasNotReady)
	setDeploymentStatus(t, gw, 2)
	res = env.Kubectl(ctx, nil, "wait", "--for=condition=Ready", "agw/my-app-gateway", "-n", "default", "--timeout=30s")
	require.NoError(t, res.Err)
	gw = waitCondition(t, gw, v1.ConditionProgressing, "False", ReasonRolloutComplete)
	assert.Equal(t, int32(2), gw.Status.ReadyReplicas)
	assert.Equal(t, int32(2), gw.Status.Replicas)

	res = env.Kubectl(ctx, nil, "get", "agw", "my-app-gateway", "-n", "default")
	require.NoError(t, res.Err)
	assert.Contains(t, res.Stdout, ReasonAllReplicasReady, "the Status printer column")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		reasons, err := gatewayEvents(ctx, gw)
		require.NoError(c, err)
		assert.Equal(c, []string{
			"Normal Created: Created ConfigMap my-app-gateway-config, Deployment my-app-gateway, Service my-app-gateway, Ingress my-app-gateway, PodDisruptionBudget my-app-gateway",
		}, reasons)
	}, waitFor, tick)
}

func TestChangesTouchOnlyTheirChildren(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "changes")
	gw := gateway("shop", route("shop.example.com", "/cart", v1.PathTypePrefix, "cart", 8080))
	gw.Namespace = ns
	gw.Spec.Image = "nginxinc/nginx-unprivileged:1.29"
	gw.Spec.Replicas = ptr.To[int32](1)
	gw = createGateway(t, gw)
	gw, before := settled(t, gw)

	patchGateway := func(t *testing.T, patch string) {
		t.Helper()
		require.NoError(t, env.Client.Patch(ctx, gw, client.RawPatch(types.MergePatchType, []byte(patch))))
	}

	t.Run("replicas change only the Deployment's replicas", func(t *testing.T) {
		patchGateway(t, `{"spec":{"replicas":3}}`)
		_, after := settled(t, gw)
		assert.Equal(t, int32(3), *after.dep.Spec.Replicas)
		assert.Equal(t, before.dep.Spec.Template.Annotations, after.dep.Spec.Template.Annotations, "the pods would roll")
		assert.Equal(t, before.cm.ResourceVersion, after.cm.ResourceVersion, "ConfigMap written")
		assert.Equal(t, before.svc.ResourceVersion, after.svc.ResourceVersion, "Service written")
		assert.Equal(t, before.ing.ResourceVersion, after.ing.ResourceVersion, "Ingress written")
		before = after
	})
	t.Run("image changes only the Deployment's image", func(t *testing.T) {
		patchGateway(t, `{"spec":{"image":"nginxinc/nginx-unprivileged:1.29-alpine"}}`)
		_, after := settled(t, gw)
		assert.Equal(t, "nginxinc/nginx-unprivileged:1.29-alpine", after.dep.Spec.Template.Spec.Containers[0].Image)
		assert.NotEqual(t, before.dep.Spec.Template.Annotations[PodInputsAnnotation], after.dep.Spec.Template.Annotations[PodInputsAnnotation],
			"what the gateway asks of its pods changed")
		assert.Equal(t, before.cm.ResourceVersion, after.cm.ResourceVersion, "ConfigMap written")
		assert.Equal(t, before.svc.ResourceVersion, after.svc.ResourceVersion, "Service written")
		assert.Equal(t, before.ing.ResourceVersion, after.ing.ResourceVersion, "Ingress written")
		before = after
	})
	t.Run("routes change the configuration and the Ingress, not the pods", func(t *testing.T) {
		patchGateway(t, `{"spec":{"routes":[
			{"host":"shop.example.com","path":"/cart","backendService":{"name":"cart","port":8080}},
			{"host":"pay.example.com","path":"/","pathType":"Exact","backendService":{"name":"pay","port":9000}}]}}`)
		_, after := settled(t, gw)
		assert.Contains(t, after.cm.Data[configKey], "server_name pay.example.com;")
		assert.Equal(t, before.dep.ResourceVersion, after.dep.ResourceVersion, "Deployment written: the pods would roll")
		assert.Len(t, after.ing.Spec.Rules, 2)
		assert.Equal(t, int32(3), *after.dep.Spec.Replicas)
		assert.Equal(t, before.svc.ResourceVersion, after.svc.ResourceVersion, "Service written")
		before = after
	})
	t.Run("the Rollout strategy puts the configuration's hash on the pods", func(t *testing.T) {
		patchGateway(t, `{"spec":{"configUpdateStrategy":"Rollout"}}`)
		_, after := settled(t, gw)
		assert.Equal(t, configHash(after.cm.Data[configKey]), after.dep.Spec.Template.Annotations[ConfigHashAnnotation])
		assert.Contains(t, after.dep.Spec.Template.Spec.Containers[0].Command, "--watch=false")
		assert.Equal(t, before.cm.ResourceVersion, after.cm.ResourceVersion, "ConfigMap written")
		before = after

		patchGateway(t, `{"spec":{"routes":[{"host":"shop.example.com","path":"/cart","backendService":{"name":"cart","port":8080}}]}}`)
		_, after = settled(t, gw)
		hash := after.dep.Spec.Template.Annotations[ConfigHashAnnotation]
		assert.NotEqual(t, before.dep.Spec.Template.Annotations[ConfigHashAnnotation], hash, "the pods would not roll")
		assert.Equal(t, configHash(after.cm.Data[configKey]), hash)
	})
}

func TestHandEditsArePutBack(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "hand-edits")
	gw := gateway("edited", route("edited.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw = createGateway(t, gw)
	gw, ch := settled(t, gw)

	t.Run("a deleted Deployment comes back", func(t *testing.T) {
		require.NoError(t, env.Client.Delete(ctx, &ch.dep))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			dep := &appsv1.Deployment{}
			require.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), dep))
			assert.NotEqual(c, ch.dep.UID, dep.UID, "still the old Deployment")
			assert.Equal(c, ch.dep.Spec.Template.Annotations, dep.Spec.Template.Annotations)
		}, waitFor, tick)
	})
	t.Run("a hand-edited Service port is restored", func(t *testing.T) {
		res := env.Kubectl(ctx, nil, "patch", "service", gw.Name, "-n", ns, "--type=json",
			"-p", `[{"op":"replace","path":"/spec/ports/0/port","value":8081}]`)
		require.NoError(t, res.Err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			svc := &corev1.Service{}
			require.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), svc))
			require.Len(c, svc.Spec.Ports, 1)
			assert.Equal(c, int32(80), svc.Spec.Ports[0].Port)
			assert.Equal(c, ch.svc.Spec.ClusterIP, svc.Spec.ClusterIP, "the Service was recreated")
		}, waitFor, tick)
	})
	t.Run("a hand-edited configuration is restored", func(t *testing.T) {
		res := env.Kubectl(ctx, nil, "patch", "configmap", gw.Name+"-config", "-n", ns, "--type=merge",
			"-p", `{"data":{"`+configKey+`":"server { listen 8080; return 200; }"}}`)
		require.NoError(t, res.Err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			cm := &corev1.ConfigMap{}
			require.NoError(c, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: gw.Name + "-config"}, cm))
			assert.Equal(c, ch.cm.Data, cm.Data)
		}, waitFor, tick)
	})
	t.Run("removed labels are put back", func(t *testing.T) {
		// Without its labels the Ingress leaves the operator's cache: the
		// reconciler must still find out and apply it again.
		res := env.Kubectl(ctx, nil, "label", "ingress", gw.Name, "-n", ns, LabelManagedBy+"-")
		require.NoError(t, res.Err)
		res = env.Kubectl(ctx, nil, "annotate", "apigateway", gw.Name, "-n", ns, "touch=1")
		require.NoError(t, res.Err)
		// An annotation does not bump the generation; a Deployment event
		// makes the reconciler look at the gateway again.
		setDeploymentStatus(t, gw, 0)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			ing := &ch.ing
			require.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), ing))
			assert.Equal(c, FieldOwner, ing.Labels[LabelManagedBy])
		}, waitFor, tick)
	})
}

func TestKubectlScaleReachesTheDeployment(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "scale")
	gw := gateway("scaled", route("scaled.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw.Spec.Replicas = ptr.To[int32](1)
	gw = createGateway(t, gw)
	settled(t, gw)

	res := env.Kubectl(ctx, nil, "scale", "agw/scaled", "-n", ns, "--replicas=3")
	require.NoError(t, res.Err)
	_, ch := settled(t, gw)
	assert.Equal(t, int32(3), *ch.dep.Spec.Replicas)

	setDeploymentStatus(t, gw, 3)
	res = env.Kubectl(ctx, nil, "wait", "--for=condition=Ready", "agw/scaled", "-n", ns, "--timeout=30s")
	require.NoError(t, res.Err)
	res = env.Kubectl(ctx, nil, "get", "--raw", "/apis/example.com/v1/namespaces/"+ns+"/apigateways/scaled/scale")
	require.NoError(t, res.Err)
	assert.Contains(t, res.Stdout, `"replicas":3`)
	assert.Contains(t, res.Stdout, `"selector":"app.kubernetes.io/instance=scaled,app.kubernetes.io/name=apigateway"`)
}

func TestStatusFollowsTheDeployment(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "status")
	gw := gateway("followed", route("followed.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw.Spec.Replicas = ptr.To[int32](2)
	gw = createGateway(t, gw)
	settled(t, gw)

	cur := waitCondition(t, gw, v1.ConditionReady, "False", ReasonReplicasNotReady)
	assertCondition(t, cur.Status.Conditions, v1.ConditionProgressing, "True", ReasonRollingOut)
	assertCondition(t, cur.Status.Conditions, v1.ConditionDegraded, "False", ReasonChildrenApplied)

	setDeploymentStatus(t, gw, 2)
	cur = waitCondition(t, gw, v1.ConditionReady, "True", ReasonAllReplicasReady)
	assert.Equal(t, int32(2), cur.Status.ReadyReplicas)
	assertCondition(t, cur.Status.Conditions, v1.ConditionProgressing, "False", ReasonRolloutComplete)

	setDeploymentStatus(t, gw, 1)
	cur = waitCondition(t, gw, v1.ConditionReady, "False", ReasonReplicasNotReady)
	assert.Equal(t, int32(1), cur.Status.ReadyReplicas)
	assert.Equal(t, "1 of 2 replicas ready", meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady).Message)
}

func TestFailuresNameTheChild(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "failures")

	t.Run("a child the API server refuses", func(t *testing.T) {
		// The schema takes any quantities, and no webhook runs here to
		// refuse requests above limits; the Deployment's API does.
		gw := gateway("overcommitted", route("overcommitted.example.com", "/", v1.PathTypePrefix, "web", 80))
		gw.Namespace = ns
		gw.Spec.Resources = &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: mustQuantity(t, "2")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: mustQuantity(t, "1")},
		}
		gw = createGateway(t, gw)
		cur := waitCondition(t, gw, v1.ConditionDegraded, "True", ReasonApplyFailed)
		msg := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionDegraded).Message
		assert.Contains(t, msg, "Deployment overcommitted:")
		assert.NotContains(t, msg, "Service")
		assertCondition(t, cur.Status.Conditions, v1.ConditionReady, "False", ReasonApplyFailed)
		// The other children are still applied.
		svc := &corev1.Service{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), svc))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			reasons, err := gatewayEvents(ctx, gw)
			require.NoError(c, err)
			assert.Contains(c, reasons, "Warning ApplyFailed Deployment/overcommitted")
		}, waitFor, tick)
	})
	// A route the renderer refuses never gets this far: the schema refuses
	// it too (validation's TestRuleCases). TestTransientFailureRetriedBesideInvalidRoutes
	// reconciles one, as an object stored under an older schema would be.
}

// TestIdleGatewayWritesNothing proves that reconciling a gateway whose
// children and status already match costs no write: over a quiet window in
// which the test makes the reconciler run several times (by touching the
// children in ways that change nothing the operator owns), the manager sends
// no request but reads. So with pushes on: the serial stays while the
// template does.
func TestIdleGatewayWritesNothing(t *testing.T) {
	t.Run("pushes off", func(t *testing.T) { idleGatewayWritesNothing(t, false) })
	t.Run("pushes on", func(t *testing.T) { idleGatewayWritesNothing(t, true) })
}

func idleGatewayWritesNothing(t *testing.T, pushes bool) {
	ctx := context.Background()
	ns := newNamespace(t, "idle")
	op := startOperator(t, func(o *Options) {
		if pushes {
			key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: DefaultPushKeySecret}}
			require.NoError(t, env.Client.Create(ctx, key))
			o.PushKeySecret = client.ObjectKeyFromObject(key)
		}
	})
	gw := gateway("idle", route("idle.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw.Spec.Replicas = ptr.To[int32](2)
	gw.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{
		// Not in canonical form: the API server stores 500m in the
		// Deployment, which must still compare equal.
		corev1.ResourceCPU: mustQuantity(t, "0.5"),
	}}
	gw = createGateway(t, gw)
	_, ch := settled(t, gw)
	setDeploymentStatus(t, gw, 2)
	waitCondition(t, gw, v1.ConditionReady, "True", ReasonAllReplicasReady)

	// Let the writes of the start-up settle: wait for one second without any.
	require.Eventually(t, func() bool {
		n := len(op.writes.snapshot())
		time.Sleep(time.Second)
		return len(op.writes.snapshot()) == n
	}, waitFor, tick, "the operator kept writing: %v", op.writes.snapshot())

	start := len(op.writes.snapshot())
	reconcilesBefore := op.reconcileCount(ns + "/idle")
	window := time.Now().Add(3 * time.Second)
	for i, obj := range []client.Object{&ch.cm, &ch.dep, &ch.svc, &ch.ing} {
		// Another manager's label: a watch event, a reconcile, and nothing
		// the operator owns changed. (Not an annotation: that bumps a
		// Deployment's generation, which rightly turns Progressing on.)
		patch := []byte(`{"metadata":{"labels":{"example.com/touched":"` + string(rune('a'+i)) + `"}}}`)
		require.NoError(t, env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)))
		want := reconcilesBefore + i + 1
		require.Eventually(t, func() bool { return op.reconcileCount(ns+"/idle") >= want }, waitFor, tick,
			"touching %T did not reconcile the gateway", obj)
	}
	time.Sleep(time.Until(window))
	writes := op.writes.snapshot()[start:]
	reconciles := op.reconcileCount(ns+"/idle") - reconcilesBefore
	t.Logf("quiet window of 3s: %d reconciles of the idle gateway, %d writes", reconciles, len(writes))
	assert.GreaterOrEqual(t, reconciles, 4)
	assert.Empty(t, writes, "an idle gateway caused writes")
}
