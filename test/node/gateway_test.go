package node

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/clusterdns"
	"example.com/apigateway-operator/test/controlplane"
	"example.com/apigateway-operator/test/operatortest"
	"example.com/apigateway-operator/test/testenv"
)

// A gateway's generated Deployment of two replicas starts on the node (the
// init container copies the reloader from the operator's image, the
// reloader runs the gateway image's nginx as uid 101 on a read-only root),
// goes Live from the pods' own reports, and a request through each pod
// reaches the echo backend of its route.
func TestGatewayPodServes(t *testing.T) {
	ctx := t.Context()
	startServiceDNS(t)
	ns := testenv.NewNamespace(t, env.Client, "gateway")
	backend := startBackend(t, ns)
	startOperator(t)
	gw := newGateway(ns, "shop", backend, 2)
	created := time.Now()
	require.NoError(t, env.Client.Create(ctx, gw))
	podReadyAfter := make(chan time.Duration, 1)
	go func() { podReadyAfter <- awaitGatewayPodReady(ctx, gw, created) }()
	res := env.Kubectl(ctx, nil, "wait", "--for=condition=Live", "agw/"+gw.Name, "-n", ns, "--timeout=2m")
	require.NoError(t, res.Err, "%s\n%s", res.Stderr, env.Kubectl(ctx, nil, "get", "agw,deploy,pods", "-n", ns, "-o", "yaml").Stdout)
	t.Logf("gateway Live %s after its creation", time.Since(created).Round(time.Millisecond))
	t.Logf("gateway pod Ready %s after the gateway's creation", (<-podReadyAfter).Round(time.Millisecond))
	// Live needs one pod serving the configuration; a request through
	// each pod needs both ready, which Ready says (seen: Live with the
	// second pod's nginx not listening yet, on a loaded machine).
	res = env.Kubectl(ctx, nil, "wait", "--for=condition=Ready", "agw/"+gw.Name, "-n", ns, "--timeout=2m")
	require.NoError(t, res.Err, "%s\n%s", res.Stderr, env.Kubectl(ctx, nil, "get", "agw,deploy,pods", "-n", ns, "-o", "yaml").Stdout)

	var pods corev1.PodList
	require.NoError(t, env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{controller.LabelInstance: gw.Name}))
	require.Len(t, pods.Items, 2)
	for _, pod := range pods.Items {
		reply := getThrough(t, pod.Status.PodIP, gatewayHost(ns), "/users/42")
		require.Equal(t, backend.Name, reply.Service, "through pod %s", pod.Name)
		require.Equal(t, "/users/42", reply.RequestURI, "through pod %s", pod.Name)
	}

	// The pod's processes (the reloader and nginx, its child) run as
	// the gateway's user with no capabilities at all.
	t.Run("a route change goes live on both pods without new pods", func(t *testing.T) {
		orders := gw.Spec.Routes[0]
		orders.Path = "/orders"
		patch := client.MergeFrom(gw.DeepCopy())
		gw.Spec.Routes = append(gw.Spec.Routes, orders)
		changed := time.Now()
		require.NoError(t, env.Client.Patch(ctx, gw, patch))
		// With the kubelet's default syncFrequency (1 min) the ConfigMap
		// volume follows in 1 to 1.5 times that (80 s seen here).
		for _, pod := range pods.Items {
			require.Eventually(t, func() bool {
				return statusThrough(ctx, pod.Status.PodIP, gatewayHost(ns), "/orders/7") == http.StatusOK
			},
				routeChangeWait, tick, "pod %s never served the new route", pod.Name)
			t.Logf("the new route served by pod %s %s after the change", pod.Name, time.Since(changed).Round(time.Millisecond))
		}
		var now corev1.PodList
		require.NoError(t, env.Client.List(ctx, &now, client.InNamespace(ns), client.MatchingLabels{controller.LabelInstance: gw.Name}))
		require.ElementsMatch(t, podUIDs(pods), podUIDs(now), "the pods were replaced")
	})

	shims := processesNamed(t, "containerd-shim")
	var shimRSS int64
	for pid, status := range shims {
		bytes, ok := vmRSS(status)
		require.True(t, ok, "no VmRSS in the status of shim %d:\n%s", pid, status)
		shimRSS += bytes
	}
	t.Logf("RSS of %d containerd shims: %d MiB together", len(shims), shimRSS>>20)

	procs := processesNamed(t, "nginx", "apigateway-oper")
	require.NotEmpty(t, procs, "no nginx or reloader process on the node")
	for pid, status := range procs {
		require.Contains(t, status, "\nUid:\t101\t101\t101\t101\n", "process %d", pid)
		require.Contains(t, status, "\nCapEff:\t0000000000000000\n", "process %d", pid)
	}
}

// startBackend starts an echo pod named user-service in ns with a
// Service of the same name on port 8080 in front, and waits until the
// Service's ClusterIP leads to the pod (the node's kube-proxy has its
// EndpointSlice), as the gateway's pooled upstream reaches it.
func startBackend(t testing.TB, ns string) *corev1.Pod {
	t.Helper()
	ctx := t.Context()
	backend := echoPod(ns, "user-service")
	require.NoError(t, env.Client.Create(ctx, backend))
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backend.Name},
		Spec: corev1.ServiceSpec{
			Selector: backend.Labels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	require.NoError(t, env.Client.Create(ctx, svc))
	awaitReady(t, backend)
	started := time.Now()
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "8080") + "/"
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, waitFor, tick, "Service %s: its ClusterIP %s never led to pod %s (kube-proxy log: %s)", svc.Name, svc.Spec.ClusterIP, backend.Name, logOf("kube-proxy"))
	t.Logf("Service %s served through its ClusterIP %s after the pod was Ready", svc.Name, time.Since(started).Round(time.Millisecond))
	return backend
}

// startOperator runs the operator's controllers for the test, with the
// node's images and the node's address as the gateways' resolver, until
// Stop or the test's end; tune, when given, changes the options.
func startOperator(t testing.TB, tune ...func(*controller.Options)) *testenv.Running {
	t.Helper()
	opts := &controller.Options{DefaultImage: GatewayImage, ReloaderImage: OperatorImage, Resolvers: []string{controlplane.NodeIP}}
	for _, f := range tune {
		f(opts)
	}
	mgr := operatortest.NewManager(t, env, operatortest.Options{UserAgent: "apigateway-operator-test", Controller: opts})
	return testenv.RunManager(t, mgr, waitFor)
}

// newGateway is a gateway of replicas pods named name in ns with one
// route, /users on gatewayHost(ns), to backend's Service.
func newGateway(ns, name string, backend *corev1.Pod, replicas int32) *v1.APIGateway {
	return &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.APIGatewaySpec{Image: GatewayImage, Replicas: ptr.To(replicas), Routes: []v1.Route{{
			Host: v1.Hostname(gatewayHost(ns)), Path: "/users", PathType: v1.PathTypePrefix,
			BackendService: v1.BackendService{Name: v1.ServiceName(backend.Name), Port: 8080},
		}}},
	}
}

// gatewayHost is the host of the gateways in namespace ns: one of its
// own. The tests share one control plane, where a host belongs to the
// namespace that routed it first (a HostClaim, kept for a day), so a
// host shared between tests' namespaces would be served by the first
// test's gateway only, and every later one's would answer 404.
func gatewayHost(ns string) string { return "shop." + ns + ".example.com" }

// getThrough asks the gateway pod at ip for path on host and returns the
// echo backend's reply.
func getThrough(t *testing.T, ip, host, path string) (reply struct{ Service, Pod, RequestURI string }) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+net.JoinHostPort(ip, "8080")+path, http.NoBody)
	require.NoError(t, err)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&reply))
	return reply
}

// routeChangeWait bounds the wait for a route change to reach a pod: the
// kubelet's sync (up to 90 s by default) and the reload, on a loaded
// machine.
const routeChangeWait = 3 * time.Minute

// statusThrough is the status of a request through the gateway pod at
// ip for path on host, or 0 when there is no answer; each of set changes
// the request first.
func statusThrough(ctx context.Context, ip, host, path string, set ...func(*http.Request)) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(ip, "8080")+path, http.NoBody)
	if err != nil {
		return 0
	}
	req.Host = host
	for _, f := range set {
		f(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// podUIDs are the pods' UIDs.
func podUIDs(pods corev1.PodList) []string {
	var uids []string
	for _, p := range pods.Items {
		uids = append(uids, string(p.UID))
	}
	return uids
}

// processesNamed are the /proc/<pid>/status of the running processes
// whose command name is one of names: in the node's PID namespace, only
// the node's. Not the zombies: the suite's process is that namespace's
// init, and the shims of pods gone before (they detach from containerd)
// are left to it, exited, holding no memory.
func processesNamed(t *testing.T, names ...string) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	out := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue // gone meanwhile
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(string(status), "Name:\t"), "\n")
		if slices.Contains(names, name) && controlplane.Running(pid) {
			out[pid] = string(status)
		}
	}
	return out
}

// awaitGatewayPodReady is how long after created a first pod of gw was
// Ready; zero when ctx ends first.
func awaitGatewayPodReady(ctx context.Context, gw *v1.APIGateway, created time.Time) time.Duration {
	for {
		var pods corev1.PodList
		err := env.Client.List(ctx, &pods, client.InNamespace(gw.Namespace), client.MatchingLabels{controller.LabelInstance: gw.Name})
		if err == nil && slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return podReady(&p) }) {
			return time.Since(created)
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(tick):
		}
	}
}

// startServiceDNS plays the cluster DNS at the node's address, where the
// kubelet points the pods (clusterDNS), as CoreDNS answers (see
// clusterdns.Services).
func startServiceDNS(t testing.TB) {
	t.Helper()
	_, stop, err := clusterdns.ServeLookup(net.JoinHostPort(controlplane.NodeIP, "53"), "cluster.local", clusterdns.Services(env.Client))
	require.NoError(t, err)
	t.Cleanup(func() { _ = stop() })
}
