package failure

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/internal/testenv"
)

// The API server stops and starts again while the operator runs. The
// operator's watches reconnect on their own: a gateway changed and one
// created after the restart are both reconciled.
func TestAPIServerRestart(t *testing.T) {
	cp := startOwnControlPlane(t)
	c, err := client.New(cp.Config, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	ctx := context.Background()

	opts := env.ManagerOptions()
	start(t, newOperator(t, cp.Config, opts))
	ns := newNamespace(t, c, "restart")
	before := gateway(ns, "before")
	require.NoError(t, c.Create(ctx, before))
	waitReconciled(t, c, before)

	apiServer := cp.ControlPlane.APIServer
	port := apiServer.Port
	t0 := time.Now()
	stopAPIServer(t, apiServer)
	t.Logf("stopped in %v", time.Since(t0))
	require.NoError(t, apiServer.Start())
	t.Logf("started in %v", time.Since(t0))
	require.Equal(t, port, apiServer.Port, "the API server came back on another port")

	// Written right after the restart, maybe before the watches are back.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(before), before))
	before.Spec.Replicas = ptr.To[int32](3)
	require.NoError(t, c.Update(ctx, before))
	after := gateway(ns, "after")
	require.NoError(t, c.Create(ctx, after))

	waitReconciled(t, c, after)
	t.Logf("reconciled in %v", time.Since(t0))
	dep := waitReconciled(t, c, before)
	assert.Equal(t, int32(3), *dep.Spec.Replicas)
	cur := &v1.APIGateway{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(before), cur))
	assert.Equal(t, cur.Generation, cur.Status.ObservedGeneration)
}

// stopAPIServer stops the API server. With the operator's watches open,
// kube-apiserver drains them for longer than a test should wait; envtest
// then kills it, which makes this a crash and restart rather than a clean
// one: the operator must recover either way.
func stopAPIServer(t *testing.T, s *envtest.APIServer) {
	t.Helper()
	if err := s.Stop(); err != nil {
		require.ErrorContains(t, err, "timeout waiting for process kube-apiserver to stop")
	}
}

// startOwnControlPlane starts a control plane for one test. Its API server
// keeps its certificates in a fixed directory: envtest would otherwise
// issue a new serving CA on restart, which clients holding the first one
// would refuse.
func startOwnControlPlane(t *testing.T) *envtest.Environment {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(env.Root, "bin", "k8s")
	}
	cp := &envtest.Environment{
		Scheme:                testenv.NewScheme(),
		BinaryAssetsDirectory: assets,
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths:              []string{filepath.Join(env.Root, "manifests", "crd", "bases")},
			ErrorIfPathMissing: true,
		},
	}
	apiServer := cp.ControlPlane.GetAPIServer()
	apiServer.CertDir = t.TempDir()
	// See stopAPIServer.
	cp.ControlPlaneStopTimeout = 5 * time.Second
	_, err := cp.Start()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cp.Stop()) })
	return cp
}
