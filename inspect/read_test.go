package inspect

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/operatortest"
	"example.com/apigateway-operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

// TestReadThroughTheAPIServer: status reads a running operator's gateway
// through a real API server: the children the operator built, and a pod
// the API server will not proxy to (its address is loopback) reported
// with the API server's reason, not left out. The pods' real answers are
// read on the node (test/node).
func TestReadThroughTheAPIServer(t *testing.T) {
	ctx := t.Context()
	ns := testenv.NewNamespace(t, env.Client, "status")
	operatortest.Start(t, env, operatortest.Options{Controller: &controller.Options{DefaultImage: "nginx:1.29", ReloaderImage: "apigateway-operator:test"}})
	gw := &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: v1.APIGatewaySpec{Image: "nginx:1.29", Replicas: ptr.To[int32](2), Routes: []v1.Route{{Host: "status.example.com", Path: "/",
			PathType: v1.PathTypePrefix, BackendService: v1.BackendService{Name: "web", Port: 80}}}}}
	require.NoError(t, env.Client.Create(ctx, gw))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-0", Labels: controller.ChildSelectorLabels(gw)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "gateway", Image: "nginx:1.29"}}}}
	require.NoError(t, env.Client.Create(ctx, pod))
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}}}
	require.NoError(t, env.Client.Status().Update(ctx, pod))

	var r Report
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		in, warnings, err := Read(ctx, env.Config, ns, gw.Name)
		require.NoError(c, err)
		assert.Empty(c, warnings)
		r = Build(in)
		kinds := map[string]bool{}
		for _, ch := range r.Children {
			kinds[ch.Kind] = true
		}
		for _, k := range []string{"ConfigMap", "Deployment", "Service", "Ingress", "PodDisruptionBudget"} {
			assert.True(c, kinds[k], "no %s among %v", k, r.Children)
		}
	}, time.Minute, 100*time.Millisecond)
	assert.NotEmpty(t, r.Configuration)
	require.Len(t, r.Pods, 1)
	assert.Equal(t, "shop-0", r.Pods[0].Name)
	assert.Contains(t, r.Pods[0].Unread, "the API server's proxy")

	_, _, err := Read(ctx, env.Config, ns, "absent")
	require.Error(t, err)
}
