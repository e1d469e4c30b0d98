package controller

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/testenv"
)

var env *testenv.Env

// The cluster has Gateway API, so the operator applies HTTPRoutes; a
// cluster that gains and loses it is test/gatewayapi's (and test/e2e's).
func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{GatewayAPI: true}) }

const (
	waitFor = 30 * time.Second
	tick    = 100 * time.Millisecond
)

// operator is a running manager with the reconciler, and what it did.
type operator struct {
	writes     *writeCounter
	mu         sync.Mutex
	reconciles map[string]int
}

func (o *operator) reconcileCount(name string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.reconciles[name]
}

// startOperator runs the reconciler in a manager built the way main builds
// it (CacheOptions merged into the manager options) until the test ends.
// Every request the manager sends goes through a counting transport; tune,
// when given, changes the reconciler's options.
func startOperator(t testing.TB, tune ...func(*Options)) *operator {
	t.Helper()
	op := &operator{writes: &writeCounter{}, reconciles: map[string]int{}}
	cfg := rest.CopyConfig(env.Config)
	cfg.UserAgent = "apigateway-operator-test"
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, c: op.writes} }
	// Hosts are released a second after their owner stops routing them:
	// the suite's tests pass hosts on (the default, a day, is the
	// hostclaims suite's), and a test's records outlive it.
	ropts := Options{MaxConcurrentReconciles: 2, DefaultImage: testImage, ReloaderImage: testReloaderImage, HostReleaseAfter: time.Second}
	for _, f := range tune {
		f(&ropts)
	}
	opts := env.ManagerOptions()
	opts.Cache = CacheOptions()
	mgr, err := ctrl.NewManager(cfg, opts)
	require.NoError(t, err)
	require.NoError(t, setup(mgr, ropts, func(req ctrl.Request) {
		op.mu.Lock()
		defer op.mu.Unlock()
		op.reconciles[req.Namespace+"/"+req.Name]++
	}))
	env.StartManager(t, mgr)
	return op
}

// writeCounter records every request that is not a read, and the reads
// of whole Secrets (not of their metadata).
type writeCounter struct {
	mu      sync.Mutex
	writes  []string
	secrets []string
}

// secretReads are the paths of the whole Secrets read so far.
func (c *writeCounter) secretReads() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.secrets...)
}

func (c *writeCounter) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, s)
}

func (c *writeCounter) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.writes...)
}

type countingTransport struct {
	next http.RoundTripper
	c    *writeCounter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet:
		if strings.Contains(req.URL.Path, "/secrets/") && !strings.Contains(req.Header.Get("Accept"), "PartialObjectMetadata") {
			t.c.mu.Lock()
			t.c.secrets = append(t.c.secrets, req.URL.Path)
			t.c.mu.Unlock()
		}
	case http.MethodHead, http.MethodOptions:
	default:
		t.c.add(req.Method + " " + req.URL.Path)
	}
	return t.next.RoundTrip(req)
}

// newNamespace is testenv.NewNamespace on the suite's control plane.
func newNamespace(t testing.TB, prefix string) string {
	t.Helper()
	return testenv.NewNamespace(t, env.Client, prefix)
}

// createGateway creates gw and deletes it when the test ends.
func createGateway(t testing.TB, gw *v1.APIGateway) *v1.APIGateway {
	t.Helper()
	gw = gw.DeepCopy()
	gw.UID, gw.Generation = "", 0
	// In a cluster the defaults policy or the mutating webhook fills these
	// in; here neither runs, and the schema requires both.
	if gw.Spec.Image == "" {
		gw.Spec.Image = testImage
	}
	if gw.Spec.Replicas == nil {
		gw.Spec.Replicas = ptr.To[int32](1)
	}
	require.NoError(t, env.Client.Create(context.Background(), gw))
	t.Cleanup(func() { deleteGateway(gw) })
	return gw
}

// deleteGateway deletes gw and, since envtest runs no garbage collector,
// its children.
func deleteGateway(gw *v1.APIGateway) {
	ctx := context.Background()
	_ = env.Client.Delete(ctx, gw)
	key := client.ObjectKeyFromObject(gw)
	for obj, k := range map[client.Object]client.ObjectKey{
		&corev1.ConfigMap{}:  {Namespace: gw.Namespace, Name: gw.Name + "-config"},
		&appsv1.Deployment{}: key, &corev1.Service{}: key, &networkingv1.Ingress{}: key,
		&policyv1.PodDisruptionBudget{}: key,
	} {
		obj.SetNamespace(k.Namespace)
		obj.SetName(k.Name)
		_ = env.Client.Delete(ctx, obj)
	}
}

// children are one gateway's four children as the API server has them.
type children struct {
	cm  corev1.ConfigMap
	dep appsv1.Deployment
	svc corev1.Service
	ing networkingv1.Ingress
}

// getChildren reads gw's children (testenv.GetChildren).
func getChildren(ctx context.Context, gw *v1.APIGateway) (children, error) {
	ch, err := testenv.GetChildren(ctx, env.Client, client.ObjectKeyFromObject(gw))
	if err != nil {
		return children{}, err
	}
	return childrenOf(ch), nil
}

func childrenOf(ch *testenv.Children) children {
	return children{cm: ch.ConfigMap, dep: ch.Deployment, svc: ch.Service, ing: ch.Ingress}
}

// settled waits (testenv.AwaitReconciled) until gw's four children exist
// and its status describes its current generation, and returns both.
func settled(t testing.TB, gw *v1.APIGateway) (*v1.APIGateway, children) {
	t.Helper()
	cur, ch := testenv.AwaitReconciled(t, env.Client, client.ObjectKeyFromObject(gw), waitFor)
	return cur, childrenOf(ch)
}

// setDeploymentStatus plays the Deployment controller (envtest runs none):
// the current template rolled out with ready of the wanted pods ready.
func setDeploymentStatus(t testing.TB, gw *v1.APIGateway, ready int32) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(gw), dep); err != nil {
			return err
		}
		want := *dep.Spec.Replicas
		dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: want, UpdatedReplicas: want,
			ReadyReplicas: ready, AvailableReplicas: ready}
		return env.Client.Status().Update(ctx, dep)
	}))
}

// waitCondition waits (testenv.AwaitCondition, within the suite's
// waitFor) until gw's condition typ has status and reason.
func waitCondition(t *testing.T, gw *v1.APIGateway, typ string, status metav1.ConditionStatus, reason string) *v1.APIGateway {
	t.Helper()
	return testenv.AwaitCondition(t, env.Client, client.ObjectKeyFromObject(gw), testenv.Condition{Type: typ, Status: status, Reason: reason}, waitFor)
}

// assertControlledBy checks the child's controller owner reference and labels.
func assertControlledBy(t *testing.T, obj client.Object, gw *v1.APIGateway) {
	t.Helper()
	ref := metav1.GetControllerOf(obj)
	if assert.NotNil(t, ref, "%T %s has no controller", obj, obj.GetName()) {
		assert.Equal(t, gw.UID, ref.UID)
		assert.Equal(t, "APIGateway", ref.Kind)
		assert.Equal(t, "example.com/v1", ref.APIVersion)
	}
	assert.Equal(t, map[string]string{LabelName: "apigateway", LabelInstance: gw.Name, LabelManagedBy: FieldOwner}, obj.GetLabels())
}

// gatewayEvents are the type, reason and related object (or note) of
// the events regarding gw, sorted.
func gatewayEvents(ctx context.Context, gw *v1.APIGateway) ([]string, error) {
	list := &eventsv1.EventList{}
	if err := env.Client.List(ctx, list, client.InNamespace(gw.Namespace)); err != nil {
		return nil, err
	}
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.UID != gw.UID {
			continue
		}
		// An event with no related object names what it is about in its
		// note.
		about := ": " + e.Note
		if e.Related != nil {
			about = " " + e.Related.Kind + "/" + e.Related.Name
		}
		reasons = append(reasons, fmt.Sprintf("%s %s%s", e.Type, e.Reason, about))
	}
	sort.Strings(reasons)
	return reasons, nil
}

func mustQuantity(t *testing.T, s string) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	require.NoError(t, err)
	return q
}

// waitRouting waits until gw's claims say it routes somewhere (routing) or
// nowhere (!routing): a gateway that routes nowhere holds no host.
func waitRouting(t *testing.T, gw *v1.APIGateway, routing bool, why string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cur := &v1.APIGateway{}
		require.NoError(c, env.Client.Get(context.Background(), client.ObjectKeyFromObject(gw), cur))
		require.NotNil(c, cur.Status.Claims)
		assert.Equal(c, routing, cur.Status.Claims.RoutingSince != nil, why)
	}, waitFor, tick)
}
