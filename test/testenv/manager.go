package testenv

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"example.com/apigateway-operator/inflight"
)

// ManagerOptions are the options of a manager under test: the env's scheme,
// no metrics or probe listeners, no leader election, and, when the env
// installed webhook configurations, a webhook server on the host, port and
// certificates those configurations point at.
func (e *Env) ManagerOptions() manager.Options {
	opts := manager.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Several managers may start in one test binary; controller names
		// need only be unique within one of them.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if w := e.Webhooks; w != nil {
		// The operator's webhook server, with its default limits.
		opts.WebhookServer = inflight.NewServer(webhook.Options{
			Host:    w.LocalServingHost,
			Port:    w.LocalServingPort,
			CertDir: w.LocalServingCertDir,
		}, inflight.Limits{})
	}
	return opts
}

// StartManager runs mgr until the test ends and returns once its caches have
// synced and, when the env installed webhook configurations, its webhook
// server is serving TLS (AwaitStarted, within a minute). The test fails if
// the manager stops with an error, or does not stop within a minute of the
// test's end.
func (e *Env) StartManager(t testing.TB, mgr manager.Manager) {
	t.Helper()
	RunManager(t, mgr, time.Minute)
	AwaitStarted(t, mgr, e.Webhooks != nil, time.Minute)
}
