// Package hostclaims holds the reproductions of issue 40's host-ownership
// attacks to the real API server, with the operator's validating webhook
// (failing open, as the manifests install it) and its reconciler: an
// owner's re-create or two-step move keeps its host, names below an owned
// host are the owner's, a DomainBinding keeps a domain to its namespaces,
// and a host passes on only after its owner routed it nowhere for
// --host-release-after. An outage is the operator stopped: writes are
// then admitted unchecked, and the reconciler decides them when it is
// back.
package hostclaims

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/operatortest"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		Webhooks: envtest.WebhookInstallOptions{Paths: []string{"../../manifests/webhook"}},
	})
}

const (
	waitFor = time.Minute
	tick    = 100 * time.Millisecond
)

// startOperator runs the webhooks and the reconciler, as main wires them,
// with release as --host-release-after (0: the default), until Stop or
// the test's end.
func startOperator(t *testing.T, release time.Duration) *testenv.Running {
	t.Helper()
	op, _ := runOperator(t, release)
	return op
}

// runOperator is startOperator, and returns the manager too: its cache is
// what the webhooks and the reconciler decide from.
func runOperator(t *testing.T, release time.Duration) (*testenv.Running, manager.Manager) {
	t.Helper()
	mgr := operatortest.NewManager(t, env, operatortest.Options{
		Webhooks: &webhooks.Options{},
		Controller: &controller.Options{DefaultImage: "nginx:1.29", ReloaderImage: "apigateway-operator:test",
			MaxConcurrentReconciles: 2, HostReleaseAfter: release},
	})
	op := testenv.RunManager(t, mgr, waitFor)
	testenv.AwaitStarted(t, mgr, true, waitFor)
	return op, mgr
}

// outage stops op, runs write (the API server admits it unchecked: the
// webhook fails open) and starts the operator again.
func outage(t *testing.T, op *testenv.Running, release time.Duration, write func()) {
	t.Helper()
	op.Stop(t)
	write()
	startOperator(t, release)
}

// gateway is ns/name with a Prefix route per host/path pair.
func gateway(ns, name string, hostPaths ...string) *v1.APIGateway {
	gw := &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.APIGatewaySpec{Image: "nginx:1.29", Replicas: ptr.To[int32](1)}}
	for i := 0; i+1 < len(hostPaths); i += 2 {
		gw.Spec.Routes = append(gw.Spec.Routes, v1.Route{Host: v1.Hostname(hostPaths[i]), Path: v1.HTTPPath(hostPaths[i+1]),
			PathType: v1.PathTypePrefix, BackendService: v1.BackendService{Name: "backend", Port: 8080}})
	}
	return gw
}

// lend adds a delegation of host's prefixes to ns.
func lend(gw *v1.APIGateway, host, ns string, prefixes ...string) *v1.APIGateway {
	d := v1.HostDelegation{Host: v1.Hostname(host), Namespace: ns}
	for _, p := range prefixes {
		d.PathPrefixes = append(d.PathPrefixes, v1.HTTPPath(p))
	}
	gw.Spec.Delegations = append(gw.Spec.Delegations, d)
	return gw
}

func create(t *testing.T, gw *v1.APIGateway) error {
	t.Helper()
	gw = gw.DeepCopy()
	err := env.Client.Create(context.Background(), gw)
	if err == nil {
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), gw) })
	}
	return err
}

func mustCreate(t *testing.T, gw *v1.APIGateway) {
	t.Helper()
	require.NoError(t, create(t, gw), "creating %s/%s", gw.Namespace, gw.Name)
}

// update replaces gw's spec with spec's, as an apply would.
func update(t *testing.T, gw *v1.APIGateway) error {
	t.Helper()
	cur := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(gw), cur))
	cur.Spec = gw.Spec
	return env.Client.Update(context.Background(), cur)
}

// remove deletes gw and waits until it is gone (envtest has no garbage
// collector, but APIGateways carry no finalizer).
func remove(t *testing.T, gw *v1.APIGateway) {
	t.Helper()
	require.NoError(t, env.Client.Delete(context.Background(), gw.DeepCopy()))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(gw), &v1.APIGateway{})
		assert.True(c, apierrors.IsNotFound(err), "%v", err)
	}, waitFor, tick)
}

// awaitAccepted waits until gw's Accepted condition has status and
// reason, as the reconciler last decided it for gw's current generation.
func awaitAccepted(t *testing.T, gw *v1.APIGateway, status metav1.ConditionStatus, reason string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cur := &v1.APIGateway{}
		require.NoError(c, env.Client.Get(context.Background(), client.ObjectKeyFromObject(gw), cur))
		cond := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionAccepted)
		require.NotNil(c, cond)
		assert.Equal(c, cur.Generation, cond.ObservedGeneration)
		assert.Equal(c, string(status)+" "+reason, string(cond.Status)+" "+cond.Reason, cond.Message)
	}, waitFor, tick, "%s/%s", gw.Namespace, gw.Name)
}

// awaitRecord waits until host's HostClaim names namespace, and returns it.
func awaitRecord(t *testing.T, host, namespace string) *v1.HostClaim {
	t.Helper()
	rec := &v1.HostClaim{}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, env.Client.Get(context.Background(), client.ObjectKey{Name: v1.HostClaimName(host)}, rec))
		assert.Equal(c, namespace, rec.Spec.Namespace)
	}, waitFor, tick, "the HostClaim of %s", host)
	return rec
}

func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	return testenv.NewNamespace(t, env.Client, prefix)
}
