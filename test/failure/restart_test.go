package failure

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/testenv"
)

// The API server stops and starts again while the operator runs. The
// operator's watches reconnect on their own: a gateway changed and one
// created after the restart are both reconciled.
func TestAPIServerRestart(t *testing.T) {
	own := startOwnControlPlane(t)
	c, err := client.NewWithWatch(own.Config, client.Options{Scheme: own.Scheme})
	require.NoError(t, err)
	ctx := context.Background()

	opts := own.ManagerOptions()
	start(t, newOperator(t, own.Config, opts))
	ns := testenv.NewNamespace(t, c, "restart")
	before := gateway(ns, "before")
	require.NoError(t, c.Create(ctx, before))
	testenv.AwaitReconciled(t, c, client.ObjectKeyFromObject(before), waitFor)

	// A watch open across the restart must end: what the operator's
	// watches go through is a real outage.
	w, err := c.Watch(ctx, &v1.APIGatewayList{}, client.InNamespace(ns))
	require.NoError(t, err)
	defer w.Stop()
	t0 := time.Now()
	require.NoError(t, own.RestartAPIServer(ctx))
	t.Logf("restarted in %v", time.Since(t0))
	requireEnded(t, w)

	// Written right after the restart, maybe before the watches are back.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(before), before))
	before.Spec.Replicas = ptr.To[int32](3)
	require.NoError(t, c.Update(ctx, before))
	after := gateway(ns, "after")
	require.NoError(t, c.Create(ctx, after))

	testenv.AwaitReconciled(t, c, client.ObjectKeyFromObject(after), waitFor)
	t.Logf("reconciled in %v", time.Since(t0))
	_, ch := testenv.AwaitReconciled(t, c, client.ObjectKeyFromObject(before), waitFor)
	assert.Equal(t, int32(3), *ch.Deployment.Spec.Replicas)
	cur := &v1.APIGateway{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(before), cur))
	assert.Equal(t, cur.Generation, cur.Status.ObservedGeneration)
}

// requireEnded drains w until the API server closes it.
func requireEnded(t *testing.T, w watch.Interface) {
	t.Helper()
	timeout := time.After(waitFor)
	for {
		select {
		case _, open := <-w.ResultChan():
			if !open {
				return
			}
		case <-timeout:
			t.Fatal("a watch opened before the restart is still open: the API server did not go away")
		}
	}
}

// startOwnControlPlane starts a control plane for one test, so restarting
// its API server cannot disturb the other tests. With the operator's
// watches open, kube-apiserver drains them for up to its request timeout
// (a minute), longer than a test should wait: it is killed after a few
// seconds, which makes the restart a crash rather than a clean one. The
// operator must recover either way.
func startOwnControlPlane(t *testing.T) *testenv.Env {
	t.Helper()
	own, err := testenv.Start(testenv.Options{StopTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, own.Stop()) })
	return own
}
