// Command apigateway-operator serves the APIGateway admission and conversion
// webhooks on one TLS server and reconciles APIGateways into their children.
// Its subcommands (commands.go: validate, convert, ...) check and rewrite
// manifests with no cluster; installed as kubectl-apigateway it is a kubectl
// plugin that runs only those.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/certs"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/tracing"
	"example.com/apigateway-operator/webhooks"
)

func main() {
	if c, args, ok := subcommand(os.Args[0], os.Args[1:]); ok {
		os.Exit(c.run(args, os.Stdin, os.Stdout, os.Stderr))
	}
	var o options
	o.bind(flag.CommandLine)
	flag.Parse()
	if o.printVersion {
		fmt.Println("apigateway-operator", buildVersion())
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))

	if err := run(&o); err != nil {
		ctrl.Log.Error(err, "apigateway-operator failed")
		os.Exit(1)
	}
}

// Leader election and the authenticated metrics endpoint; the webhooks and
// the reconciler declare what they use beside their code.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=apigateway-operator-system,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups="",namespace=apigateway-operator-system,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// faultClock, set only in a build with -tags faultinject (faultinject.go),
// gives the certificates a skewed clock.
var faultClock func() (clock.WithTicker, error)

// run wires the manager from the flags and runs it until SIGTERM or SIGINT.
func run(o *options) error {
	if err := o.complete(); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(gatewayv1.Install(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))

	if faultClock != nil {
		var err error
		if o.certs.Clock, err = faultClock(); err != nil {
			return err
		}
	}
	serving, err := certs.New(o.certs)
	if err != nil {
		return err
	}
	stopTracing, err := tracing.Setup(context.Background(), o.otlpEndpoint)
	if err != nil {
		return err
	}
	defer func() {
		// Flush the last spans; the collector may be gone, which costs
		// at most this.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stopTracing(ctx)
	}()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.UserAgent = "apigateway-operator"
	auth, err := o.clientAuth()
	if err != nil {
		return err
	}
	lock, err := o.leaseLock(cfg)
	if err != nil {
		return fmt.Errorf("the leader election lock: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, o.managerOptions(scheme, serving.TLSConfig, auth, lock))
	if err != nil {
		return fmt.Errorf("building the manager: %w", err)
	}
	// What only the leader runs sees a manager whose writes stop when the
	// lease is lost (package lease).
	leader := mgr
	if lock != nil {
		lock.BindEvents(mgr.GetEventRecorderFor(lock.Identity())) //nolint:staticcheck // the Lease lock takes the old API's recorder
		leader = lock.Fence(mgr)
	}
	if auth != nil {
		if err := mgr.Add(auth); err != nil {
			return err
		}
	}
	if err := serving.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the serving certificate: %w", err)
	}
	if o.webhooks.GatewayAPI, err = controller.NewGatewayAPI(mgr); err != nil {
		return err
	}
	if err := webhooks.SetupWithManager(mgr, o.webhooks); err != nil {
		return fmt.Errorf("setting up the webhooks: %w", err)
	}
	if o.policyParamsKey.Name != "" {
		if err := mgr.Add(webhooks.PolicyParams{Reader: mgr.GetAPIReader(), Client: leader.GetClient(),
			ConfigMap: o.policyParamsKey, Defaults: o.webhooks.Defaults()}); err != nil {
			return err
		}
	}
	if o.controller.ReloaderImage, err = reloaderImage(context.Background(), mgr.GetAPIReader(), o.reloaderImage, os.Getenv); err != nil {
		return err
	}
	if err := controller.SetupWithManager(leader, o.controller); err != nil {
		return fmt.Errorf("setting up the reconciler: %w", err)
	}
	// Ready only once the webhook server answers TLS, so the Service sends
	// the API server's admission and conversion calls to replicas that serve.
	if err := mgr.AddReadyzCheck("webhook-server", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
