package failure

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/operatortest"
	"example.com/apigateway-operator/test/testenv"
)

// env is the shared control plane. The API server restart test starts its
// own, so restarting cannot disturb the other tests.
var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

const (
	// waitFor bounds every wait for the operator to act.
	waitFor = 45 * time.Second
	image   = "nginx:1.27"
)

// running is a manager started by start, stoppable before the test ends.
type running struct {
	mgr manager.Manager
	*testenv.Running
}

// start runs mgr until Stop or the end of the test (testenv.RunManager).
func start(t *testing.T, mgr manager.Manager) *running {
	t.Helper()
	return &running{mgr: mgr, Running: testenv.RunManager(t, mgr, waitFor)}
}

// newOperator builds a manager with the reconciler, as main wires it, for
// cfg with opts (leader election).
func newOperator(t *testing.T, cfg *rest.Config, opts manager.Options) manager.Manager {
	t.Helper()
	return operatortest.NewManager(t, env, operatortest.Options{Config: cfg, UserAgent: "apigateway-operator-failure-test", Manager: &opts,
		Controller: &controller.Options{DefaultImage: image, ReloaderImage: "apigateway-operator:test", MaxConcurrentReconciles: 2}})
}

// gateway is a complete gateway (no webhook runs in this suite's API server).
// Its host is its own: of two gateways serving one route, only the older
// serves it (the reconciler's conflict resolution).
func gateway(ns, name string) *v1.APIGateway {
	return &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.APIGatewaySpec{
			Image:    image,
			Replicas: ptr.To[int32](1),
			Routes: []v1.Route{{Host: v1.Hostname(name + "." + ns + ".example.com"), Path: "/users/", PathType: v1.PathTypePrefix,
				BackendService: v1.BackendService{Name: "users", Port: 8080}}},
		},
	}
}
