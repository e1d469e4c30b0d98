package flood

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/test/testenv"
)

var (
	env *testenv.Env
	// clientCA is the CA of the client certificate the API server
	// presents to the admission webhooks.
	clientCA string
)

// TestMain starts a control plane to flood (EnvOptions).
func TestMain(m *testing.M) {
	opts, err := EnvOptions(&clientCA)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testenv.Main(m, &env, opts)
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
	ns := testenv.NewNamespace(t, env.Client, "flood")
	holder := Gateway(ns, "holder", "/held/")
	require.NoError(t, env.Client.Create(ctx, holder))
	require.NoError(t, WaitWebhooksAnswer(ctx, env.Client, ns, "/held/"))
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
		err := env.Client.Create(ctx, Gateway(ns, fmt.Sprintf("conflict-%d", i), "/held/"))
		took := time.Since(t0)
		require.True(t, apierrors.IsInvalid(err), "create %d, whose route another gateway serves, answered after %v: %v "+
			"(admitted: the validating webhook was skipped)", i, took, err)
		assert.Contains(t, err.Error(), "already served by APIGateway "+ns+"/holder")
		require.NoError(t, env.Client.Create(ctx, Gateway(ns, fmt.Sprintf("free-%d", i), fmt.Sprintf("/free-%d/", i))))

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

// startOperator builds and starts the operator binary (StartOperatorFor)
// and returns it and its webhook address.
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
	logFile := filepath.Join(t.TempDir(), "operator.log")
	op, addr, err := StartOperatorFor(t.Context(), env, binary, clientCA, logFile)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = op.Stop()
		if t.Failed() {
			out, _ := os.ReadFile(logFile)
			t.Logf("operator log:\n%s", tail(out, 64<<10))
		}
	})
	return op, addr
}

func tail(b []byte, n int) []byte { return b[max(0, len(b)-n):] }
