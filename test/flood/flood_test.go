package flood

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/test/controlplane"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

const image = "nginx:1.27"

var (
	env *testenv.Env
	// clientCA is the CA of the client certificate the API server
	// presents to the admission webhooks.
	clientCA string
)

// TestMain starts a control plane whose API server presents a client
// certificate to admission webhooks (as make run's does and the README
// tells cluster admins to), with the webhook configurations and the
// defaults policy the manifests install.
func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		Webhooks: envtest.WebhookInstallOptions{Paths: []string{"../../manifests/webhook"}, IgnoreSchemeConvertible: true},
		APIServer: func(dir string) (map[string]string, error) {
			a, err := controlplane.WriteWebhookClientAuth(dir, "*", time.Now())
			clientCA = a.CA
			return a.Flags, err
		},
		Policies: webhooks.PolicyParamsData(webhooks.Defaults{Image: image, Replicas: 1}),
	})
}

// maxRSS bounds the operator's resident memory, at its highest, through
// the flood: its heap and everything else. The operator's budget here is
// 128 MiB (a quarter of the manifest's 512 MiB limit, as GOMEMLIMIT);
// before the webhook server bounded headers, 300 connections of
// unfinished headers took it from 85 MB to 868 MB.
const maxRSS = 256 << 10 // KiB

// TestFloodDoesNotStarveTheAPIServer runs the operator binary as its own
// process and, from another address (127.0.0.2) as an attacker's pod
// would, the attack of issue 23: 300 connections sending an unfinished
// header of 1 MiB, 300 idle connections, one /convert request declaring
// the largest body the server accepts and eight small ones, each sending
// a byte a second. Meanwhile, through the API server: a create whose
// route another gateway serves is refused (the validating webhook
// answered within the API server's 5 s timeout; had it not, the API
// server would have failed open and admitted it), a create that conflicts
// with nothing is admitted, and v1alpha1 reads convert. The operator's
// RSS stays under maxRSS.
//
// FLOOD_OPERATOR names another build of the operator to attack (e.g. one
// from before the webhook server's limits).
func TestFloodDoesNotStarveTheAPIServer(t *testing.T) {
	ctx := t.Context()
	op, addr := startOperator(t)
	ns := newNamespace(t)
	holder := gateway(ns, "holder", "/held/")
	require.NoError(t, env.Client.Create(ctx, holder))
	waitWebhooksAnswer(t, ns)
	before, err := op.MemoryKiB("VmRSS")
	require.NoError(t, err)

	attack, err := Start(ctx, Target{Addr: addr, Source: "127.0.0.2"}, IssuePlan)
	require.NoError(t, err)
	defer attack.Stop()
	// The flood is on once every connection was opened at least once
	// and every slow body has begun.
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		s := attack.Stats()
		return s.Opened >= int64(IssuePlan.Headers+IssuePlan.Idle) && s.BodiesStarted >= int64(IssuePlan.LargeBodies+IssuePlan.SmallBodies), nil
	}), "the flood did not start: %+v", attack.Stats())

	for i := range 5 {
		t0 := time.Now()
		err := env.Client.Create(ctx, gateway(ns, fmt.Sprintf("conflict-%d", i), "/held/"))
		took := time.Since(t0)
		require.True(t, apierrors.IsInvalid(err), "create %d, whose route another gateway serves, answered after %v: %v "+
			"(admitted: the validating webhook was skipped)", i, took, err)
		assert.Contains(t, err.Error(), "already served by APIGateway "+ns+"/holder")
		require.NoError(t, env.Client.Create(ctx, gateway(ns, fmt.Sprintf("free-%d", i), fmt.Sprintf("/free-%d/", i))))

		got := &v1alpha1.APIGateway{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(holder), got), "a v1alpha1 GET")
		list := &v1alpha1.APIGatewayList{}
		require.NoError(t, env.Client.List(ctx, list, client.InNamespace(ns)), "a v1alpha1 LIST")
		assert.Len(t, list.Items, 2+i)
	}
	stats := attack.Stats()
	hwm, err := op.MemoryKiB("VmHWM")
	require.NoError(t, err)
	t.Logf("attack: %+v; operator RSS %d MiB before, %d MiB at the most", stats, before>>10, hwm>>10)
	assert.Less(t, hwm, int64(maxRSS), "the operator's peak RSS in KiB")
	assert.False(t, op.Exited(), "the operator is still running")
}

// startOperator builds and starts the operator binary, serving the
// webhooks where the installed configurations point, with client
// authentication and the memory limit of the manifests, and returns it
// and its webhook address.
func startOperator(t *testing.T) (*Operator, string) {
	t.Helper()
	binary := os.Getenv("FLOOD_OPERATOR")
	if binary == "" {
		binary = filepath.Join(t.TempDir(), "apigateway-operator")
		build := exec.Command("go", "build", "-o", binary, "./cmd/apigateway-operator")
		build.Dir = env.Root
		out, err := build.CombinedOutput()
		require.NoError(t, err, "building the operator:\n%s", out)
	}
	w := env.Webhooks
	probe := freeAddr(t)
	args := []string{
		"--kubeconfig=" + env.Kubeconfig,
		"--cert-mode=files", "--cert-dir=" + w.LocalServingCertDir,
		"--cert-mutating-webhook-configuration=", "--cert-validating-webhook-configuration=", "--cert-crd=",
		"--webhook-port=" + strconv.Itoa(w.LocalServingPort), "--webhook-client-ca=" + clientCA,
		"--metrics-bind-address=0", "--health-probe-bind-address=" + probe,
		"--default-gateway-image=" + image, "--policy-params=",
	}
	logFile := filepath.Join(t.TempDir(), "operator.log")
	op, err := StartOperator(t.Context(), binary, args, []string{"GOMEMLIMIT=536870912"}, logFile, "http://"+probe+"/readyz")
	require.NoError(t, err)
	t.Cleanup(func() {
		op.Stop()
		if t.Failed() {
			out, _ := os.ReadFile(logFile)
			t.Logf("operator log:\n%s", tail(out, 64<<10))
		}
	})
	return op, net.JoinHostPort(w.LocalServingHost, strconv.Itoa(w.LocalServingPort))
}

func tail(b []byte, n int) []byte { return b[max(0, len(b)-n):] }

// freeAddr is a free 127.0.0.1 address.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// waitWebhooksAnswer waits until the API server calls the validating
// webhook: a dry-run create of a route another gateway serves is refused.
func waitWebhooksAnswer(t *testing.T, ns string) {
	t.Helper()
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := env.Client.Create(ctx, gateway(ns, "probe", "/held/"), client.DryRunAll)
		return apierrors.IsInvalid(err), nil
	}))
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "flood-"}}
	require.NoError(t, env.Client.Create(t.Context(), ns))
	return ns.Name
}

// gateway is a complete gateway with one route on api.example.com.
func gateway(ns, name, path string) *v1.APIGateway {
	return &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.APIGatewaySpec{Image: image, Replicas: ptr.To[int32](2), Routes: []v1.Route{{
			Host: "api.example.com", Path: path, PathType: v1.PathTypePrefix,
			BackendService: v1.BackendService{Name: "svc", Port: 80},
		}}},
	}
}
