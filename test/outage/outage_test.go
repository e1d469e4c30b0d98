package outage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/manifests/policy"
	"example.com/apigateway-operator/test/testenv"
)

// downFor is how long the operator stays down under write load.
const downFor = 30 * time.Second

// TestOperatorDown stops every operator replica for 30 s while writers
// create, update and delete gateways, and checks what the issue promises:
// no v1 write that succeeds with the operator up is refused while it is
// down; a create that needs defaults gets the operator's; the invalid
// samples are refused with the same field paths; a conflicting gateway is
// admitted, and once the operator is back it reports HostOwned (without
// naming the owner) and serves nothing on the owner's host, while the
// owner keeps serving.
func TestOperatorDown(t *testing.T) {
	op := startOperator(t)
	holderNS := testenv.NewNamespace(t, env.Client, "holder")
	intruderNS := testenv.NewNamespace(t, env.Client, "intruder")
	ns := testenv.NewNamespace(t, env.Client, "down")
	holder := gateway(holderNS, "holder", "shared.example.com", "/api/")
	require.NoError(t, env.Client.Create(t.Context(), holder))
	awaitIngressPaths(t, holder, "shared.example.com /api")
	refusedUp := sampleRefusals(t, ns)
	t.Logf("the invalid samples' refusals, by field: %v", refusedUp)

	load := startLoad(t, ns, 2)
	load.await(t, 20)
	op.Stop(t)
	down := time.Now()
	load.phase("down")

	t.Run("defaults without the operator", func(t *testing.T) {
		gw := gateway(ns, "defaulted", "Mixed.Example.com.", "")
		require.NoError(t, env.Client.Create(t.Context(), gw))
		assert.Equal(t, operatorDefaults.Image, string(gw.Spec.Image))
		assert.Equal(t, ptr.To(operatorDefaults.Replicas), gw.Spec.Replicas)
		assert.Equal(t, v1.Route{Host: "mixed.example.com", Path: "/", PathType: v1.PathTypePrefix,
			BackendService: v1.BackendService{Name: "backend", Port: 8080}}, gw.Spec.Routes[0])
	})
	t.Run("the invalid samples are refused alike", func(t *testing.T) {
		assert.Equal(t, refusedUp, sampleRefusals(t, ns))
	})
	intruder := gateway(intruderNS, "intruder", "shared.example.com", "/api/", "own.example.com", "/")
	require.NoError(t, env.Client.Create(t.Context(), intruder), "a conflicting gateway while no webhook answers")

	time.Sleep(time.Until(down.Add(downFor))) // the outage's length, not an assertion
	startOperator(t)
	load.phase("up again")
	load.await(t, load.count()+20)
	writes := load.stop(t)
	t.Logf("writes by phase: %v", writes)
	assert.Greater(t, writes["down"], 50, "writes while the operator was down")

	t.Run("the host stays its owner's", func(t *testing.T) {
		cond := awaitAccepted(t, intruder, "False")
		assert.Equal(t, v1.ReasonHostOwned, cond.Reason)
		assert.Contains(t, cond.Message, "host shared.example.com belongs to another namespace")
		assert.NotContains(t, cond.Message, holderNS, "the intruder's status names no other namespace")
		awaitIngressPaths(t, intruder, "own.example.com /")
		assert.NotContains(t, configText(t, intruder), "shared.example.com", "the intruder's nginx configuration")
		assert.Equal(t, v1.ReasonAccepted, awaitAccepted(t, holder, "True").Reason)
		awaitIngressPaths(t, holder, "shared.example.com /api")
	})
}

// sampleRefusals dry-runs each invalid sample of manifests/samples/invalid
// into namespace, except the conflict (only the webhook sees other
// gateways), and returns the field paths of each refusal.
func sampleRefusals(t *testing.T, namespace string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(env.Root, "manifests", "samples", "invalid", "*.yaml"))
	require.NoError(t, err)
	out := map[string][]string{}
	for _, f := range files {
		if strings.Contains(f, "conflict") {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(data, &obj.Object))
		obj.SetNamespace(namespace)
		err = env.Client.Create(t.Context(), obj, client.DryRunAll)
		require.Error(t, err, "%s was admitted", filepath.Base(f))
		out[filepath.Base(f)] = fieldPaths(err)
	}
	require.NotEmpty(t, out)
	return out
}

func fieldPaths(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return []string{"not a field error: " + err.Error()}
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	slices.Sort(fields)
	return fields
}

// awaitIngressPaths waits until gw's Ingress has exactly these "host path"
// rules.
func awaitIngressPaths(t *testing.T, gw *v1.APIGateway, want ...string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ing := &networkingv1.Ingress{}
		get(c, client.ObjectKeyFromObject(gw), ing)
		var got []string
		for _, rule := range ing.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				got = append(got, rule.Host+" "+p.Path)
			}
		}
		assert.ElementsMatch(c, want, got)
	}, waitFor, tick, "the Ingress of %s/%s", gw.Namespace, gw.Name)
}

func awaitAccepted(t *testing.T, gw *v1.APIGateway, status string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cur := &v1.APIGateway{}
		get(c, client.ObjectKeyFromObject(gw), cur)
		cond = meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionAccepted)
		require.NotNil(c, cond)
		assert.Equal(c, status, string(cond.Status))
	}, waitFor, tick, "%s/%s: Accepted=%s", gw.Namespace, gw.Name, status)
	return cond
}

func configText(t *testing.T, gw *v1.APIGateway) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	get(t, client.ObjectKey{Namespace: gw.Namespace, Name: gw.Name + "-config"}, cm)
	var b strings.Builder
	for _, v := range cm.Data {
		b.WriteString(v)
	}
	return b.String()
}

// load is writers creating, updating and deleting gateways of their own
// hosts, each write one that the operator admits, counting writes by
// phase and keeping every refusal.
type load struct {
	mu      sync.Mutex
	current string
	writes  map[string]int
	refused []string
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Each writer starts a cycle every loadEvery, at most loadWrites times,
// whatever the phases' lengths: a steady load of about 250 writes a second
// from two writers, bounded in count and time.
const (
	loadEvery  = 10 * time.Millisecond
	loadWrites = 20000
)

func startLoad(t *testing.T, namespace string, writers int) *load {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	l := &load{current: "up", writes: map[string]int{}, cancel: cancel}
	for w := range writers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tick := time.NewTicker(loadEvery)
			defer tick.Stop()
			for i := 0; i < loadWrites && ctx.Err() == nil; i++ {
				l.cycle(ctx, namespace, fmt.Sprintf("load-%d-%d", w, i), i)
				select {
				case <-ctx.Done():
				case <-tick.C:
				}
			}
		}()
	}
	t.Cleanup(func() { l.stop(t) })
	return l
}

// cycle creates a gateway (every other one leaving image and replicas to
// the defaults), scales it, and deletes every third.
func (l *load) cycle(ctx context.Context, namespace, name string, i int) {
	gw := gateway(namespace, name, name+".load.example.com", "/")
	if i%2 == 0 {
		gw = complete(gw)
	}
	if !l.record(ctx, "create "+name, env.Client.Create(ctx, gw)) {
		return
	}
	patch := client.MergeFrom(gw.DeepCopy())
	gw.Spec.Replicas = ptr.To[int32](int32(i % 5))
	l.record(ctx, "update "+name, env.Client.Patch(ctx, gw, patch))
	if i%3 == 0 {
		l.record(ctx, "delete "+name, env.Client.Delete(ctx, gw))
	}
}

func (l *load) record(ctx context.Context, what string, err error) bool {
	if ctx.Err() != nil {
		return false // stopped mid-write: not a refusal
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes[l.current]++
	if err != nil {
		l.refused = append(l.refused, fmt.Sprintf("%s (%s): %v", what, l.current, err))
	}
	return err == nil
}

func (l *load) phase(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.current = name
}

func (l *load) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.writes {
		n += c
	}
	return n
}

// await waits (bounded) until the writers have written n times in all.
func (l *load) await(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return l.count() >= n }, waitFor, tick, "the writers wrote fewer than %d times", n)
}

// stop stops the writers and checks that none was refused; it returns
// the writes by phase.
func (l *load) stop(t *testing.T) map[string]int {
	t.Helper()
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Empty(t, l.refused, "writes refused")
	return l.writes
}

// TestDefaultsParametersAreRestored: whoever may edit the defaults
// policy's parameter ConfigMap would choose the image of every gateway
// created while the operator is down, everywhere; the running operator
// puts its own back.
func TestDefaultsParametersAreRestored(t *testing.T) {
	startOperator(t)
	ctx := t.Context()
	params := types.NamespacedName{Namespace: policy.ParamsNamespace, Name: policy.ParamsName}
	require.NoError(t, env.Client.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: params.Namespace, Name: params.Name}},
		client.RawPatch(types.MergePatchType, []byte(`{"data":{"`+defaults.ParamImage+`":"evil.example/miner:1"}}`))))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cm := &corev1.ConfigMap{}
		require.NoError(c, env.Client.Get(ctx, params, cm))
		assert.Equal(c, operatorDefaults.PolicyData(), cm.Data)
	}, waitFor, tick, "the operator did not put its defaults back")
}
