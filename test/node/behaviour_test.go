package node

import (
	"slices"
	"testing"

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

// gatewayPods are gw's pods that are not being deleted.
func gatewayPods(t testing.TB, gw *v1.APIGateway) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	require.NoError(t, env.Client.List(t.Context(), &pods, client.InNamespace(gw.Namespace), client.MatchingLabels{controller.LabelInstance: gw.Name}))
	return slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}
