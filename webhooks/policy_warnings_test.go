package webhooks

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/apigateway-operator/admit"
	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/manifests/policy"
	"example.com/apigateway-operator/test/testenv"
)

// TestPolicyWarnsInTheAPIServerAsInProcess is the one check that the real
// API server sends the warnings the in-process evaluation of the warnings
// policy (admit.CompiledWarnings, which the offline checks use and
// admit's TestWarningsPolicy holds to a table of cases) gives: for each
// image and replica count, word for word. No webhook runs for these
// writes' warnings: the validating webhook leaves them to the policy.
func TestPolicyWarnsInTheAPIServerAsInProcess(t *testing.T) {
	compiled, err := admit.CompiledWarnings()
	require.NoError(t, err)
	ns := driftNamespace(t, nil)
	installWarningsPolicy(t, labelledFor(t, ns.Name))
	warned := &warningRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandlerWithContext = warned
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)

	images := []string{
		"nginx", "nginx:1.27", "nginx:latest", "registry:5000/nginx", "registry:5000/nginx:1.27",
		"registry:5000/team/nginx:latest", "nginx:latest@sha256:" + strings.Repeat("0", 64), "nginx@sha256:" + strings.Repeat("1", 64),
		"a/b/c/d:latest-but-not", "ghcr.io/x/y:LATEST", "nginx:latest:latest", "é/nginx:latest", strings.Repeat("a", 1000),
	}
	var cases int
	for i, image := range images {
		for _, replicas := range []int32{0, 1, 2} {
			gw := completeGateway(ns.Name, fmt.Sprintf("warn-%d-%d", i, replicas), image, replicas)
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(gw)
			require.NoError(t, err)
			want := compiled.Warnings(t.Context(), &unstructured.Unstructured{Object: obj})
			awaitPolicyWarnings(t, c, warned, gw, len(want) > 0)
			got := warned.policyMessages()
			assert.ElementsMatch(t, want, got, "image %q, %d replicas", image, replicas)
			cases++
		}
	}
	t.Logf("%d images and replica counts: the API server's warnings are the in-process policy's", cases)
}

// awaitPolicyWarnings dry-runs a create of gw with c and, for the first
// gateway that must be warned about, retries until the policy, which the
// API server picks up asynchronously, answers.
func awaitPolicyWarnings(t *testing.T, c client.Client, warned *warningRecorder, gw *v1.APIGateway, expectSome bool) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		warned.reset()
		require.NoError(t, c.Create(t.Context(), gw.DeepCopy(), client.DryRunAll))
		if !expectSome || len(warned.policyMessages()) > 0 || warned.active() {
			warned.activate()
			return
		}
		require.Less(t, attempt, 300, "the API server did not apply the warnings policy")
		time.Sleep(100 * time.Millisecond) // the policy informer's lag, not an assertion
	}
}

func completeGateway(ns, name, image string, replicas int32) *v1.APIGateway {
	gw := &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.APIGatewaySpec{
		Image: v1.Image(image), Replicas: ptr.To(replicas),
		Routes: []v1.Route{{Host: v1.Hostname(name + ".warn.example.com"), Path: "/", PathType: v1.PathTypePrefix,
			BackendService: v1.BackendService{Name: "svc", Port: 80}}},
	}}
	return gw
}

// labelledFor labels namespace with a label of its own and returns it.
func labelledFor(t *testing.T, namespace string) map[string]string {
	t.Helper()
	labels := map[string]string{"policy-warnings": namespace}
	ns := &corev1.Namespace{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Name: namespace}, ns))
	labelled(t, ns, labels)
	return labels
}

// installWarningsPolicy installs the manifests' warnings policy and
// binding under names of the test's own, bound to namespaces with labels.
func installWarningsPolicy(t *testing.T, labels map[string]string) {
	t.Helper()
	vap, binding, err := policy.WarningsPolicy()
	require.NoError(t, err)
	id := labels["policy-warnings"]
	vap.Name, binding.Name = "warnings-"+id, "warnings-"+id
	binding.Spec.PolicyName = vap.Name
	binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels}}
	require.NoError(t, env.Client.Create(t.Context(), vap), "the API server refuses the manifests' warnings policy")
	require.NoError(t, env.Client.Create(t.Context(), binding))
	t.Cleanup(func() {
		assert.NoError(t, env.Client.Delete(context.Background(), binding))
		assert.NoError(t, env.Client.Delete(context.Background(), vap))
	})
}

// warningRecorder keeps the warnings of the requests since reset, as a
// rest.WarningHandlerWithContext.
type warningRecorder struct {
	mu       sync.Mutex
	messages []string
	on       bool
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.messages = append(w.messages, message)
}

func (w *warningRecorder) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.messages = nil
}

func (w *warningRecorder) activate() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on = true
}

func (w *warningRecorder) active() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.on
}

// policyMessages are the recorded warnings a ValidatingAdmissionPolicy
// sent, without the API server's prefix naming the policy and binding.
func (w *warningRecorder) policyMessages() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, m := range w.messages {
		if msg, ok := testenv.PolicyWarning(m); ok {
			out = append(out, msg)
		}
	}
	return out
}
