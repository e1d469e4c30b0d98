package webhooks

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"example.com/apigateway-operator/test/testenv"
)

// env is the control plane of the envtest suite, with the generated webhook
// configurations installed and pointed at the test's webhook server.
var env *testenv.Env

func TestMain(m *testing.M) {
	// Fuzzing runs the test binary once per worker; the fuzz target needs
	// no control plane, and starting one per worker would swamp the
	// machine. Run the fuzzer with -run '^$'.
	flag.Parse()
	if fuzzing() {
		os.Exit(m.Run())
	}
	testenv.Main(m, &env, testenv.Options{Webhooks: envtest.WebhookInstallOptions{
		// Tests run in the package directory.
		Paths: []string{filepath.Join("..", "manifests", "webhook")},
		// Point the CRD's conversion at the test's webhook server, as in
		// a cluster: our types convert through our own handler, not
		// Hub/Convertible methods, which envtest would look for.
		IgnoreSchemeConvertible: true,
	}})
}

func fuzzing() bool {
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}

// startWebhooks runs the webhooks, configured as main does, in a manager
// that lives until the test ends.
func startWebhooks(t *testing.T, opts Options) {
	t.Helper()
	require.NotNil(t, env, "no control plane: the envtest suite does not run under -fuzz (use -run '^$')")
	mgr, err := ctrl.NewManager(env.Config, env.ManagerOptions())
	require.NoError(t, err)
	require.NoError(t, SetupWithManager(mgr, opts))
	env.StartManager(t, mgr)
}
