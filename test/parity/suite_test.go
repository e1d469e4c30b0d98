// Package parity holds the offline commands (package offline, the validate
// and convert subcommands) to the real API server with the operator's
// webhooks serving: the same objects admitted, the same field paths
// refused, the same warnings, defaults and conversions.
package parity

import (
	"path/filepath"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/test/operatortest"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{Webhooks: envtest.WebhookInstallOptions{
		// Tests run in this directory.
		Paths: []string{filepath.Join("..", "..", "manifests", "webhook")},
		// The CRD converts through the test's webhook server, as in a
		// cluster (see webhooks/suite_test.go).
		IgnoreSchemeConvertible: true,
	},
		// As the manifests install them: the defaults and warnings
		// policies, with the operator's defaults in the parameters.
		Policies: operatorDefaults.PolicyData(),
	})
}

// operatorDefaults are the webhooks' defaults in these tests, and so the
// offline checker's: not the package's, so a check that ignored them
// would fail.
var operatorDefaults = defaults.Operator{Image: "registry.example.com/nginx:1.29", Replicas: 2}

// startWebhooks runs the webhooks as main wires them until the test ends.
func startWebhooks(t *testing.T) ctrl.Manager {
	t.Helper()
	return operatortest.Start(t, env, operatortest.Options{Webhooks: &webhooks.Options{
		DefaultImage: operatorDefaults.Image, DefaultReplicas: operatorDefaults.Replicas,
	}})
}
