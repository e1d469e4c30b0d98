// Package testenv starts a real control plane (etcd and kube-apiserver, built
// by `make k8s` into bin/k8s, started by test/controlplane as `make run`
// starts its own) for a package's tests, installs the project's
// CRDs, and hands the tests a client, a REST config and a kubeconfig for the
// kubectl binary built beside them.
//
// Every package's suite uses it from TestMain:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }
package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/test/controlplane"
	"example.com/apigateway-operator/test/ports"
)

// Options tune the environment a suite gets.
type Options struct {
	// Webhooks, when it names Paths, installs those webhook configurations
	// pointed at a local serving host, port and certificate directory, which
	// the suite's webhook server must then use (see Env.Webhooks).
	Webhooks envtest.WebhookInstallOptions
	// ServiceClusterIPRange, when set, replaces the /24 Service range (253
	// ClusterIPs), for suites that create more Services than that.
	ServiceClusterIPRange string
	// APIServer, when set, is called before the kube-apiserver starts with
	// a scratch directory that is removed when the environment stops. It
	// writes there the files its flags name and returns kube-apiserver
	// flags, each replacing the launcher's value (e.g.
	// "admission-control-config-file").
	APIServer func(dir string) (flags map[string]string, err error)
	// Policies, when not nil, installs the admission policies of
	// manifests/policy as the manifests do (the defaults, the warnings and
	// the limits), with this data in the defaults policy's parameter
	// ConfigMap (keys defaults.ParamImage and defaults.ParamReplicas; empty
	// as shipped), and waits until the API server applies them.
	Policies map[string]string
	// GatewayAPI installs Gateway API's standard CRDs (GatewayClass,
	// Gateway, HTTPRoute) from the sigs.k8s.io/gateway-api module the
	// operator builds with, as a cluster with Gateway API has them.
	GatewayAPI bool
	// Controllers are kube-controller-manager's controllers to run for
	// the whole suite (by their --controllers names).
	Controllers []string
	// Node, when set, starts a node beside the control plane
	// (controlplane.NodeOptions): the suite's process must run in the
	// namespaces controlplane.EnterNodeNamespaces makes.
	Node *controlplane.NodeOptions
	// StopTimeout, when set, replaces KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT:
	// how long a component may take to stop, at Stop and RestartAPIServer,
	// before it is killed.
	StopTimeout time.Duration
}

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as a cluster administrator.
	Config *rest.Config
	// Client is a client for Config with Scheme.
	Client client.Client
	// Scheme knows the built-in types, the CRD types and both APIGateway
	// versions.
	Scheme *runtime.Scheme
	// Kubeconfig is the path of a kubeconfig file for Config.
	Kubeconfig string
	// Root is the repository's root directory.
	Root string
	// Webhooks holds the local serving host, port and certificate directory
	// when Options.Webhooks installed webhook configurations.
	Webhooks *envtest.WebhookInstallOptions

	cp       *controlplane.ControlPlane
	webhooks envtest.WebhookInstallOptions
	// policies is Options.Policies.
	policies map[string]string
	// gatewayAPI is Options.GatewayAPI.
	gatewayAPI bool
	// certManager installs cert-manager's CRDs once, with the error in
	// certManagerErr (InstallCertManagerCRDs).
	certManager    sync.Once
	certManagerErr error
	kubectl        string
	dir            string
	// webhookPort is the webhook servers' port, reserved until Stop.
	webhookPort *ports.Port
}

// Main starts the environment, stores it in *env, runs the tests and exits.
// A control plane that cannot start fails the run: it is never a skip.
//
// controller-runtime's logs are discarded unless TEST_LOG is set, so a failing
// test's output is its own.
func Main(m *testing.M, env **Env, opts Options) {
	if os.Getenv("TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stopping: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// NewScheme returns a scheme with the built-in types, the CRD types and both
// APIGateway versions.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(v1.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(gatewayv1.Install(s))
	return s
}

// Start starts etcd and kube-apiserver (test/controlplane, in a temporary
// directory), installs the CRDs in manifests/crd/bases and, when
// opts.Webhooks names any, the webhook configurations.
//
// KUBEBUILDER_CONTROLPLANE_START_TIMEOUT and
// KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT (Go durations, as envtest reads
// them) bound each component's start and stop.
func Start(opts Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := assetsDir(root)
	if err != nil {
		return nil, err
	}
	e := &Env{Scheme: NewScheme(), Root: root, kubectl: filepath.Join(assets, "kubectl"), webhooks: opts.Webhooks,
		policies: opts.Policies, gatewayAPI: opts.GatewayAPI}
	if e.dir, err = os.MkdirTemp("", "testenv-"); err != nil {
		return nil, err
	}
	if err := e.start(assets, opts); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	return e, nil
}

func (e *Env) start(assets string, opts Options) error {
	cpOpts, err := controlPlaneOptions(os.Getenv, assets)
	if err != nil {
		return err
	}
	if opts.StopTimeout != 0 {
		cpOpts.StopTimeout = opts.StopTimeout
	}
	cpOpts.Controllers, cpOpts.Node = opts.Controllers, opts.Node
	if opts.ServiceClusterIPRange != "" {
		cpOpts.APIServerFlags["service-cluster-ip-range"] = opts.ServiceClusterIPRange
	}
	if opts.APIServer != nil {
		files := filepath.Join(e.dir, "kube-apiserver")
		err := os.Mkdir(files, 0o700)
		var flags map[string]string
		if err == nil {
			flags, err = opts.APIServer(files)
		}
		if err != nil {
			return fmt.Errorf("configuring the kube-apiserver: %w", err)
		}
		maps.Copy(cpOpts.APIServerFlags, flags)
	}
	if e.cp, err = controlplane.New(cpOpts); err != nil {
		return err
	}
	if err := e.cp.Start(context.Background()); err != nil {
		return fmt.Errorf("starting the control plane from %s (run `make k8s` to build it): %w", assets, err)
	}
	if e.Config, err = e.cp.Config(controlplane.Admin); err != nil {
		return err
	}
	// Tests may hammer their own API server.
	e.Config.QPS, e.Config.Burst = 1000, 2000
	e.Kubeconfig = filepath.Join(e.dir, "kubeconfig")
	if err := e.cp.WriteKubeconfig(e.Kubeconfig, controlplane.Admin); err != nil {
		return err
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: e.Scheme}); err != nil {
		return fmt.Errorf("building a client: %w", err)
	}
	return e.install()
}

// install installs the CRDs and the webhook configurations, in envtest's
// order: the webhooks' serving certificate first, so the CRDs' conversion
// webhook trusts it.
func (e *Env) install() error {
	w := &e.webhooks
	if len(w.Paths) > 0 || len(w.MutatingWebhooks)+len(w.ValidatingWebhooks) > 0 {
		e.Webhooks = w
	}
	if err := e.reserveWebhookPort(); err != nil {
		return err
	}
	if err := w.PrepWithoutInstalling(); err != nil {
		return err
	}
	paths := []string{filepath.Join(e.Root, "manifests", "crd", "bases")}
	if e.gatewayAPI {
		crds, err := GatewayAPICRDs()
		if err != nil {
			return err
		}
		paths = append(paths, crds...)
	}
	_, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{
		Paths:              paths,
		ErrorIfPathMissing: true,
		Scheme:             e.Scheme,
		WebhookOptions:     *w,
	})
	if err != nil {
		return fmt.Errorf("installing the CRDs: %w", err)
	}
	if err := w.Install(e.Config); err != nil {
		return fmt.Errorf("installing the webhook configurations: %w", err)
	}
	if e.policies != nil {
		return e.installPolicies(context.Background(), e.policies)
	}
	return nil
}

// reserveWebhookPort reserves the webhook servers' port (test/ports) for
// the environment's life, unless the options name one. envtest would pick
// a free port and release it, and the suite's server bind it later: another
// process could take it in between (it did: "bind: address already in
// use"). A reserved port stays the suite's, and each manager a suite starts
// binds it in turn, which one listener handed over could not allow.
func (e *Env) reserveWebhookPort() error {
	w := &e.webhooks
	if w.LocalServingPort != 0 {
		return nil
	}
	p, err := ports.Reserve()
	if err != nil {
		return err
	}
	e.webhookPort = p
	w.LocalServingPort = p.Number
	if w.LocalServingHost == "" {
		w.LocalServingHost = "127.0.0.1"
	}
	return nil
}

// ModuleDir is the directory of module, at the version go.mod requires,
// as go list finds it in the module cache: the CRDs our dependencies ship
// are installed from there, so tests meet the schemas the operator builds
// against.
func ModuleDir(module string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		return "", fmt.Errorf("finding the module %s: %w", module, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// InstallCertManagerCRDs installs the CRDs of go.mod's cert-manager, from
// its module, once per environment.
func (e *Env) InstallCertManagerCRDs(t testing.TB) {
	t.Helper()
	e.certManager.Do(func() {
		var dir string
		if dir, e.certManagerErr = ModuleDir("github.com/cert-manager/cert-manager"); e.certManagerErr != nil {
			return
		}
		_, e.certManagerErr = envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{
			Paths:              []string{filepath.Join(dir, "deploy", "crds")},
			ErrorIfPathMissing: true,
		})
	})
	if e.certManagerErr != nil {
		t.Fatalf("installing cert-manager's CRDs: %v", e.certManagerErr)
	}
}

// GatewayAPICRDs are the files of Gateway API's standard GatewayClass,
// Gateway and HTTPRoute CRDs in the sigs.k8s.io/gateway-api module of
// go.mod.
func GatewayAPICRDs() ([]string, error) {
	mod, err := ModuleDir("sigs.k8s.io/gateway-api")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(mod, "config", "crd", "standard")
	var files []string
	for _, kind := range []string{"gatewayclasses", "gateways", "httproutes"} {
		files = append(files, filepath.Join(dir, "gateway.networking.k8s.io_"+kind+".yaml"))
	}
	return files, nil
}

// controlPlaneOptions are a temporary control plane's, from the binaries in
// assets, with envtest's timeout variables read through getenv.
func controlPlaneOptions(getenv func(string) string, assets string) (controlplane.Options, error) {
	opts := controlplane.Options{BinDir: assets, APIServerFlags: map[string]string{}}
	for name, d := range map[string]*time.Duration{
		"KUBEBUILDER_CONTROLPLANE_START_TIMEOUT": &opts.StartTimeout,
		"KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT":  &opts.StopTimeout,
	} {
		if v := getenv(name); v != "" {
			var err error
			if *d, err = time.ParseDuration(v); err != nil {
				return opts, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return opts, nil
}

// Stop stops the control plane and removes its scratch files.
func (e *Env) Stop() error {
	var err error
	if e.cp != nil {
		err = e.cp.Stop(context.Background())
	}
	err = errors.Join(err, e.webhooks.Cleanup(), os.RemoveAll(e.dir))
	if e.webhookPort != nil {
		err = errors.Join(err, e.webhookPort.Release())
	}
	return err
}

// ControlPlane is the running control plane (its processes, its node).
func (e *Env) ControlPlane() *controlplane.ControlPlane { return e.cp }

// RestartAPIServer stops the kube-apiserver and starts it again at the same
// address, with the same certificates and tokens and over the same etcd:
// Config, Client and Kubeconfig reach it again unchanged. One that drains
// its watches for longer than its stop timeout is
// killed (see Options.StopTimeout), which makes this a crash and restart.
func (e *Env) RestartAPIServer(ctx context.Context) error { return e.cp.RestartAPIServer(ctx) }

// RunControllers runs kube-controller-manager's controllers (by their
// --controllers names, e.g. "garbagecollector") against the environment
// until the test ends, as the control plane's administrator. The test fails
// if it exits before then; its log is printed when the test fails.
func (e *Env) RunControllers(t testing.TB, controllers ...string) {
	t.Helper()
	p, err := e.cp.StartControllers(t.Context(), controllers)
	if err != nil {
		t.Fatalf("kube-controller-manager (`make k8s` builds it): %v", err)
	}
	t.Cleanup(func() {
		select {
		case <-p.Done():
			t.Errorf("kube-controller-manager exited while the test ran (%v)", p.Err())
		default:
		}
		if err := e.cp.StopProcess(context.Background(), p); err != nil {
			t.Log(err)
		}
		if t.Failed() {
			log, err := os.ReadFile(p.Log())
			t.Logf("kube-controller-manager log (%v):\n%s", err, log)
		}
	})
}

// Result is what a kubectl run printed and how it ended.
type Result struct {
	Stdout, Stderr string
	// Err is nil when kubectl exited 0.
	Err error
}

// Kubectl runs the kubectl built beside the control plane against it, with
// stdin as its standard input (nil for none). It uses its own discovery cache
// so CRD changes made by a test are seen at once.
func (e *Env) Kubectl(ctx context.Context, stdin io.Reader, args ...string) Result {
	cmd := e.KubectlCommand(ctx, args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// KubectlCommand is the command Kubectl runs, not started: for kubectl
// that runs until stopped (port-forward), whose output the caller reads.
func (e *Env) KubectlCommand(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{"--kubeconfig", e.Kubeconfig, "--cache-dir", filepath.Join(e.dir, "kubectl-cache")}, args...)
	return exec.CommandContext(ctx, e.kubectl, full...)
}

// RepoRoot finds the operator module's root from the test's working
// directory (a package directory inside it).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.HasPrefix(data, []byte("module example.com/apigateway-operator\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the apigateway-operator module")
		}
		dir = parent
	}
}

// assetsDir is KUBEBUILDER_ASSETS, or bin/k8s when that is unset, checked to
// hold the binaries the tests need so a missing build fails with a hint.
func assetsDir(root string) (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(root, "bin", "k8s")
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("control plane binary %s missing in %s: run `make k8s` (or `make test`): %w", name, dir, err)
		}
	}
	return dir, nil
}
