// Command run is what `make run` runs: the operator against a control plane
// and a node on this machine, for someone with no cluster.
//
// It starts etcd, kube-apiserver and kube-controller-manager (the ./bin/k8s
// binaries `make k8s` builds, started by test/controlplane as the tests
// start theirs) on 127.0.0.1 with their data in $RUN_DIR and, unless
// RUN_NODE=0, a node: kube-scheduler, containerd, a kubelet and kube-proxy
// (./bin/node, `make node`), in network, mount and PID namespaces of their
// own with the control plane and the operator (see enterNode: the API
// server is still reached at 127.0.0.1 from the machine), the images its
// pods run written as OCI tars and imported (test/node's: no registry), a
// stand-in for the cluster DNS at the node's address. It writes an admin
// kubeconfig, installs manifests/local (CRD, webhook configurations
// pointed at 127.0.0.1, RBAC, the empty certificate Secret) and runs the
// real operator binary in self-signed certificate mode, as the operator's
// ServiceAccount so the generated least-privilege RBAC is what applies, as
// in a cluster. The kube-apiserver presents a client certificate to the
// admission webhooks (its admission configuration), and the operator
// accepts no other caller there (--webhook-client-ca). Ctrl-C (or
// SIGTERM/SIGHUP) stops everything, operator first, etcd last, also when
// the output is gone (`make run | tee`, tee stopped by the same Ctrl-C); a
// second one kills what is still stopping. The node's stop kills its pods,
// removes its cgroup and unmounts what it mounted; what it ran, mounted
// and configured lived in its namespaces, which end with the run. Whatever
// kills this program instead (SIGKILL, a crash), the kernel kills what it
// started (test/controlplane's parent-death signal): nothing keeps the
// ports. The data stays in $RUN_DIR, so the next run starts where this one
// stopped; the node's (RUN_DIR/node) starts empty each time.
//
// Arguments are passed on to the operator (e.g. `go run ./hack/run
// --zap-log-level=debug`, or `make run ARGS=--zap-log-level=debug`).
//
// Environment (all optional):
//
//	RUN_DIR         scratch directory: data, certificates, kubeconfigs, logs (bin/run)
//	RUN_FRESH=1     delete RUN_DIR's content first: start from an empty cluster
//	K8S_BIN         etcd, kube-apiserver, kube-controller-manager, kubectl (bin/k8s)
//	OPERATOR_BIN    the operator binary (bin/apigateway-operator)
//	RUN_NODE=0      no node: the control plane alone, no root needed; the
//	                gateways' pods stay Pending
//	NODE_BIN        kubelet, kube-scheduler, kube-proxy, containerd, ctr and
//	                the runc shim (bin/node)
//	ETCD_PORT, APISERVER_PORT, WEBHOOK_PORT, PROBE_PORT, METRICS_PORT
//	                loopback ports (12379, 16443, 9443, 18081, 18443); 0 picks a free one
//	                and reserves it until the run ends
//	START_TIMEOUT   seconds each component may take to become ready (90)
//	STOP_TIMEOUT    seconds each component may take to stop before SIGKILL (20)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"example.com/apigateway-operator/test/controlplane"
	nodeimages "example.com/apigateway-operator/test/node"
	"example.com/apigateway-operator/test/ports"
	"example.com/apigateway-operator/test/testenv"
)

// The namespace of the operator's Secret and namespaced RBAC
// (manifests/local), and its ServiceAccount.
const (
	operatorNS = "apigateway-operator-system"
	operatorSA = "apigateway-operator"
)

// controllers are kube-controller-manager's: garbage collection,
// Deployments, ReplicaSets, namespaces, service accounts and the root CA
// each namespace's ConfigMap kube-root-ca.crt holds (a pod that mounts its
// service account's token waits for it, ContainerCreating); with a node,
// test/controlplane adds those it needs (node lifecycle, EndpointSlices).
// Without one (RUN_NODE=0), the gateways' Pods are created and stay
// Pending, which is enough to see rollouts and owner references at work.
var controllers = []string{
	"garbage-collector-controller", "deployment-controller", "replicaset-controller",
	"namespace-controller", "serviceaccount-controller", "root-ca-certificate-publisher-controller",
}

func main() { os.Exit(run(os.Args[1:])) }

// runner is one run: its configuration, its control plane, its terminal.
type runner struct {
	config
	root string
	cp   *controlplane.ControlPlane
	// nodeRun is the node's, when config.node.
	nodeRun *nodeRun
	// bold and plain frame headings on a terminal only, so logs and tests
	// read plain text.
	bold, plain string
}

func run(operatorArgs []string) int {
	r, err := newRunner()
	if err != nil {
		fmt.Fprintf(os.Stderr, "hack/run: %v\n", err)
		return 1
	}
	// `make run 2>&1 | tee run.log` and Ctrl-C: tee exits first, and the
	// next line written would kill the program (SIGPIPE) before it stops
	// what it started. Notified, SIGPIPE only makes such writes fail.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	if r.node {
		code, done, err := r.enterNode()
		if err != nil {
			fmt.Fprintf(os.Stderr, "hack/run: %v\n", err)
			return max(code, 1)
		}
		if done {
			return code
		}
		r.nodeRun = r.newNodeRun()
	}
	// A signal stops the run; one that arrives while it stops hurries the
	// stopping: what is still running is killed.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	ctx, stop := context.WithCancelCause(context.Background())
	hurry, hurryUp := context.WithCancel(context.Background())
	go func() {
		for sig := range sigs {
			if ctx.Err() == nil {
				stop(signalled{sig.(syscall.Signal)})
			} else {
				hurryUp()
			}
		}
	}()

	err = r.start(ctx, operatorArgs)
	if err == nil {
		r.printReady()
		err = r.wait(ctx)
	}
	stop(errStopping)
	var sig signalled
	if errors.As(context.Cause(ctx), &sig) {
		fmt.Println()
		r.log(fmt.Sprintf("Stopping (%s)", sig))
		err = nil
	} else if err != nil {
		fmt.Fprintf(os.Stderr, "hack/run: %v\n", err)
	}
	if r.cp != nil {
		// Processes that had to be killed are worth a line, not a failure.
		if serr := r.cp.Stop(hurry); serr != nil {
			fmt.Fprintf(os.Stderr, "hack/run: %v\n", serr)
		}
	}
	if r.nodeRun != nil {
		if nerr := r.nodeRun.close(); nerr != nil {
			fmt.Fprintf(os.Stderr, "hack/run: %v\n", nerr)
		}
	}
	if err != nil {
		return 1
	}
	r.log(fmt.Sprintf("Stopped. The cluster's data stays in %s; run again to continue, RUN_FRESH=1 to start empty.", r.show(r.runDir)))
	return 0
}

// errStopping is the cause of a run that stops for another reason than a
// signal: an error, or a process that died.
var errStopping = errors.New("stopping")

func newRunner() (*runner, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	cfg, err := parseConfig(os.Getenv, root, cwd)
	if err != nil {
		return nil, err
	}
	r := &runner{config: cfg, root: root}
	if fi, err := os.Stdout.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		r.bold, r.plain = "\033[1m", "\033[0m"
	}
	return r, r.checkTools()
}

// signalled is the cause of a run stopped by a signal.
type signalled struct{ sig syscall.Signal }

func (s signalled) Error() string { return s.String() }

func (s signalled) String() string {
	if name, ok := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP"}[s.sig]; ok {
		return name
	}
	return s.sig.String()
}

// start takes RUN_DIR (stopping what a killed run left there), starts the
// control plane, installs manifests/local and starts the operator.
func (r *runner) start(ctx context.Context, operatorArgs []string) error {
	// The operator's ports are chosen now: manifests/local and the
	// webhook client certificate name the webhook port. A picked one is
	// reserved (test/ports) until this program exits, so no other process
	// takes it before the operator binds it.
	for _, port := range []*int{&r.webhookPort, &r.probePort, &r.metricsPort} {
		if *port == 0 {
			p, err := ports.Reserve()
			if err != nil {
				return err
			}
			*port = p.Number
		}
	}
	var node *controlplane.NodeOptions
	if r.nodeRun != nil {
		node = r.nodeRun.opts
	}
	var err error
	r.cp, err = controlplane.New(controlplane.Options{
		BinDir:            r.k8sBin,
		Dir:               r.runDir,
		Fresh:             r.fresh,
		EtcdPort:          r.etcdPort,
		APIServerPort:     r.apiServerPort,
		Controllers:       controllers,
		WebhookClientHost: net.JoinHostPort("127.0.0.1", strconv.Itoa(r.webhookPort)),
		Users:             []controlplane.User{controlplane.ServiceAccount(operatorNS, operatorSA)},
		StartTimeout:      r.startTimeout,
		StopTimeout:       r.stopTimeout,
		Node:              node,
		Log:               r.log,
	})
	if errors.Is(err, controlplane.ErrInUse) {
		return fmt.Errorf("%w (RUN_DIR)", err)
	} else if err != nil {
		return err
	}
	if r.nodeRun != nil {
		// RUN_DIR is this run's now (RUN_FRESH emptied it): the images
		// go in, and the node's options, which New shares, name them.
		if err := r.writeImages(); err != nil {
			return err
		}
		if err := r.serveAPIServer(); err != nil {
			return err
		}
	}
	// Now that an earlier run's leftovers are stopped, only a stranger's
	// port counts.
	if err := r.checkPorts(); err != nil {
		return err
	}
	if err := r.cp.Start(ctx); err != nil {
		return err
	}
	if r.nodeRun != nil {
		if err := r.serveClusterDNS(); err != nil {
			return err
		}
	}
	if err := r.installManifests(ctx); err != nil {
		return err
	}
	return r.startOperator(ctx, operatorArgs)
}

// wait runs until a signal arrives or a process exits.
func (r *runner) wait(ctx context.Context) error {
	died := make(chan *controlplane.Process, len(r.cp.Processes()))
	for _, p := range r.cp.Processes() {
		go func() {
			<-p.Done()
			died <- p
		}()
	}
	select {
	case <-ctx.Done():
		return nil
	case p := <-died:
		return &controlplane.ProcessError{Name: p.Name(), What: fmt.Sprintf("exited unexpectedly (%v)", p.Err()), Log: p.Log()}
	}
}

func (r *runner) checkTools() error {
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl"} {
		if !executable(filepath.Join(r.k8sBin, name)) {
			return fmt.Errorf("%s is missing: run `make k8s` (or `make run`, which builds it)", r.show(filepath.Join(r.k8sBin, name)))
		}
	}
	if !executable(r.operatorBin) {
		return fmt.Errorf("%s is missing: run `make build` (or `make run`, which builds it)", r.show(r.operatorBin))
	}
	if !r.node {
		return nil
	}
	for _, name := range nodeimages.Tools {
		if !executable(filepath.Join(r.nodeBin, name)) {
			return fmt.Errorf("%s is missing: run `make node` (or `make run`, which builds it), or RUN_NODE=0 for the control plane alone", r.show(filepath.Join(r.nodeBin, name)))
		}
	}
	return nil
}

// portWait bounds how long a run waits for a port in use: the components
// of a run that was just killed (kill -9, a crash) die of their
// parent-death signal, which takes a moment under load, and a run started
// at once should find their ports free rather than fail.
const portWait = 15 * time.Second

// listenWhenFree listens on 127.0.0.1:port, trying again for up to
// portWait while another process still holds it.
func listenWhenFree(port int) (net.Listener, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(portWait)
	for {
		l, err := net.Listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			return l, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// checkPorts fails on a port (0 excepted: it is picked) another process
// listens on.
func (r *runner) checkPorts() error {
	for _, p := range r.ports() {
		if *p.port == 0 {
			continue
		}
		l, err := listenWhenFree(*p.port)
		if err != nil {
			return fmt.Errorf("127.0.0.1:%d is in use; pick another port with %s=... (0 for any free one)", *p.port, p.name)
		}
		_ = l.Close()
	}
	return nil
}

// installManifests applies manifests/local, its webhooks pointed at the
// operator's port, and keeps kubectl's output in logs/install.log.
func (r *runner) installManifests(ctx context.Context) error {
	url := fmt.Sprintf("https://127.0.0.1:%d", r.webhookPort)
	r.log("Installing manifests/local (CRD, webhook configurations -> " + url + ", RBAC, certificate Secret)")
	out, err := r.cp.InstallLocal(ctx, r.root, url)
	if werr := os.WriteFile(filepath.Join(r.runDir, "logs", "install.log"), out, 0o600); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// startOperator runs the operator as its ServiceAccount, its output on
// the console, until it is ready: its certificate is then trusted by all
// three CA bundles.
func (r *runner) startOperator(ctx context.Context, extra []string) error {
	kubeconfig := filepath.Join(r.runDir, "operator.kubeconfig")
	if err := r.cp.WriteKubeconfig(kubeconfig, controlplane.ServiceAccount(operatorNS, operatorSA).Name); err != nil {
		return err
	}
	r.log(fmt.Sprintf("Starting %s (webhooks on https://127.0.0.1:%d for kube-apiserver's client certificate, probes on 127.0.0.1:%d)",
		r.show(r.operatorBin), r.webhookPort, r.probePort))
	var images []string
	if r.nodeRun != nil {
		// The node's: the gateway pods' init container copies the
		// reloader from the operator's image, and gateways that name no
		// image run the nginx make run imported.
		images = []string{"--reloader-image=" + nodeimages.OperatorImage, "--default-gateway-image=" + nodeimages.GatewayImage}
	}
	_, err := r.cp.Run(ctx, controlplane.Command{
		Name: "apigateway-operator",
		Path: r.operatorBin,
		Args: slices.Concat([]string{
			"--kubeconfig=" + kubeconfig,
			"--webhook-client-ca=" + r.cp.WebhookClientAuth().CA,
			"--cert-mode=self-signed",
			"--cert-extra-hosts=127.0.0.1,localhost",
			"--cert-secret-namespace=" + operatorNS,
			"--webhook-port=" + strconv.Itoa(r.webhookPort),
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", r.probePort),
			fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", r.metricsPort),
			"--graceful-shutdown-timeout=10s",
			"--zap-encoder=console",
		}, images, extra),
		Stdout: &console{w: os.Stdout},
		Stderr: &console{w: os.Stderr},
		Ready:  controlplane.ReadyWhenOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", r.probePort)),
	})
	return err
}

// console passes the operator's output on to this program's and, once
// that is closed (tee gone), drops it: the operator writes to a pipe this
// program holds, so it is stopped in order rather than killed by SIGPIPE.
type console struct {
	w    io.Writer
	gone atomic.Bool
}

func (c *console) Write(p []byte) (int, error) {
	if !c.gone.Load() {
		if _, err := c.w.Write(p); err != nil {
			c.gone.Store(true)
		}
	}
	return len(p), nil
}

func (r *runner) log(msg string) {
	fmt.Printf("%s==> %s%s\n", r.bold, strings.ReplaceAll(msg, r.root+"/", "./"), r.plain)
}

// show prints a path relative to the repository when it is inside it,
// since `make run` is started from there.
func (r *runner) show(path string) string {
	if rel, ok := strings.CutPrefix(path, r.root+"/"); ok {
		return "./" + rel
	}
	return path
}

func (r *runner) printReady() {
	k := r.show(filepath.Join(r.k8sBin, "kubectl"))
	samples := filepath.Join(r.root, "manifests", "samples")
	fmt.Println()
	if r.nodeRun != nil {
		r.log("Ready: apigateway-operator is running against a local control plane with a node.")
	} else {
		r.log("Ready: apigateway-operator is running against a local control plane.")
	}
	fmt.Printf("\n  export KUBECONFIG=%s\n", filepath.Join(r.runDir, "kubeconfig"))
	if r.nodeRun != nil {
		r.printTryNode(k, samples)
	} else {
		fmt.Printf(`
  # the seed sample, and the children the operator makes for it
  %s apply -f %s
  %s get apigateways
  %s get configmaps,deployments,services,ingresses -l app.kubernetes.io/instance=my-app-gateway
`, k, r.show(filepath.Join(samples, "apigateway_v1.yaml")), k, k)
	}
	if invalid, _ := filepath.Glob(filepath.Join(samples, "invalid", "*.yaml")); len(invalid) > 0 {
		fmt.Printf(`
  # invalid samples: each is refused with the field at fault
  %s apply -f %s/
`, k, r.show(filepath.Join(samples, "invalid")))
	} else {
		fmt.Printf(`
  # an invalid gateway is refused with the field at fault
  %s apply -f - <<'YAML'
  {apiVersion: example.com/v1, kind: APIGateway, metadata: {name: bad-tls},
   spec: {routes: [{host: api.example.com, backendService: {name: svc, port: 80}}],
          tls: [{hosts: [www.example.com], secretName: tls}]}}
YAML
`, k)
	}
	fmt.Printf(`
  # the same gateway as the older v1alpha1 API sees it (converted by the webhook)
  %s get apigateways.v1alpha1.example.com my-app-gateway -o yaml
`, k)
	if r.nodeRun == nil {
		fmt.Printf("\nPods stay Pending: there is no node (RUN_NODE=0).")
	}
	fmt.Printf(`
Logs are in %s/, the operator's below. Ctrl-C stops everything.

`, r.show(filepath.Join(r.runDir, "logs")))
}

// printTryNode prints the newcomer's path on the node: the seed sample
// with its backends, its gateway pods Live, and a request through them.
func (r *runner) printTryNode(k, samples string) {
	fmt.Printf(`
  # the seed sample's backends: echo servers answering as user-service and
  # product-service
  %s apply -f %s/
  # the seed sample, and the children the operator makes for it. It names
  # nginx/nginx-plus:latest, from NGINX's registry, which this node cannot
  # reach: it runs the nginx image make run built and imported instead (set
  # before the gateway exists: pods first made for :latest keep
  # imagePullPolicy Always, and would try to pull the new image too)
  sed 's|image: .*|image: %s|' %s | %s apply -f -
  %s get configmaps,deployments,services,ingresses -l app.kubernetes.io/instance=my-app-gateway
  %s wait --for=condition=Live apigateway/my-app-gateway --timeout=5m

  # a request through the gateway's Service reaches each backend
  %s port-forward service/my-app-gateway 8080:80 &
  curl -H 'Host: api.example.com' http://127.0.0.1:8080/users/
  curl -H 'Host: api.example.com' http://127.0.0.1:8080/products/
`, k, r.show(filepath.Join(samples, "backends")), nodeimages.GatewayImage, r.show(filepath.Join(samples, "apigateway_v1.yaml")), k, k, k, k)
}
