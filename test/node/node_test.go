package node

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/apigateway-operator/test/controlplane"
)

func TestNodeIsReady(t *testing.T) {
	var n corev1.Node
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Name: nodeName}, &n))
	require.Contains(t, n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: controlplane.NodeIP})
	t.Logf("node Ready %s after the kubelet started", env.ControlPlane().NodeStartup().Round(time.Millisecond))
	for _, p := range env.ControlPlane().Processes() {
		t.Logf("RSS of %s: %d MiB", p.Name(), rss(t, p.Pid())>>20)
	}
}

func TestEchoPodServes(t *testing.T) {
	pod := echoPod("default", "echo")
	started := time.Now()
	require.NoError(t, env.Client.Create(t.Context(), pod))
	t.Cleanup(func() { deletePod(t, pod) })
	ip := awaitReady(t, pod)
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

// echoPod is a pod of the echo image in namespace ns, answering as
// Service name (labeled app=name).
func echoPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
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

// awaitReady waits until pod is Ready and returns its IP.
func awaitReady(t testing.TB, pod *corev1.Pod) string {
	t.Helper()
	var last string
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	for {
		var cur corev1.Pod
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &cur)
		if err == nil && podReady(&cur) {
			return cur.Status.PodIP
		}
		if err == nil {
			last = describe(&cur)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s not Ready within %s: %s (kubelet log: %s)", pod.Name, waitFor, last, logOf("kubelet"))
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

func deletePod(t *testing.T, pod *corev1.Pod) {
	if err := env.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Errorf("deleting pod %s: %v", pod.Name, err)
	}
}

// logOf is the path of a component's log.
func logOf(name string) string {
	for _, p := range env.ControlPlane().Processes() {
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
	bytes, ok := vmRSS(string(data))
	require.True(t, ok, "no VmRSS for pid %d", pid)
	return bytes
}

// vmRSS is the resident set size in bytes a /proc/<pid>/status gives;
// false when it gives none (a zombie's) or one that does not parse.
func vmRSS(status string) (int64, bool) {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
				return 0, false
			}
			return kb << 10, true
		}
	}
	return 0, false
}

// The API server reaches the kubelet at the node's address: kubectl logs
// shows the pod's output, and kubectl port-forward reaches its port.
func TestKubectlReachesThePod(t *testing.T) {
	pod := echoPod("default", "forwarded")
	require.NoError(t, env.Client.Create(t.Context(), pod))
	t.Cleanup(func() { deletePod(t, pod) })
	awaitReady(t, pod)

	logs := env.Kubectl(t.Context(), nil, "logs", "-n", pod.Namespace, pod.Name)
	require.NoError(t, logs.Err)
	require.Contains(t, logs.Stdout, "serving on :8080")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cmd := env.KubectlCommand(ctx, "port-forward", "-n", pod.Namespace, "pod/"+pod.Name, ":8080")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { cancel(); _ = cmd.Wait() }()
	// "Forwarding from 127.0.0.1:40123 -> 8080"
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	local, _, ok := strings.Cut(strings.TrimPrefix(line, "Forwarding from "), " ->")
	require.True(t, ok, "kubectl port-forward printed %q", line)

	resp, err := http.Get("http://" + local + "/through-the-kubelet")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var reply struct{ Pod, RequestURI string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&reply))
	require.Equal(t, pod.Name, reply.Pod)
	require.Equal(t, "/through-the-kubelet", reply.RequestURI)
}
