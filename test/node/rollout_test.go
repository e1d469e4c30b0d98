package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/push"
	"example.com/apigateway-operator/render"
	"example.com/apigateway-operator/test/testenv"
)

// TestBackendRolloutWithRetries is issue 37's endpoint churn on the real
// node: a gateway routes, with retries, to a Deployment of three echo
// pods, whose ready endpoints the gateway's configuration lists (the
// kube-controller-manager's EndpointSlice controller writes the slices).
// `kubectl rollout restart` replaces the pods one at a time while a
// keep-alive client asks the route through the gateway pod every 10 ms:
// no request fails, and the configuration ends listing exactly the new
// pods. It logs how long the rollout took and how many configurations
// the gateway pod loaded from pushes meanwhile (each a reload), for
// docs/benchmarks.md; it asserts no timing.
func TestBackendRolloutWithRetries(t *testing.T) {
	ctx := t.Context()
	startServiceDNS(t)
	ns := testenv.NewNamespace(t, env.Client, "rollout")
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: controller.DefaultPushKeySecret}}
	require.NoError(t, env.Client.Create(ctx, key))
	startOperator(t, func(o *controller.Options) { o.PushKeySecret = client.ObjectKeyFromObject(key) })

	backend := echoDeployment(ns, "web", 3)
	require.NoError(t, env.Client.Create(ctx, backend))
	require.NoError(t, env.Client.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backend.Name},
		Spec: corev1.ServiceSpec{Selector: backend.Spec.Selector.MatchLabels,
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromString("http")}}},
	}))
	rolledOut(t, backend)

	gw := &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: v1.APIGatewaySpec{Image: GatewayImage, Replicas: ptr.To[int32](1), Routes: []v1.Route{{
			Host: v1.Hostname(gatewayHost(ns)), Path: steadyPath, PathType: v1.PathTypePrefix,
			BackendService: v1.BackendService{Name: v1.ServiceName(backend.Name), Port: 8080},
			Retries:        &v1.RouteRetries{Attempts: 2},
		}}},
	}
	require.NoError(t, env.Client.Create(ctx, gw))
	for _, cond := range []string{"Live", "Ready"} {
		res := env.Kubectl(ctx, nil, "wait", "--for=condition="+cond, "agw/"+gw.Name, "-n", ns, "--timeout=2m")
		require.NoError(t, res.Err, "%s", res.Stderr)
	}
	before := awaitEndpointsListed(t, gw, backend)
	pods := gatewayPods(t, gw)
	require.Len(t, pods, 1)

	stream := startSteadyStream(ctx, pods[0].Status.PodIP, gatewayHost(ns))
	started := time.Now()
	res := env.Kubectl(ctx, nil, "rollout", "restart", "deployment/"+backend.Name, "-n", ns)
	require.NoError(t, res.Err, "%s", res.Stderr)
	rolledOut(t, backend)
	took := time.Since(started)
	after := awaitEndpointsListed(t, gw, backend)
	awaitLive(t, gw)
	stream.stop()

	loaded := 0
	for serial := range pushLines(t, pods[0]) {
		if serial > before && serial <= after {
			loaded++
		}
	}
	t.Logf("B10r: rollout restart of %d backend pods took %s; the gateway pod loaded %d pushed configurations (%.0f a minute); "+
		"%d requests through the gateway pod meanwhile, %d failed %v",
		*backend.Spec.Replicas, took.Round(time.Millisecond), loaded, float64(loaded)/took.Minutes(),
		stream.sent.Load(), len(stream.failures), stream.failures)
	assert.Positive(t, loaded, "the gateway pod loaded no pushed configuration during the rollout")
	assert.Empty(t, stream.failures, "requests to the route with retries failed during the backend's rollout")
}

// echoDeployment is a Deployment of replicas echo pods named name in ns.
func echoDeployment(ns, name string, replicas int32) *appsv1.Deployment {
	pod := echoPod(ns, name)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: pod.Labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels}, Spec: pod.Spec},
		},
	}
}

// rolledOut waits until d's rollout is complete: every replica updated
// and available.
func rolledOut(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	res := env.Kubectl(t.Context(), nil, "rollout", "status", "deployment/"+d.Name, "-n", d.Namespace, "--timeout=3m")
	require.NoError(t, res.Err, "%s\n%s", res.Stderr, env.Kubectl(t.Context(), nil, "get", "deploy,rs,pods", "-n", d.Namespace, "-o", "wide").Stdout)
}

// awaitEndpointsListed waits until gw's configuration lists exactly the
// ready pods of backend as upstream servers, and returns the
// configuration's push serial then (a number that only grows, not a
// count).
func awaitEndpointsListed(t *testing.T, gw *v1.APIGateway, backend *appsv1.Deployment) uint64 {
	t.Helper()
	var serial uint64
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var pods corev1.PodList
		require.NoError(c, env.Client.List(t.Context(), &pods, client.InNamespace(backend.Namespace), client.MatchingLabels(backend.Spec.Selector.MatchLabels)))
		var want []string
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp == nil && podReady(p) {
				want = append(want, fmt.Sprintf("server %s:8080;", p.Status.PodIP))
			}
		}
		require.Len(c, want, int(*backend.Spec.Replicas))
		var cm corev1.ConfigMap
		require.NoError(c, env.Client.Get(t.Context(), client.ObjectKey{Namespace: gw.Namespace, Name: gw.Name + "-config"}, &cm))
		var listed []string
		for line := range strings.Lines(cm.Data[render.ConfigKey]) {
			if l := strings.TrimSpace(line); strings.HasPrefix(l, "server ") && strings.HasSuffix(l, ":8080;") {
				listed = append(listed, l)
			}
		}
		assert.ElementsMatch(c, want, listed)
		id, err := push.ParseIdentity([]byte(cm.Data[push.IdentityKey]))
		require.NoError(c, err)
		serial = id.Serial
	}, 2*time.Minute, 100*time.Millisecond, "the gateway's configuration does not list the backend's ready pods")
	return serial
}
