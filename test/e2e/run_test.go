package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/controlplane"
	nodeimages "example.com/apigateway-operator/test/node"
	testports "example.com/apigateway-operator/test/ports"
	"example.com/apigateway-operator/test/testenv"
)

// Bounds of every wait. A loaded 2-core machine takes far longer than an idle
// one (about 10 s to ready), and a bound that trips there is a flake, not a
// finding.
const (
	readyTimeout = 3 * time.Minute
	// stopTimeout bounds a run's stop, a node's included (its pods,
	// containerd's shims, its cgroup and mounts).
	stopTimeout  = 3 * time.Minute
	pollTimeout  = time.Minute
	pollInterval = 250 * time.Millisecond
)

// components are the processes hack/run starts and records in
// $RUN_DIR/pids/<name>.pid.
var components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "apigateway-operator"}

const gateway = "my-app-gateway"

// children are what the operator makes for the seed sample.
var children = []string{
	"configmap/" + gateway + "-config",
	"deployment.apps/" + gateway,
	"service/" + gateway,
	"ingress.networking.k8s.io/" + gateway,
}

// invalidGateway names a TLS host that no route serves: only the validating
// webhook knows that rule, so its refusal shows the webhook is reachable at
// the URL manifests/local gives and trusts the operator's certificate.
// invalidGateway repeats a route in a form only the validating webhook sees
// through (percent-decoded): the schema admits it.
const invalidGateway = `{"apiVersion": "example.com/v1", "kind": "APIGateway",
 "metadata": {"name": "bad-dup", "namespace": "default"},
 "spec": {"routes": [{"host": "api.example.com", "path": "/users", "backendService": {"name": "svc", "port": 80}},
   {"host": "api.example.com", "path": "/%75sers", "backendService": {"name": "svc", "port": 80}}]}}`

// bareGateway sets neither image nor replicas: the defaults policy fills them.
const bareGateway = `{"apiVersion": "example.com/v1", "kind": "APIGateway",
 "metadata": {"name": "bare", "namespace": "default"},
 "spec": {"routes": [{"host": "bare.example.com", "backendService": {"name": "svc", "port": 80}}]}}`

// TestMakeRun runs hack/run three times on one scratch directory, as a user
// would: a first run on an empty cluster stopped with Ctrl-C (while it
// runs, a second one on the same directory is refused), a second run that
// finds the data of the first and dies by SIGKILL, taking every component
// with it, and a third run, on the ports the second held, whose output
// pipe is closed before Ctrl-C reaches it, as `make run 2>&1 | tee run.log`
// is when Ctrl-C stops tee first.
func TestMakeRun(t *testing.T) {
	s := newSetup(t, false)

	t.Log("first run: an empty cluster")
	r := s.start(t)
	r.waitReady(t)
	pids := s.componentPIDs(t)
	s.assertConcurrentRunRefused(t)
	s.applySeed(t, r)
	s.assertGatewayAPIMissing(t, r)
	s.assertDefaulted(t, r)
	s.assertInvalidRefused(t, r)
	s.assertReadAsV1alpha1(t, r)
	s.assertOnlyTheAPIServerAdmits(t)
	r.stop(t, syscall.SIGINT)
	s.assertNothingLeft(t, pids)

	t.Log("second run: the data of the first is still there")
	r = s.start(t)
	r.waitReady(t)
	_, err := s.kubectl(t, r, "", "get", "apigateway", gateway, "-n", "default")
	require.NoError(t, err, "the seed gateway did not survive the restart")
	s.assertGarbageCollected(t, r)
	pids = s.componentPIDs(t)
	// A crash or `kill -9` of the program: no cleanup runs, the kernel
	// kills its components (their parent-death signal). The next run,
	// started at once as an impatient user would, finds their ports free
	// by the time it needs them.
	require.NoError(t, syscall.Kill(r.cmd.Process.Pid, syscall.SIGKILL))
	r.waitExit(t)

	t.Log("third run, at once: the ports are free; then tee goes first")
	r = s.start(t)
	r.waitReady(t)
	for name, pid := range pids {
		assert.False(t, controlplane.Running(pid), "%s (pid %d) outlived the SIGKILLed hack/run", name, pid)
	}
	pids = s.componentPIDs(t)
	r.closeOutput()
	require.NoError(t, syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT))
	r.waitExit(t)
	require.NoError(t, r.err, "hack/run should stop cleanly with its output gone")
	s.assertNothingLeft(t, pids)
}

// setup holds what the runs share: one scratch directory and one set of ports.
type setup struct {
	root, k8sBin, runDir, runBin string
	env                          []string
	webhookPort                  int
	// node is whether the runs start a node (RUN_NODE).
	node bool
}

// newSetup prepares runs of hack/run, with a node or without (RUN_NODE=0).
func newSetup(t *testing.T, node bool) *setup {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	k8sBin := os.Getenv("KUBEBUILDER_ASSETS")
	if k8sBin == "" {
		k8sBin = filepath.Join(root, "bin", "k8s")
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl"} {
		_, err := os.Stat(filepath.Join(k8sBin, name))
		require.NoError(t, err, "control plane binary missing: run `make k8s`")
	}
	s := &setup{root: root, k8sBin: k8sBin, runDir: filepath.Join(t.TempDir(), "run"), node: node}
	// Registered after TempDir, so it runs before the directory is removed.
	t.Cleanup(s.killLeftovers)

	bin := t.TempDir()
	operator := filepath.Join(bin, "apigateway-operator")
	s.runBin = filepath.Join(bin, "run")
	for pkg, out := range map[string]string{"./cmd/apigateway-operator": operator, "./hack/run": s.runBin} {
		start := time.Now()
		build := exec.Command("go", "build", "-o", out, pkg)
		build.Dir = root
		output, err := build.CombinedOutput()
		require.NoError(t, err, "building %s:\n%s", pkg, output)
		t.Logf("built %s in %s", pkg, time.Since(start).Round(time.Millisecond))
	}

	// Reserved for the whole test (test/ports): every run binds the same
	// ports, as a user's runs do, and no other process takes them in
	// between; a run whose processes still held them would fail the next
	// run's start as before, so "the ports are free at once" still holds.
	ports := make([]int, 5)
	for i := range ports {
		ports[i] = testports.For(t)
	}
	s.webhookPort = ports[2]
	s.env = []string{
		"RUN_DIR=" + s.runDir,
		"RUN_FRESH=",
		"K8S_BIN=" + k8sBin,
		"OPERATOR_BIN=" + operator,
		"ETCD_PORT=" + strconv.Itoa(ports[0]),
		"APISERVER_PORT=" + strconv.Itoa(ports[1]),
		"WEBHOOK_PORT=" + strconv.Itoa(ports[2]),
		"PROBE_PORT=" + strconv.Itoa(ports[3]),
		"METRICS_PORT=" + strconv.Itoa(ports[4]),
		fmt.Sprintf("START_TIMEOUT=%d", int(readyTimeout.Seconds())),
	}
	if node {
		bin, err := nodeimages.BinDir()
		require.NoError(t, err)
		s.env = append(s.env, "RUN_NODE=1", "NODE_BIN="+bin)
	} else {
		s.env = append(s.env, "RUN_NODE=0")
	}
	return s
}

// applySeed applies the seed sample and waits for its four children and for
// kube-controller-manager to have made the Deployment's ReplicaSet.
func (s *setup) applySeed(t *testing.T, r *run) {
	t.Helper()
	_, err := s.kubectl(t, r, "", "apply", "-f", "manifests/samples/apigateway_v1.yaml")
	require.NoError(t, err)
	eventually(t, "the four children of the seed gateway", func() error {
		_, err := s.kubectl(t, r, "", append([]string{"get", "-n", "default", "-o", "name"}, children...)...)
		return err
	})
	eventually(t, "a ReplicaSet for the gateway's Deployment", func() error {
		out, err := s.kubectl(t, r, "", "get", "replicasets", "-n", "default", "-o", "name",
			"-l", "app.kubernetes.io/instance="+gateway)
		if err == nil && strings.TrimSpace(out) == "" {
			err = errors.New("none yet")
		}
		return err
	})
}

// assertGatewayAPIMissing: the cluster hack/run starts has no Gateway API
// CRDs. The operator runs anyway (the seed got its children), and a
// gateway that asks for HTTPRoutes is stored and says in `kubectl get agw`
// that the API is missing, with no Ingress made in its place. Gateway API
// installed then, the operator (as its ServiceAccount, which may read only
// the HTTPRoute CRD) gives the gateway its HTTPRoute without a restart;
// the later runs start with Gateway API installed.
func (s *setup) assertGatewayAPIMissing(t *testing.T, r *run) {
	t.Helper()
	_, err := s.kubectl(t, r, "", "apply", "-f", "manifests/samples/apigateway_httproute.yaml")
	require.NoError(t, err)
	eventually(t, "the HTTPRoute gateway reporting GatewayAPIMissing", func() error {
		out, err := s.kubectl(t, r, "", "get", "agw", "shop-gateway", "-n", "default", "--no-headers")
		if err == nil && !strings.Contains(out, "GatewayAPIMissing") {
			err = fmt.Errorf("kubectl get agw: %s", out)
		}
		return err
	})
	out, err := s.kubectl(t, r, "", "get", "agw", "shop-gateway", "-n", "default",
		"-o", `jsonpath={.status.conditions[?(@.type=="Exposed")].message}`)
	require.NoError(t, err)
	assert.Contains(t, out, "does not serve gateway.networking.k8s.io/v1 HTTPRoutes", "the condition says what is missing")
	_, err = s.kubectl(t, r, "", "get", "ingress", "shop-gateway", "-n", "default")
	assert.Error(t, err, "no Ingress stands in for the HTTPRoutes")

	crds, err := testenv.GatewayAPICRDs()
	require.NoError(t, err)
	args := []string{"apply", "--server-side"}
	for _, f := range crds {
		args = append(args, "-f", f)
	}
	_, err = s.kubectl(t, r, "", args...)
	require.NoError(t, err)
	eventually(t, "the HTTPRoute gateway getting its HTTPRoute once Gateway API is installed", func() error {
		out, err := s.kubectl(t, r, "", "get", "httproutes", "-n", "default", "-l", "app.kubernetes.io/instance=shop-gateway", "-o", "name")
		if err == nil && strings.TrimSpace(out) == "" {
			err = errors.New("none yet")
		}
		return err
	})
	_, err = s.kubectl(t, r, "", "delete", "-f", "manifests/samples/apigateway_httproute.yaml", "--wait")
	require.NoError(t, err)
}

func (s *setup) assertDefaulted(t *testing.T, r *run) {
	t.Helper()
	out, err := s.kubectl(t, r, bareGateway, "create", "-f", "-", "-o", "jsonpath={.spec.image} {.spec.replicas} {.spec.routes[0].pathType}")
	require.NoError(t, err)
	assert.Regexp(t, `^\S+ 1 Prefix$`, out, "image, replicas and pathType are defaulted")
}

func (s *setup) assertInvalidRefused(t *testing.T, r *run) {
	t.Helper()
	out, err := s.kubectl(t, r, invalidGateway, "apply", "-f", "-")
	require.Error(t, err, "an APIGateway repeating a route once decoded was admitted: %s", out)
	assert.Contains(t, err.Error(), `spec.routes[1]: Duplicate value: "api.example.com/%75sers (Prefix)"`)
}

// assertReadAsV1alpha1 reads the seed gateway through the conversion webhook.
func (s *setup) assertReadAsV1alpha1(t *testing.T, r *run) {
	t.Helper()
	eventually(t, "reading the seed gateway as v1alpha1", func() error {
		out, err := s.kubectl(t, r, "", "get", "apigateways.v1alpha1.example.com", gateway, "-n", "default",
			"-o", "jsonpath={.apiVersion} {.spec.routes[0].prefix} {.spec.routes[0].serviceName}")
		if err != nil {
			return err
		}
		if want := "example.com/v1alpha1 /users/ user-service"; out != want {
			return fmt.Errorf("got %q, want %q", out, want)
		}
		return nil
	})
}

// assertOnlyTheAPIServerAdmits posts an AdmissionReview to the validating
// webhook as any pod could: without a client certificate it is refused;
// with the one hack/run made for kube-apiserver it is answered. The
// conversion webhook stays open (kube-apiserver presents no certificate to
// it), which assertReadAsV1alpha1 relies on.
func (s *setup) assertOnlyTheAPIServerAdmits(t *testing.T) {
	t.Helper()
	gw := &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"}}
	review, err := testenv.AdmissionReview("e2e", gw)
	require.NoError(t, err)
	apiServerCert, err := tls.LoadX509KeyPair(filepath.Join(s.runDir, "pki", "webhook-client.crt"), filepath.Join(s.runDir, "pki", "webhook-client.key"))
	require.NoError(t, err, "hack/run writes kube-apiserver's webhook client certificate")
	url := fmt.Sprintf("https://127.0.0.1:%d/validate-example-com-v1-apigateway", s.webhookPort)
	for name, tc := range map[string]struct {
		certs []tls.Certificate
		want  int
	}{
		"no client certificate":        {want: http.StatusUnauthorized},
		"kube-apiserver's certificate": {certs: []tls.Certificate{apiServerCert}, want: http.StatusOK},
	} {
		// The test checks who may call, not the server's identity.
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: tc.certs}, //nolint:gosec // see above
		}}
		resp, err := c.Post(url, "application/json", bytes.NewReader(review))
		require.NoError(t, err, name)
		_ = resp.Body.Close()
		assert.Equal(t, tc.want, resp.StatusCode, name)
	}
}

// assertGarbageCollected deletes the seed gateway and waits for
// kube-controller-manager's garbage collector to delete its children.
func (s *setup) assertGarbageCollected(t *testing.T, r *run) {
	t.Helper()
	_, err := s.kubectl(t, r, "", "delete", "apigateway", gateway, "-n", "default", "--wait=false")
	require.NoError(t, err)
	eventually(t, "the garbage collector deleting the children", func() error {
		out, err := s.kubectl(t, r, "", "get", "configmaps,deployments,services,ingresses", "-n", "default",
			"-o", "name", "-l", "app.kubernetes.io/instance="+gateway)
		if err == nil && strings.TrimSpace(out) != "" {
			err = fmt.Errorf("still there: %s", strings.Join(strings.Fields(out), " "))
		}
		return err
	})
}

// assertConcurrentRunRefused starts a second run on the scratch directory
// of a running one: it must exit at once, saying why, and leave the first
// run's processes alone (the callers' later checks use them).
func (s *setup) assertConcurrentRunRefused(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), pollTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.runBin)
	cmd.Dir = s.root
	cmd.Env = append(os.Environ(), s.env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "a second run on the same RUN_DIR should fail:\n%s", out)
	assert.Contains(t, string(out), "another run is using "+s.runDir)
	assert.NotContains(t, string(out), "left over", "the running run's processes are no leftovers")
}

// componentPIDs reads the pid files of a running hack/run.
func (s *setup) componentPIDs(t *testing.T) map[string]int {
	t.Helper()
	pids := make(map[string]int, len(components))
	for _, name := range components {
		data, err := os.ReadFile(filepath.Join(s.runDir, "pids", name+".pid"))
		require.NoError(t, err)
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		require.NoError(t, err)
		require.True(t, controlplane.Running(pid), "%s (pid %d) is not running", name, pid)
		pids[name] = pid
	}
	return pids
}

func (s *setup) assertNothingLeft(t *testing.T, pids map[string]int) {
	t.Helper()
	for name, pid := range pids {
		assert.False(t, controlplane.Running(pid), "%s (pid %d) outlived hack/run", name, pid)
	}
	assert.Empty(t, s.processesUsingRunDir(), "processes left behind")
	// Stop removes the pid files: the launcher stopped them itself, in
	// order, rather than the kernel killing them with it.
	left, err := filepath.Glob(filepath.Join(s.runDir, "pids", "*.pid"))
	require.NoError(t, err)
	assert.Empty(t, left, "pid files left: hack/run did not stop its processes itself")
}

// processesUsingRunDir finds live processes whose command line names a path
// in the scratch directory: every component of hack/run has one.
func (s *setup) processesUsingRunDir() map[int]string {
	found := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(s.runDir+"/")) || !controlplane.Running(pid) {
			continue
		}
		found[pid] = string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	}
	return found
}

// killLeftovers is the safety net of a failed test: nothing it started may
// outlive it.
func (s *setup) killLeftovers() {
	for pid := range s.processesUsingRunDir() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// kubectl runs the real kubectl against the kubeconfig hack/run printed.
// It returns standard output; the error holds standard error, where kubectl
// puts both its errors and the API's warnings.
func (s *setup) kubectl(t *testing.T, r *run, stdin string, args ...string) (string, error) {
	t.Helper()
	return s.kubectlWithin(t, r, 30*time.Second, stdin, args...)
}

// kubectlWithin is kubectl bounded by timeout.
func (s *setup) kubectlWithin(t *testing.T, r *run, timeout time.Duration, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.k8sBin, "kubectl"), append([]string{"--kubeconfig=" + r.kubeconfig}, args...)...)
	cmd.Dir = s.root
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// run is one hack/run process.
type run struct {
	cmd *exec.Cmd
	// pipe is the read end of hack/run's output.
	pipe *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	// scanned is closed once every holder of the output pipe (hack/run and
	// the processes it started) has closed it.
	scanned chan struct{}
	// kubeconfig is the path hack/run prints; set before ready is closed.
	kubeconfig string
	started    time.Time
	readyAfter time.Duration // set before ready is closed
	ready      chan struct{}
	done       chan struct{}
	err        error // of cmd.Wait, once done is closed
}

// start runs hack/run (built as `make run` builds it) from the repository
// root in its own process group, as a terminal would for `make run`.
func (s *setup) start(t *testing.T) *run {
	t.Helper()
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	r := &run{ready: make(chan struct{}), done: make(chan struct{}), scanned: make(chan struct{}), pipe: pr}
	r.cmd = exec.Command(s.runBin)
	r.cmd.Dir = s.root
	r.cmd.Env = append(os.Environ(), s.env...)
	r.cmd.Stdout, r.cmd.Stderr = pw, pw
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r.started = time.Now()
	err = r.cmd.Start()
	_ = pw.Close() // hack/run and the operator hold their own copies
	require.NoError(t, err)
	go r.scan(pr, s.root)
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
			<-r.done
		}
		if t.Failed() {
			t.Logf("hack/run output:\n%s", r.output())
			s.logTails(t)
		}
	})
	return r
}

// scan keeps hack/run's output and watches for the kubeconfig line the
// ready message holds.
func (r *run) scan(pr *os.File, root string) {
	defer close(r.scanned)
	defer pr.Close()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var readySeen bool
	for sc.Scan() {
		line := sc.Text()
		r.mu.Lock()
		r.out.WriteString(line + "\n")
		r.mu.Unlock()
		switch {
		case strings.Contains(line, "==> Ready:"):
			readySeen = true
		case readySeen && r.kubeconfig == "" && strings.HasPrefix(strings.TrimSpace(line), "export KUBECONFIG="):
			path := strings.TrimPrefix(strings.TrimSpace(line), "export KUBECONFIG=")
			if !filepath.IsAbs(path) {
				path = filepath.Join(root, path)
			}
			r.kubeconfig = path
			r.readyAfter = time.Since(r.started)
			close(r.ready)
		}
	}
}

// closeOutput closes the only read end of hack/run's output, as tee's
// exit does: its next write fails with EPIPE (or raises SIGPIPE).
func (r *run) closeOutput() {
	_ = r.pipe.Close()
	<-r.scanned
}

func (r *run) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

func (r *run) waitReady(t *testing.T) { r.waitReadyWithin(t, readyTimeout) }

func (r *run) waitReadyWithin(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-r.ready:
		t.Logf("hack/run ready after %s", r.readyAfter.Round(time.Millisecond))
	case <-r.done:
		t.Fatalf("hack/run exited before it was ready: %v", r.err)
	case <-time.After(timeout):
		t.Fatalf("hack/run not ready after %s", timeout)
	}
}

// stop sends sig to hack/run's process group, as Ctrl-C in a terminal
// does, and expects a clean exit after which no process holds its output.
func (r *run) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	started := time.Now()
	require.NoError(t, syscall.Kill(-r.cmd.Process.Pid, sig))
	r.waitExit(t)
	t.Logf("hack/run stopped %s after %s", sig, time.Since(started).Round(time.Millisecond))
	require.NoError(t, r.err, "hack/run should exit 0 after %s", sig)
	select {
	case <-r.scanned:
	case <-time.After(stopTimeout):
		t.Fatalf("a process hack/run started still holds its output %s after it exited", stopTimeout)
	}
	assert.Contains(t, r.output(), "==> Stopped.")
}

func (r *run) waitExit(t *testing.T) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(stopTimeout):
		t.Fatalf("hack/run still running %s after the signal", stopTimeout)
	}
}

// logTails prints the end of each component's log for a failed test.
func (s *setup) logTails(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join(s.runDir, "logs", "*.log"))
	for _, f := range logs {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		t.Logf("--- %s (last lines):\n%s", filepath.Base(f), strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
}

// eventually polls check until it succeeds, failing with its last error after
// pollTimeout.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(pollTimeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %s: %v", what, pollTimeout, err)
		}
		time.Sleep(pollInterval)
	}
}
