package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	nodeimages "example.com/apigateway-operator/test/node"
)

// nodeReadyTimeout bounds a run with a node until it is ready: building
// the images, waiting for another node on the machine to stop (one node
// runs per machine, see controlplane.EnterNodeNamespaces), the node's
// start.
const nodeReadyTimeout = 15 * time.Minute

// liveTimeout bounds the wait for the seed gateway's pods to be Live:
// the backends' and the gateway's pods start, and a rollout replaces the
// gateway's first pods (the seed's image) with the patched image's.
const liveTimeout = 5 * time.Minute

// TestMakeRunWithNode follows the path `make run` prints to a newcomer,
// on its node, from the machine's network namespace as a user's shell
// is: the seed sample and its echo backends applied, the gateway given the
// node's nginx image, `kubectl wait --for=condition=Live` returning, and a
// curl through `kubectl port-forward` to the gateway's Service reaching
// user-service and product-service. Ctrl-C then leaves nothing on the
// machine, and a second run at once starts; so does a hang-up with the
// output gone (`make run | tee`, tee stopped first), and a third run.
func TestMakeRunWithNode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("a node needs root: run as root (make test does)")
	}
	s := newSetup(t, true)
	before := machinePaths()

	t.Log("first run: a control plane and a node")
	r := s.start(t)
	r.waitReadyWithin(t, nodeReadyTimeout)
	s.tryTheGateway(t, r)
	r.stop(t, syscall.SIGINT)
	s.assertNothingLeftOnMachine(t, before)

	t.Log("second run, at once; then tee goes first and the terminal hangs up")
	r = s.start(t)
	r.waitReadyWithin(t, nodeReadyTimeout)
	_, err := s.kubectl(t, r, "", "get", "apigateway", gateway, "-n", "default")
	require.NoError(t, err, "the seed gateway did not survive the restart")
	r.closeOutput()
	require.NoError(t, syscall.Kill(-r.cmd.Process.Pid, syscall.SIGHUP))
	r.waitExit(t)
	require.NoError(t, r.err, "hack/run should stop cleanly on SIGHUP with its output gone")
	s.assertNothingLeftOnMachine(t, before)

	t.Log("third run, at once, after the hang-up")
	r = s.start(t)
	r.waitReadyWithin(t, nodeReadyTimeout)
	r.stop(t, syscall.SIGINT)
	s.assertNothingLeftOnMachine(t, before)
}

// tryTheGateway runs the commands hack/run prints for its node, and a
// request through the gateway to each backend.
func (s *setup) tryTheGateway(t *testing.T, r *run) {
	t.Helper()
	started := time.Now()
	_, err := s.kubectl(t, r, "", "apply", "-f", "manifests/samples/backends/")
	require.NoError(t, err)
	sample, err := os.ReadFile(filepath.Join(s.root, "manifests", "samples", "apigateway_v1.yaml"))
	require.NoError(t, err)
	// What the printed sed does: the node's nginx image in place of the
	// seed's, before the gateway exists.
	seed := regexp.MustCompile(`(?m)^(\s*image:).*$`).ReplaceAllString(string(sample), "$1 "+nodeimages.GatewayImage)
	_, err = s.kubectl(t, r, seed, "apply", "-f", "-")
	require.NoError(t, err)
	assert.Contains(t, r.output(), "sed 's|image: .*|image: "+nodeimages.GatewayImage+"|' ",
		"hack/run prints the image the test gives the seed")
	out, err := s.kubectlWithin(t, r, liveTimeout+time.Minute, "", "wait", "--for=condition=Live", "apigateway/"+gateway, "--timeout="+liveTimeout.String())
	require.NoError(t, err, "kubectl wait: %s\n%s", out, s.describeGateway(t, r))
	t.Logf("the seed gateway Live %s after kubectl apply", time.Since(started).Round(time.Millisecond))

	port := s.portForward(t, r)
	for path, service := range map[string]string{"/users/": "user-service", "/products/": "product-service"} {
		reply := curl(t, fmt.Sprintf("http://127.0.0.1:%s%s", port, path))
		assert.Equal(t, service, reply.Service, "GET %s reaches %s", path, service)
		assert.Equal(t, path, reply.RequestURI)
	}
	t.Logf("from hack/run's start to both backends answering through port-forward: %s", time.Since(r.started).Round(time.Millisecond))
}

// portForward runs `kubectl port-forward` to the gateway's Service on a
// port the kernel picks, until the test ends, and returns the port.
func (s *setup) portForward(t *testing.T, r *run) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(s.k8sBin, "kubectl"), "--kubeconfig="+r.kubeconfig,
		"port-forward", "service/"+gateway, ":80")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	forwarding := regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> \d+`)
	found := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		defer close(found)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			t.Logf("kubectl port-forward: %s", sc.Text())
			if m := forwarding.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-scanned
		_ = cmd.Wait()
	})
	select {
	case port, ok := <-found:
		require.True(t, ok, "kubectl port-forward exited before it forwarded")
		return port
	case <-time.After(pollTimeout):
		t.Fatalf("kubectl port-forward not forwarding after %s", pollTimeout)
		return ""
	}
}

// echoReply is what the echo backends answer.
type echoReply struct{ Service, Pod, RequestURI string }

// curl asks url for the seed's host with curl, as the README shows, and
// decodes the echo backend's reply.
func curl(t *testing.T, url string) echoReply {
	t.Helper()
	var reply echoReply
	eventually(t, "curl "+url, func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "curl", "-sS", "--fail-with-body", "--max-time", "15", "-H", "Host: api.example.com", url).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return json.Unmarshal(out, &reply)
	})
	return reply
}

// describeGateway is what a user would look at when the gateway is not
// Live: its conditions and its pods.
func (s *setup) describeGateway(t *testing.T, r *run) string {
	t.Helper()
	gw, _ := s.kubectl(t, r, "", "get", "apigateway", gateway, "-o", "jsonpath={.status.conditions}")
	pods, _ := s.kubectl(t, r, "", "get", "pods", "-o", "wide")
	return "conditions: " + gw + "\npods:\n" + pods
}

// nodeCgroupPattern matches the cgroups a node makes (one per hierarchy).
const nodeCgroupPattern = "/sys/fs/cgroup/*/apigateway-node-*"

// hostPaths are the machine's folders a node mounts over, in its own
// mount namespace (test/controlplane's hostPaths): a run that made one
// removes it when it stops.
var hostPaths = []string{"/run/containerd", "/var/lib/cni", "/var/lib/kubelet", "/var/log/containers", "/var/log/pods"}

// machinePaths are those of hostPaths that exist, and the node cgroups.
func machinePaths() []string {
	found, _ := filepath.Glob(nodeCgroupPattern)
	for _, p := range hostPaths {
		if _, err := os.Lstat(p); err == nil {
			found = append(found, p)
		}
	}
	return found
}

// assertNothingLeftOnMachine: no process of the run, no cgroup or folder
// the node made, nothing mounted under the run's folder as the machine
// sees it.
func (s *setup) assertNothingLeftOnMachine(t *testing.T, before []string) {
	t.Helper()
	assert.Empty(t, s.processesUsingRunDir(), "processes left behind")
	assert.ElementsMatch(t, before, machinePaths(), "cgroups or folders left on the machine")
	mounts, err := os.Open("/proc/self/mountinfo")
	require.NoError(t, err)
	defer mounts.Close()
	data, err := io.ReadAll(mounts)
	require.NoError(t, err)
	assert.NotContains(t, string(data), " "+s.runDir+"/", "mounts left under the run's folder")
	left, err := filepath.Glob(filepath.Join(s.runDir, "pids", "*.pid"))
	require.NoError(t, err)
	assert.Empty(t, left, "pid files left: hack/run did not stop its processes itself")
}
