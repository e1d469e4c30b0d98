// Package testenv starts a real control plane (etcd and kube-apiserver, built
// by `make k8s` into bin/k8s) for a package's tests, installs the project's
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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
)

// Options tune the environment a suite gets.
type Options struct {
	// Webhooks, when it names Paths, installs those webhook configurations
	// pointed at a local serving host, port and certificate directory, which
	// the suite's webhook server must then use (see Env.Webhooks).
	Webhooks envtest.WebhookInstallOptions
	// ServiceClusterIPRange, when set, replaces envtest's /24 Service range
	// (253 ClusterIPs), for suites that create more Services than that.
	ServiceClusterIPRange string
	// APIServer, when set, is called before the kube-apiserver starts with
	// a scratch directory that is removed when the environment stops. It
	// writes there the files its flags name and returns kube-apiserver
	// flags, each replacing envtest's value (e.g.
	// "admission-control-config-file").
	APIServer func(dir string) (flags map[string]string, err error)
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

	env     *envtest.Environment
	kubectl string
	dir     string
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
	return s
}

// Start starts etcd and kube-apiserver and installs the CRDs in
// manifests/crd/bases.
func Start(opts Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := assetsDir(root)
	if err != nil {
		return nil, err
	}
	scheme := NewScheme()
	env := &envtest.Environment{
		Scheme:                scheme,
		BinaryAssetsDirectory: assets,
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths:              []string{filepath.Join(root, "manifests", "crd", "bases")},
			ErrorIfPathMissing: true,
			Scheme:             scheme,
		},
		WebhookInstallOptions: opts.Webhooks,
	}
	if opts.ServiceClusterIPRange != "" {
		env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", opts.ServiceClusterIPRange)
	}
	dir, err := os.MkdirTemp("", "testenv-")
	if err != nil {
		return nil, err
	}
	if opts.APIServer != nil {
		files := filepath.Join(dir, "kube-apiserver")
		err := os.Mkdir(files, 0o700)
		var flags map[string]string
		if err == nil {
			flags, err = opts.APIServer(files)
		}
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("configuring the kube-apiserver: %w", err)
		}
		for name, value := range flags {
			env.ControlPlane.GetAPIServer().Configure().Set(name, value)
		}
	}
	cfg, err := env.Start()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting the control plane from %s (run `make k8s` to build it): %w", assets, err)
	}
	e := &Env{Config: cfg, Scheme: scheme, Root: root, env: env, kubectl: filepath.Join(assets, "kubectl"), dir: dir}
	if len(opts.Webhooks.Paths) > 0 || len(opts.Webhooks.MutatingWebhooks)+len(opts.Webhooks.ValidatingWebhooks) > 0 {
		e.Webhooks = &env.WebhookInstallOptions
	}
	if err := e.init(); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Env) init() error {
	var err error
	if e.Client, err = client.New(e.Config, client.Options{Scheme: e.Scheme}); err != nil {
		return fmt.Errorf("building a client: %w", err)
	}
	admin, err := e.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("provisioning a kubectl user: %w", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return fmt.Errorf("writing a kubeconfig: %w", err)
	}
	e.Kubeconfig = filepath.Join(e.dir, "kubeconfig")
	return os.WriteFile(e.Kubeconfig, kubeconfig, 0o600)
}

// Stop stops the control plane and removes its scratch files.
func (e *Env) Stop() error {
	err := e.env.Stop()
	if e.dir != "" {
		err = errors.Join(err, os.RemoveAll(e.dir))
	}
	return err
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
	full := append([]string{"--kubeconfig", e.Kubeconfig, "--cache-dir", filepath.Join(e.dir, "kubectl-cache")}, args...)
	cmd := exec.CommandContext(ctx, e.kubectl, full...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
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
