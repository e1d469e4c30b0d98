// Package reload tests a route change from the API to the pods with the
// real control plane (kube-apiserver, and kube-controller-manager's
// Deployment, ReplicaSet and EndpointSlice controllers), the operator's
// reconciler, and gateway pods played by the reloader and Debian's nginx as
// processes, each in a network namespace of its own with its pod IP. There
// is no kubelet: the test's stand-in (kubelet_test.go) runs the Pods, writes
// their status and projects their ConfigMaps.
package reload

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/clusterdns"
	"example.com/apigateway-operator/test/gatewaypod"
	"example.com/apigateway-operator/test/netns"
	"example.com/apigateway-operator/test/operatortest"
	"example.com/apigateway-operator/test/testenv"
)

var env *testenv.Env

// TestMain runs the suite in a network namespace of its own (as root),
// where the pods' addresses and the test's hostIP live; the test binary is
// also the reloader the pods run.
func TestMain(m *testing.M) {
	gatewaypod.RunReloaderIfAsked()
	code, done, err := netns.Enter()
	if err == nil && !done {
		err = netns.AddLoopbackAddress(hostIP)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if done {
		os.Exit(code)
	}
	testenv.Main(m, &env, testenv.Options{})
}

const (
	waitFor = 2 * time.Minute
	tick    = 100 * time.Millisecond
)

// startOperator runs the reconciler as main wires it until Stop or the
// end of the test.
func startOperator(t *testing.T, opts controller.Options) *testenv.Running {
	t.Helper()
	mgr := operatortest.NewManager(t, env, operatortest.Options{UserAgent: "apigateway-operator-test", Controller: &opts})
	return testenv.RunManager(t, mgr, waitFor)
}

// backends are the Services' pods: one echo server on hostIP that says
// which path it was asked for, and the DNS server that resolves every
// Service to it.
func startBackends(t *testing.T) int32 {
	t.Helper()
	_, stopDNS, err := clusterdns.Serve(hostIP+":53", "cluster.local", net.ParseIP(hostIP))
	require.NoError(t, err)
	t.Cleanup(func() { _ = stopDNS() })
	ln, err := net.Listen("tcp", hostIP+":0")
	require.NoError(t, err)
	srv := &http.Server{ReadHeaderTimeout: waitFor, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "path="+r.URL.Path)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// TestRouteChangeGoesLiveWithoutNewPods: a gateway of two replicas goes
// Live once both pods report its configuration; a route change is served
// by the same pods (kubectl wait --for=condition=Live returns once it is),
// and a configuration one pod's nginx refuses leaves that pod serving the
// previous one and shows in the status and an event.
func TestRouteChangeGoesLiveWithoutNewPods(t *testing.T) {
	ctx := context.Background()
	env.RunControllers(t, "deployment", "replicaset", "endpointslice")
	createNode(t, env.Client)
	port := startBackends(t)
	ns := testenv.NewNamespace(t, env.Client, "reload")

	// Both pods start with the resolvers the operator is given; the
	// second pod's resolv.conf names no DNS server, which matters once
	// the configuration asks for the pods' own (below).
	startKubelet(t, env.Client, ns, func(i int) string {
		if i == 1 {
			return "search svc.cluster.local\n"
		}
		return "nameserver " + hostIP + "\n"
	})
	opts := controller.Options{DefaultImage: "nginx", ReloaderImage: "apigateway-operator:test", Resolvers: []string{hostIP}}
	op := startOperator(t, opts)

	route := func(path string) v1.Route {
		return v1.Route{Host: "shop.example.com", Path: v1.HTTPPath(path), PathType: v1.PathTypePrefix, BackendService: v1.BackendService{Name: "web", Port: v1.PortNumber(port)}}
	}
	gw := &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec:       v1.APIGatewaySpec{Image: "nginx:test", Replicas: ptr.To[int32](2), Routes: []v1.Route{route("/cart")}},
	}
	require.NoError(t, env.Client.Create(ctx, gw))
	kubectlWait(t, gw, "Ready")
	kubectlWait(t, gw, "Live")
	gw = get(t, gw)
	assert.Equal(t, int32(2), gw.Status.LiveReplicas)
	assertCondition(t, gw, v1.ConditionReady, metav1.ConditionTrue, controller.ReasonAllReplicasReady)
	pods := podUIDs(t, gw)
	require.Len(t, pods, 2)

	t.Run("a route change is served by the same pods", func(t *testing.T) {
		patch(t, gw, `{"spec":{"routes":[{"host":"shop.example.com","path":"/cart","backendService":{"name":"web","port":%d}},`+
			`{"host":"shop.example.com","path":"/pay","backendService":{"name":"web","port":%d}}]}}`, port, port)
		kubectlWait(t, gw, "Live")
		for name := range pods {
			status, body := getVia(t, podIP(t, name), "/pay/1")
			assert.Equal(t, http.StatusOK, status, "pod %s: %s", name, body)
			assert.Equal(t, "path=/pay/1", body)
		}
		assert.Equal(t, pods, podUIDs(t, gw), "pods were replaced")
		var rs appsv1.ReplicaSetList
		require.NoError(t, env.Client.List(ctx, &rs, client.InNamespace(ns)))
		assert.Len(t, rs.Items, 1, "the Deployment rolled out")
		assert.Equal(t, int32(2), get(t, gw).Status.LiveReplicas)
	})

	t.Run("a refused configuration shows and the pod keeps the previous one", func(t *testing.T) {
		// The operator, restarted without resolvers, renders the pods' own
		// (NGINX_LOCAL_RESOLVERS); the second pod's nginx refuses that.
		op.Stop(t)
		opts.Resolvers = nil
		startOperator(t, opts)
		// The first pod reloads, the second refuses: the condition says
		// both once both have had the configuration.
		cond := meta.FindStatusCondition(testenv.AwaitCondition(t, env.Client, client.ObjectKeyFromObject(gw), testenv.Condition{
			Type: v1.ConditionLive, Status: metav1.ConditionFalse, Reason: v1.ReasonConfigurationRefused, Saying: "1 of 2 ready replicas serve",
		}, waitFor).Status.Conditions, v1.ConditionLive)
		refuser := podNamed(t, gw, 1)
		assert.Contains(t, cond.Message, "pod "+refuser+" refused it (NginxTestFailed)")
		assert.Contains(t, cond.Message, "nginx: [emerg] no name servers defined")
		gw = get(t, gw)
		assert.Equal(t, int32(1), gw.Status.LiveReplicas)
		assertCondition(t, gw, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonConfigurationRefused)

		status, body := getVia(t, podIP(t, refuser), "/pay/2")
		assert.Equal(t, http.StatusOK, status, "the refusing pod stopped serving its previous configuration: %s", body)
		assert.Equal(t, pods, podUIDs(t, gw))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var events eventsv1.EventList
			require.NoError(c, env.Client.List(ctx, &events, client.InNamespace(ns)))
			found := false
			for _, e := range events.Items {
				found = found || (e.Regarding.Name == gw.Name && e.Reason == v1.ReasonConfigurationRefused && e.Type == corev1.EventTypeWarning)
			}
			assert.True(c, found, "no ConfigurationRefused event")
		}, waitFor, tick)
	})
}

// kubectlWait waits as a user would, with kubectl, for a condition of the
// gateway's current generation to be True.
func kubectlWait(t *testing.T, gw *v1.APIGateway, condition string) {
	t.Helper()
	res := env.Kubectl(context.Background(), nil, "wait", "--for=condition="+condition, "agw/"+gw.Name, "-n", gw.Namespace, "--timeout=2m")
	require.NoError(t, res.Err, "%s", describe(gw))
}

func describe(gw *v1.APIGateway) string {
	res := env.Kubectl(context.Background(), nil, "get", "agw,deploy,pods,endpointslices", "-n", gw.Namespace, "-o", "yaml")
	return res.Stdout
}

func get(t *testing.T, gw *v1.APIGateway) *v1.APIGateway {
	t.Helper()
	cur := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(gw), cur))
	return cur
}

func patch(t *testing.T, gw *v1.APIGateway, format string, args ...any) {
	t.Helper()
	require.NoError(t, env.Client.Patch(context.Background(), gw, client.RawPatch(types.MergePatchType, fmt.Appendf(nil, format, args...))))
}

func assertCondition(t *testing.T, gw *v1.APIGateway, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(gw.Status.Conditions, typ)
	require.NotNil(t, c, "no %s condition", typ)
	assert.Equal(t, status, c.Status, c.Message)
	assert.Equal(t, reason, c.Reason, c.Message)
}

// podUIDs are the gateway's pods, name to UID.
func podUIDs(t *testing.T, gw *v1.APIGateway) map[string]types.UID {
	t.Helper()
	var pods corev1.PodList
	require.NoError(t, env.Client.List(context.Background(), &pods, client.InNamespace(gw.Namespace)))
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		out[p.Name] = p.UID
	}
	return out
}

// podNamed is the name of the pod whose IP ends in .i+1 (the i-th the
// kubelet started).
func podNamed(t *testing.T, gw *v1.APIGateway, i int) string {
	t.Helper()
	var pods corev1.PodList
	require.NoError(t, env.Client.List(context.Background(), &pods, client.InNamespace(gw.Namespace)))
	for _, p := range pods.Items {
		if p.Status.PodIP == fmt.Sprintf("10.200.0.%d", i+1) {
			return p.Name
		}
	}
	t.Fatalf("no pod with IP 10.200.0.%d", i+1)
	return ""
}

func podIP(t *testing.T, name string) string {
	t.Helper()
	var pods corev1.PodList
	require.NoError(t, env.Client.List(context.Background(), &pods))
	for _, p := range pods.Items {
		if p.Name == name {
			return p.Status.PodIP
		}
	}
	t.Fatalf("no pod %s", name)
	return ""
}

var fresh = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}

// getVia sends GET path for shop.example.com to a pod's HTTP port.
func getVia(t *testing.T, ip, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+net.JoinHostPort(ip, "8080")+path, nil)
	require.NoError(t, err)
	req.Host = "shop.example.com"
	resp, err := fresh.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, strings.TrimSpace(string(body))
}
