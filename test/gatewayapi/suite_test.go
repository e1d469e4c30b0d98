package gatewayapi

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/operatortest"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

// env is the control plane, with the webhook configurations installed and
// no Gateway API: each test installs or removes it (gatewayAPIFiles).
var env *testenv.Env

func TestMain(m *testing.M) {
	if !inNamespaces() {
		code, err := reexecInNamespaces()
		if err != nil {
			fmt.Fprintf(os.Stderr, "gatewayapi: %v\n", err)
		}
		os.Exit(code)
	}
	addrs := []net.IP{traefikAddr}
	for i := range maxPods {
		addrs = append(addrs, podAddr(i))
	}
	if err := setUpLoopback(addrs...); err != nil {
		fmt.Fprintf(os.Stderr, "gatewayapi: setting up the namespace's loopback device: %v\n", err)
		os.Exit(1)
	}
	testenv.Main(m, &env, testenv.Options{Webhooks: envtest.WebhookInstallOptions{
		Paths:                   []string{filepath.Join("..", "..", "manifests", "webhook")},
		IgnoreSchemeConvertible: true,
	}})
}

const (
	// waitFor bounds every wait for the operator, Traefik or nginx to act.
	waitFor = time.Minute
	tick    = 100 * time.Millisecond
	image   = "nginx:1.27"
)

// startOperator runs the operator in process until the test ends, wired
// as main wires it: the manager's cache from controller.CacheOptions, the
// webhooks with the Gateway API warning, the reconciler. The gateways'
// nginx resolves backends through resolver, the test's cluster DNS.
func startOperator(t *testing.T, resolver string) {
	t.Helper()
	operatortest.Start(t, env, operatortest.Options{
		UserAgent:  "apigateway-operator",
		Webhooks:   &webhooks.Options{DefaultImage: image, DefaultReplicas: 2},
		GatewayAPI: true,
		Controller: &controller.Options{DefaultImage: image, ReloaderImage: image, MaxConcurrentReconciles: 2, Resolvers: []string{resolver}},
	})
}

// standardChannel is Gateway API's standard channel, from the module the
// operator builds with, as its standard-install.yaml installs it: every
// CRD Traefik watches (HTTPRoute, GRPCRoute, TLSRoute, ReferenceGrant,
// BackendTLSPolicy, ...) and the upgrade policy.
func standardChannel(t *testing.T) []string {
	t.Helper()
	mod, err := testenv.ModuleDir("sigs.k8s.io/gateway-api")
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(mod, "config", "crd", "standard", "gateway.networking.k8s.io_*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// installGatewayAPI installs Gateway API's CRDs from files as its
// documentation says (kubectl apply --server-side) and waits until they
// are established.
func installGatewayAPI(t *testing.T, files []string) {
	t.Helper()
	defer logDuration(t, "installing Gateway API")()
	args := []string{"apply", "--server-side"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	res := env.Kubectl(t.Context(), nil, args...)
	require.NoError(t, res.Err)
	res = env.Kubectl(t.Context(), nil, "wait", "--for=condition=Established", "--timeout=1m", "crd", "--all")
	require.NoError(t, res.Err)
}

// removeGatewayAPI deletes what installGatewayAPI installed from files,
// with every object of those kinds, and waits until it is gone.
func removeGatewayAPI(t *testing.T, files []string) {
	t.Helper()
	defer logDuration(t, "removing Gateway API")()
	waitForStorage(t)
	args := []string{"delete", "--ignore-not-found", "--wait", "--timeout=2m"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	res := env.Kubectl(t.Context(), nil, args...)
	if res.Err != nil {
		left := env.Kubectl(context.Background(), nil, "get", "crd", "-o",
			`custom-columns=NAME:.metadata.name,DELETED:.metadata.deletionTimestamp,FINALIZERS:.metadata.finalizers,CONDITIONS:.status.conditions`)
		t.Fatalf("%v\nwhat is left:\n%s%v", res.Err, left.Stdout, left.Err)
	}
}

// waitForStorage waits until the API server's watch cache of each Gateway
// API resource is ready, which it tells by answering a list served from
// it. A CRD deleted before then stays Terminating for minutes: the API
// server's CRD finalizer fails to list its objects ("storage is
// (re)initializing") and retries with a growing delay
// (operator-framework/operator-controller#1437 saw the same).
func waitForStorage(t *testing.T) {
	t.Helper()
	defer logDuration(t, "waiting for the API server's caches of Gateway API")()
	var crds apiextensionsv1.CustomResourceDefinitionList
	require.NoError(t, env.Client.List(t.Context(), &crds))
	for _, crd := range crds.Items {
		if crd.Spec.Group != gatewayv1.GroupName {
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: crd.Status.StoredVersions[0], Kind: crd.Spec.Names.ListKind})
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.NoError(c, env.Client.List(context.Background(), list, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}))
		}, waitFor, tick, "the API server's cache of %s", crd.Name)
	}
}

// apply applies manifest with kubectl, as a user would, and returns what
// kubectl printed on stderr: the API server's warnings.
func apply(t *testing.T, manifest string) string {
	t.Helper()
	res := env.Kubectl(t.Context(), strings.NewReader(manifest), "apply", "-f", "-")
	require.NoError(t, res.Err)
	return res.Stderr
}

// waitCondition waits (testenv.AwaitCondition, within waitFor) until gw's
// condition typ has status and reason for its current generation, and
// returns the gateway.
func waitCondition(t *testing.T, gw client.ObjectKey, typ string, status metav1.ConditionStatus, reason string) *v1.APIGateway {
	t.Helper()
	return testenv.AwaitCondition(t, env.Client, gw, testenv.Condition{Type: typ, Status: status, Reason: reason, Current: true}, waitFor)
}

// logDuration logs how long what took, once the returned function runs.
func logDuration(t *testing.T, what string) func() {
	start := time.Now()
	return func() { t.Logf("%s took %s", what, time.Since(start).Round(time.Millisecond)) }
}
