package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"example.com/apigateway-operator/test/controlplane"
)

// The suite's one node, shared by its tests.
var (
	cp     *controlplane.ControlPlane
	client kubernetes.Interface
	// nodeStarted is how long the node took from the kubelet's start
	// to Ready.
	nodeStarted time.Duration
)

const (
	nodeName = "node"
	// waitFor bounds each wait for a pod on the loaded 2-core machines.
	waitFor = 2 * time.Minute
	tick    = 100 * time.Millisecond
)

// TestMain runs the suite in the node's namespaces with one node. A node
// that cannot start fails the run with what stopped it: never a skip.
func TestMain(m *testing.M) {
	code, done, err := controlplane.EnterNodeNamespaces()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/node:", err)
		os.Exit(1)
	}
	if done {
		os.Exit(code)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if err := start(); err != nil {
		fmt.Fprintln(os.Stderr, "test/node: the node did not start:", err)
		if cp != nil {
			_ = cp.Stop(context.Background())
		}
		return 1
	}
	code := m.Run()
	if err := cp.Stop(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "test/node: stopping:", err)
		code = max(code, 1)
	}
	return code
}

// binDirs are where `make node` puts the node's binaries: bin/k8s (or
// KUBEBUILDER_ASSETS) and bin/node (or NODE_BIN).
func binDirs() (k8s, runtime string, err error) {
	root, err := filepath.Abs("../..")
	if err != nil {
		return "", "", err
	}
	k8s, runtime = os.Getenv("KUBEBUILDER_ASSETS"), os.Getenv("NODE_BIN")
	if k8s == "" {
		k8s = filepath.Join(root, "bin", "k8s")
	}
	if runtime == "" {
		runtime = filepath.Join(root, "bin", "node")
	}
	for _, bin := range []string{filepath.Join(k8s, "kubelet"), filepath.Join(k8s, "kube-scheduler"), filepath.Join(runtime, "containerd")} {
		if _, err := os.Stat(bin); err != nil {
			return "", "", fmt.Errorf("%w: run `make node`", err)
		}
	}
	return k8s, runtime, nil
}

func start() error {
	k8s, runtime, err := binDirs()
	if err != nil {
		return err
	}
	imageDir, err := os.MkdirTemp("", "node-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(imageDir)
	images, err := WriteImages(imageDir)
	if err != nil {
		return err
	}
	var kubeletStart time.Time
	cp, err = controlplane.New(controlplane.Options{
		BinDir: k8s,
		// NODE_RUN_DIR keeps the node's files and logs after the run.
		Dir:         os.Getenv("NODE_RUN_DIR"),
		Fresh:       true,
		Controllers: []string{"deployment-controller", "replicaset-controller"},
		Node: &controlplane.NodeOptions{
			RuntimeBinDir: runtime,
			Name:          nodeName,
			Images:        images,
			PauseImage:    PauseImage,
		},
		StartTimeout: 2 * time.Minute,
		Log: func(msg string) {
			if strings.HasPrefix(msg, "Starting kubelet") {
				kubeletStart = time.Now()
			}
			if os.Getenv("TEST_LOG") != "" {
				fmt.Fprintln(os.Stderr, msg)
			}
		},
	})
	if err != nil {
		return err
	}
	if err := cp.Start(context.Background()); err != nil {
		return err
	}
	nodeStarted = time.Since(kubeletStart)
	cfg, err := cp.Config(controlplane.Admin)
	if err != nil {
		return err
	}
	client, err = kubernetes.NewForConfig(cfg)
	return err
}

func TestNodeIsReady(t *testing.T) {
	n, err := client.CoreV1().Nodes().Get(t.Context(), nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: controlplane.NodeIP})
	t.Logf("node Ready %s after the kubelet started", nodeStarted.Round(time.Millisecond))
	for _, p := range cp.Processes() {
		t.Logf("RSS of %s: %d MiB", p.Name(), rss(t, p.Pid())>>20)
	}
}

func TestEchoPodServes(t *testing.T) {
	pod := echoPod("echo")
	started := time.Now()
	_, err := client.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { deletePod(t, pod.Name) })
	ip := awaitReady(t, pod.Name)
	t.Logf("pod Ready %s after its creation", time.Since(started).Round(time.Millisecond))

	resp, err := http.Get("http://" + ip + ":8080/hello")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var reply struct{ Service, Pod, RequestURI string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&reply))
	require.Equal(t, "echo", reply.Service)
	require.Equal(t, pod.Name, reply.Pod)
	require.Equal(t, "/hello", reply.RequestURI)
}

// echoPod is a pod of the echo image answering as Service name.
func echoPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:            "echo",
				Image:           EchoImage,
				ImagePullPolicy: corev1.PullNever,
				Env:             []corev1.EnvVar{{Name: "SERVICE", Value: name}},
				Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
}

// awaitReady waits until pod name is Ready and returns its IP.
func awaitReady(t *testing.T, name string) string {
	t.Helper()
	var last string
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	for {
		pod, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil && podReady(pod) {
			return pod.Status.PodIP
		}
		if err == nil {
			last = describe(pod)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s not Ready within %s: %s (kubelet log: %s)", name, waitFor, last, logOf("kubelet"))
		case <-time.After(tick):
		}
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// describe is a pod's phase and its containers' waiting reasons.
func describe(pod *corev1.Pod) string {
	s := string(pod.Status.Phase)
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			s += fmt.Sprintf("; %s: %s %s", c.Type, c.Reason, c.Message)
		}
	}
	for _, c := range pod.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil {
			s += fmt.Sprintf("; %s waiting: %s %s", c.Name, w.Reason, w.Message)
		}
	}
	return s
}

func deletePod(t *testing.T, name string) {
	err := client.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil {
		t.Errorf("deleting pod %s: %v", name, err)
	}
}

// logOf is the path of a component's log.
func logOf(name string) string {
	for _, p := range cp.Processes() {
		if p.Name() == name {
			return p.Log()
		}
	}
	return "(none)"
}

// rss is process pid's resident set size in bytes.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			_, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb)
			require.NoError(t, err)
			return kb << 10
		}
	}
	require.Fail(t, "no VmRSS", "pid %d", pid)
	return 0
}
