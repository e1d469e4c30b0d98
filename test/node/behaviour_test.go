package node

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/testenv"
)

// A gateway whose image the node cannot pull says so: Ready is False with
// the kubelet's reason, naming the pod and the image, and `kubectl get
// agw` shows the reason.
func TestGatewayImageMissing(t *testing.T) {
	ctx := t.Context()
	ns := testenv.NewNamespace(t, env.Client, "missing")
	startOperator(t)
	const image = "apigateway.test/missing:1"
	gw := newGateway(ns, "lost", echoPod(ns, "nobody-home"), 1)
	gw.Spec.Image = image
	require.NoError(t, env.Client.Create(ctx, gw))

	var ready *metav1.Condition
	require.Eventually(t, func() bool {
		cur := &v1.APIGateway{}
		if env.Client.Get(ctx, client.ObjectKeyFromObject(gw), cur) != nil {
			return false
		}
		ready = meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady)
		return ready != nil && (ready.Reason == "ErrImagePull" || ready.Reason == "ImagePullBackOff")
	}, waitFor, tick, "Ready never named the image pull: %+v\n%s", ready,
		env.Kubectl(ctx, nil, "get", "agw,pods", "-n", ns, "-o", "yaml").Stdout)
	t.Logf("Ready: %s: %s", ready.Reason, ready.Message)
	pods := gatewayPods(t, gw)
	require.Len(t, pods, 1)
	require.Contains(t, ready.Message, "pod "+pods[0].Name+", container nginx")
	require.Contains(t, ready.Message, `(image "`+image+`")`)

	res := env.Kubectl(ctx, nil, "get", "agw", gw.Name, "-n", ns)
	require.NoError(t, res.Err, "%s", res.Stderr)
	require.Regexp(t, `ErrImagePull|ImagePullBackOff`, res.Stdout)
}

// With configUpdateStrategy Rollout a route change replaces the pods:
// new ones serve it, none of the old ones is left (the default strategy
// keeps them: TestGatewayPodServes).
func TestGatewayRolloutReplacesPods(t *testing.T) {
	ctx := t.Context()
	startServiceDNS(t)
	ns := testenv.NewNamespace(t, env.Client, "rollout")
	backend := startBackend(t, ns)
	startOperator(t)
	gw := newGateway(ns, "roll", backend, 2)
	gw.Spec.ConfigUpdateStrategy = v1.ConfigUpdateRollout
	require.NoError(t, env.Client.Create(ctx, gw))
	awaitLive(t, gw)
	before := gatewayPods(t, gw)
	require.Len(t, before, 2)

	addRoute(t, gw, "/orders")
	changed := time.Now()
	old := podUIDs(corev1.PodList{Items: before})
	var after []corev1.Pod
	require.Eventually(t, func() bool {
		after = gatewayPods(t, gw)
		return len(after) == 2 && !slices.ContainsFunc(after, func(p corev1.Pod) bool {
			return slices.Contains(old, string(p.UID)) || !podReady(&p) ||
				statusThrough(ctx, p.Status.PodIP, gatewayHost(ns), "/orders/7") != http.StatusOK
		})
	}, waitFor, tick, "the pods were not replaced by ones serving the new route: %v", podUIDs(corev1.PodList{Items: after}))
	t.Logf("2 new pods served the new route %s after the change", time.Since(changed).Round(time.Millisecond))
	awaitLive(t, gw)
}

// The nginx container killed on the node (as an OOM kill or a crash
// would) is restarted by the kubelet in the same pod: the reloader the
// init container copied into the pod's emptyDir is still there, so the
// restarted container serves the routes again and the gateway is Live.
func TestGatewayContainerRestarts(t *testing.T) {
	ctx := t.Context()
	startServiceDNS(t)
	ns := testenv.NewNamespace(t, env.Client, "restart")
	backend := startBackend(t, ns)
	startOperator(t)
	gw := newGateway(ns, "phoenix", backend, 1)
	require.NoError(t, env.Client.Create(ctx, gw))
	awaitLive(t, gw)
	pods := gatewayPods(t, gw)
	require.Len(t, pods, 1)
	pod := pods[0]
	id := containerID(t, &pod, "nginx")

	_, err := env.ControlPlane().Ctr(ctx, "tasks", "kill", "--signal", "SIGKILL", id)
	require.NoError(t, err)
	killed := time.Now()
	var cur corev1.Pod
	require.Eventually(t, func() bool {
		if env.Client.Get(ctx, client.ObjectKeyFromObject(&pod), &cur) != nil {
			return false
		}
		s := containerStatus(&cur, "nginx")
		return s != nil && s.RestartCount > 0 && podReady(&cur)
	}, waitFor, tick, "the container was not restarted: %s", describe(&cur))
	t.Logf("the container restarted and the pod Ready %s after the kill", time.Since(killed).Round(time.Millisecond))
	require.Equal(t, pod.UID, cur.UID)
	require.Equal(t, initStarted(&pod), initStarted(&cur), "the init container ran again")
	code := 0
	if !assert.Eventually(t, func() bool {
		code = statusThrough(ctx, cur.Status.PodIP, gatewayHost(ns), "/users/1")
		return code == http.StatusOK
	}, waitFor, tick, "the restarted container does not serve") {
		logs := env.Kubectl(ctx, nil, "logs", "-n", ns, cur.Name, "-c", "nginx")
		previous := env.Kubectl(ctx, nil, "logs", "-n", ns, cur.Name, "-c", "nginx", "--previous")
		t.Fatalf("last answer %d; the restarted container's log:\n%s%s\nthe killed one's:\n%s%s",
			code, logs.Stdout, logs.Stderr, previous.Stdout, previous.Stderr)
	}
	awaitLive(t, gw)
}

// awaitLive waits for gw's Live condition of its current generation.
func awaitLive(t testing.TB, gw *v1.APIGateway) {
	t.Helper()
	res := env.Kubectl(t.Context(), nil, "wait", "--for=condition=Live", "agw/"+gw.Name, "-n", gw.Namespace, "--timeout=3m")
	require.NoError(t, res.Err, "%s\n%s", res.Stderr, env.Kubectl(t.Context(), nil, "get", "agw,deploy,pods", "-n", gw.Namespace, "-o", "yaml").Stdout)
}

// addRoute adds to gw a copy of its first route on path.
func addRoute(t testing.TB, gw *v1.APIGateway, path string) {
	t.Helper()
	patch := client.MergeFrom(gw.DeepCopy())
	route := gw.Spec.Routes[0]
	route.Path = v1.HTTPPath(path)
	gw.Spec.Routes = append(gw.Spec.Routes, route)
	require.NoError(t, env.Client.Patch(t.Context(), gw, patch))
}

// gatewayPods are gw's pods that are not being deleted.
func gatewayPods(t testing.TB, gw *v1.APIGateway) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	require.NoError(t, env.Client.List(t.Context(), &pods, client.InNamespace(gw.Namespace), client.MatchingLabels{controller.LabelInstance: gw.Name}))
	return slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if s := &pod.Status.ContainerStatuses[i]; s.Name == name {
			return s
		}
	}
	return nil
}

// containerID is the containerd ID of pod's container name, which is
// also its task's.
func containerID(t testing.TB, pod *corev1.Pod, name string) string {
	t.Helper()
	s := containerStatus(pod, name)
	require.NotNil(t, s, "pod %s has no container %s", pod.Name, name)
	id, ok := strings.CutPrefix(s.ContainerID, "containerd://")
	require.True(t, ok, "container ID %q", s.ContainerID)
	return id
}

// initStarted is when pod's init container started, each time it ran.
func initStarted(pod *corev1.Pod) []string {
	var out []string
	for _, s := range pod.Status.InitContainerStatuses {
		if s.State.Terminated != nil {
			out = append(out, s.Name+" "+s.State.Terminated.StartedAt.String())
		}
	}
	return out
}
