package outage

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/manifests/policy"
	"example.com/apigateway-operator/test/operatortest"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

var env *testenv.Env

// The API server gets what the manifests install: the webhook
// configurations (validation failing open) and the defaults policy with
// its ConfigMap as shipped, empty until the operator writes its flags.
func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		Webhooks: envtest.WebhookInstallOptions{Paths: []string{"../../manifests/webhook"}},
		Policies: map[string]string{},
	})
}

const (
	waitFor = time.Minute
	tick    = 100 * time.Millisecond
)

// The operator's flags in this suite: values no test object sets itself.
var operatorDefaults = defaults.Operator{Image: "registry.example/outage-gateway:1.0", Replicas: 2}

// startOperator starts an operator (webhooks, reconciler and the policy's
// parameters, as main wires them) and waits until its webhook server
// serves and it has written its defaults for the policy. Stop stops it as
// when its last replica goes away.
func startOperator(t *testing.T) *testenv.Running {
	t.Helper()
	mgr := operatortest.NewManager(t, env, operatortest.Options{
		Webhooks:   &webhooks.Options{DefaultImage: operatorDefaults.Image, DefaultReplicas: operatorDefaults.Replicas},
		Controller: &controller.Options{DefaultImage: operatorDefaults.Image, ReloaderImage: "apigateway-operator:test", MaxConcurrentReconciles: 4},
	})
	params := types.NamespacedName{Namespace: policy.ParamsNamespace, Name: policy.ParamsName}
	require.NoError(t, mgr.Add(webhooks.PolicyParams{Reader: mgr.GetAPIReader(), Client: mgr.GetClient(),
		ConfigMap: params, Defaults: operatorDefaults, Every: 200 * time.Millisecond}))

	op := testenv.RunManager(t, mgr, waitFor)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, mgr.GetWebhookServer().StartedChecker()(nil))
		cm := &corev1.ConfigMap{}
		require.NoError(c, env.Client.Get(t.Context(), params, cm))
		require.Equal(c, operatorDefaults.PolicyData(), cm.Data)
	}, waitFor, tick, "the operator did not start serving and write its defaults")
	return op
}

// gateway is a gateway with one route per host/path pair, leaving image
// and replicas to the defaults.
func gateway(ns, name string, hostPaths ...string) *v1.APIGateway {
	gw := &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for i := 0; i+1 < len(hostPaths); i += 2 {
		gw.Spec.Routes = append(gw.Spec.Routes, v1.Route{Host: v1.Hostname(hostPaths[i]), Path: v1.HTTPPath(hostPaths[i+1]), PathType: v1.PathTypePrefix,
			BackendService: v1.BackendService{Name: "backend", Port: 8080}})
	}
	return gw
}

// complete is gw with image and replicas set.
func complete(gw *v1.APIGateway) *v1.APIGateway {
	gw = gw.DeepCopy()
	gw.Spec.Image, gw.Spec.Replicas = "nginx:1.27", ptr.To[int32](3)
	return gw
}

func get(t require.TestingT, key client.ObjectKey, obj client.Object) {
	require.NoError(t, env.Client.Get(context.Background(), key, obj))
}
