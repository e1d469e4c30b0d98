package node

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/render"
	"example.com/apigateway-operator/test/testenv"
)

// pushChanges is how many route changes TestRouteChangesArePushedToEveryPod
// makes: B8n's sample.
const pushChanges = 20

// TestRouteChangesArePushedToEveryPod is B8n: with pushes on and the
// kubelet's default syncFrequency (a minute, so the ConfigMap volume
// follows 31-81 s after a write), each of pushChanges route changes is
// served by every ready pod of a two-replica gateway, without new pods.
// It logs, from the write of each change to the first 200 on its new
// route on every pod, the median and the 99th percentile (the largest of
// 20), for docs/benchmarks.md; it asserts no timing.
func TestRouteChangesArePushedToEveryPod(t *testing.T) {
	ctx := t.Context()
	startServiceDNS(t)
	ns := testenv.NewNamespace(t, env.Client, "push")
	backend := startBackend(t, ns)
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: controller.DefaultPushKeySecret}}
	require.NoError(t, env.Client.Create(ctx, key))
	startOperator(t, func(o *controller.Options) { o.PushKeySecret = client.ObjectKeyFromObject(key) })
	gw := newGateway(ns, "shop", backend, 2)
	require.NoError(t, env.Client.Create(ctx, gw))
	res := env.Kubectl(ctx, nil, "wait", "--for=condition=Live", "agw/"+gw.Name, "-n", ns, "--timeout=2m")
	require.NoError(t, res.Err, "%s", res.Stderr)
	var pods corev1.PodList
	require.NoError(t, env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{controller.LabelInstance: gw.Name}))
	require.Len(t, pods.Items, 2)

	// took is from the write of a change to its first 200 on both pods;
	// written, to the ConfigMap holding it (the operator's share).
	var took, written []time.Duration
	for i := range pushChanges {
		path := fmt.Sprintf("/change-%d", i)
		patch := client.MergeFrom(gw.DeepCopy())
		gw.Spec.Routes[0].Path = v1.HTTPPath(path)
		changed := time.Now()
		require.NoError(t, env.Client.Patch(ctx, gw, patch))
		require.Eventually(t, func() bool {
			var cm corev1.ConfigMap
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: gw.Name + "-config"}, &cm)
			return err == nil && strings.Contains(cm.Data[render.ConfigKey], path)
		}, routeChangeWait, 5*time.Millisecond, "the ConfigMap never routed %s", path)
		written = append(written, time.Since(changed))
		for _, pod := range pods.Items {
			require.Eventually(t, func() bool {
				return statusThrough(ctx, pod.Status.PodIP, gatewayHost(ns), path+"/7") == http.StatusOK
			}, routeChangeWait, 5*time.Millisecond, "pod %s never served %s", pod.Name, path)
		}
		took = append(took, time.Since(changed))
	}
	var now corev1.PodList
	require.NoError(t, env.Client.List(ctx, &now, client.InNamespace(ns), client.MatchingLabels{controller.LabelInstance: gw.Name}))
	require.ElementsMatch(t, podUIDs(pods), podUIDs(now), "the pods were replaced")
	slices.Sort(took)
	slices.Sort(written)
	t.Logf("B8n: from the write of a route change to its first 200 on both pods, over %d changes: p50 %s, p99 %s, min %s; "+
		"to the ConfigMap holding it: p50 %s, p99 %s",
		len(took), took[len(took)/2].Round(time.Millisecond), took[len(took)*99/100].Round(time.Millisecond), took[0].Round(time.Millisecond),
		written[len(written)/2].Round(time.Millisecond), written[len(written)*99/100].Round(time.Millisecond))
}
