// Package operatortest builds the operator in process for a test, wired
// as cmd/apigateway-operator wires it: the webhooks (with the manager's
// view of Gateway API, when asked), the reconciler over the cache main
// gives it, on the test's control plane.
//
// It is a package of its own, not a part of test/testenv, because it
// imports controller and webhooks, whose own tests use testenv: those
// packages wire themselves in their suites.
package operatortest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

// Options say which parts of the operator run and how; a nil part does
// not run.
type Options struct {
	// Config reaches the API server; the env's when nil (another control
	// plane's, for a test that starts its own).
	Config *rest.Config
	// UserAgent, when set, names the operator's requests, so the test can
	// tell its writes from its own.
	UserAgent string
	// Manager replaces the env's ManagerOptions when set (leader
	// election, a webhook server of the test's own).
	Manager *manager.Options
	// Webhooks serves the admission and conversion webhooks.
	Webhooks *webhooks.Options
	// GatewayAPI gives the webhooks the manager's view of Gateway API
	// (controller.NewGatewayAPI), as main does, for the warning about a
	// gateway whose routes HTTPRoutes carry.
	GatewayAPI bool
	// Controller runs the reconciler, over the cache main gives it
	// (controller.CacheOptions). Without it the manager keeps
	// controller-runtime's default cache, as the webhook-only suites
	// always had.
	Controller *controller.Options
}

// NewManager builds the manager of o, not yet started: the test adds what
// else it needs and starts it (testenv.Env.StartManager, or
// testenv.RunManager to stop it before the test ends).
func NewManager(t testing.TB, env *testenv.Env, o Options) manager.Manager {
	t.Helper()
	cfg := o.Config
	if cfg == nil {
		cfg = env.Config
	}
	if o.UserAgent != "" {
		cfg = rest.CopyConfig(cfg)
		cfg.UserAgent = o.UserAgent
	}
	var opts manager.Options
	if o.Manager != nil {
		opts = *o.Manager
	} else {
		opts = env.ManagerOptions()
	}
	if o.Controller != nil {
		opts.Cache = controller.CacheOptions()
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	require.NoError(t, err)
	if o.Webhooks != nil {
		wopts := *o.Webhooks
		if o.GatewayAPI {
			wopts.GatewayAPI, err = controller.NewGatewayAPI(mgr)
			require.NoError(t, err)
		}
		require.NoError(t, webhooks.SetupWithManager(mgr, wopts))
	}
	if o.Controller != nil {
		require.NoError(t, controller.SetupWithManager(mgr, *o.Controller))
	}
	return mgr
}

// Start builds the manager of o and runs it until the test ends
// (env.StartManager): it returns once the caches have synced and, when
// the env installed webhook configurations, the webhooks serve.
func Start(t testing.TB, env *testenv.Env, o Options) manager.Manager {
	t.Helper()
	mgr := NewManager(t, env, o)
	env.StartManager(t, mgr)
	return mgr
}
