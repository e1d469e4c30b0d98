package webhooks

import (
	"context"
	"fmt"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/conversion"
	"example.com/apigateway-operator/inflight"
	"example.com/apigateway-operator/ownership"
	"example.com/apigateway-operator/routeindex"
	"example.com/apigateway-operator/services"
)

// Options configures the webhooks.
type Options struct {
	// DefaultImage is spec.image for gateways whose namespace has no
	// example.com/default-gateway-image annotation; defaults.DefaultImage
	// when empty.
	DefaultImage string
	// DefaultReplicas is spec.replicas for gateways that set none, from 0
	// to 100. Zero is a valid choice, so it is not replaced: main's flag
	// defaults to defaults.DefaultReplicas.
	DefaultReplicas int32
	// MaxInflightBytes bounds the bytes all requests in flight on the
	// webhook server hold together (see package inflight): 0 for
	// inflight.DefaultBytes(), else at least inflight.MinBytes.
	MaxInflightBytes int64
	// GatewayAPI, when set, lets the validating webhook warn about a
	// gateway that asks for HTTPRoutes on a cluster without them.
	GatewayAPI GatewayAPI
	// TrustsProxies is whether --gateway-trusted-proxies names any front
	// proxy; without, the validating webhook warns about sourceRanges.
	TrustsProxies bool
	// Policy is --namespace-ownership: whether a host belongs to the
	// namespace that claimed it first (ownership.Strict, the default when
	// empty).
	Policy ownership.Policy
	// Namespaces, when set, are the only namespaces the manager's cache
	// sees (--watch-namespaces), and the webhook configurations' (their
	// namespaceSelector): the Service cache of the port warning watches
	// these only, which is all the operator may list.
	Namespaces []string
	// Tracing wraps each path in a server span that continues the trace
	// the API server sends (traceparent), named apigateway.mutate,
	// apigateway.validate and apigateway.convert (see package tracing).
	Tracing bool
}

// SetupWithManager registers the route index (package routeindex), and the
// defaulting, validating and conversion webhooks on mgr's webhook server
// (see handlers.go for why they are registered as handlers rather than
// through the webhook builder).
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.DefaultImage == "" {
		opts.DefaultImage = defaults.DefaultImage
	}
	if errs := validation.ValidateImage(opts.DefaultImage, nil); len(errs) > 0 {
		return fmt.Errorf("default gateway image %q: %w", opts.DefaultImage, errs.ToAggregate())
	}
	if opts.DefaultReplicas < 0 || opts.DefaultReplicas > validation.MaxReplicas() {
		return fmt.Errorf("default replicas %d: must be from 0 to %d", opts.DefaultReplicas, validation.MaxReplicas())
	}

	ctx := context.Background()
	gateways, err := routeindex.Index(ctx, mgr.GetCache())
	if err != nil {
		return err
	}
	if err := routeindex.WatchClasses(ctx, mgr.GetCache()); err != nil {
		return err
	}
	if err := routeindex.WatchRecords(ctx, mgr.GetCache()); err != nil {
		return err
	}
	// The defaulter reads Namespaces as metadata only. Registering the
	// informer now makes it start, and sync, with the manager's cache
	// instead of on the first admission request.
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if _, err := mgr.GetCache().GetInformer(ctx, ns); err != nil {
		return fmt.Errorf("watching Namespace metadata: %w", err)
	}
	backends, err := services.For(mgr, opts.Namespaces)
	if err != nil {
		return err
	}

	budget, err := inflight.New(opts.MaxInflightBytes)
	if err != nil {
		return err
	}
	srv := mgr.GetWebhookServer()
	register := func(path, span string, h http.Handler) {
		if opts.Tracing {
			h = otelhttp.NewHandler(h, span, otelhttp.WithSpanNameFormatter(func(string, *http.Request) string { return span }))
		}
		srv.Register(path, h)
	}
	register(MutatePath, "apigateway.mutate", budget.Wrap(chargeDecoded(&admission.Webhook{Handler: mutatingHandler{&Defaulter{
		Namespaces:     mgr.GetClient(),
		LiveNamespaces: mgr.GetAPIReader(),
		Operator:       opts.Defaults(),
	}}}), admissionCopies, inflight.Admission))
	register(ValidatePath, "apigateway.validate", budget.Wrap(chargeDecoded(&admission.Webhook{Handler: validatingHandler{
		countingValidator{&Validator{Gateways: gateways, Classes: mgr.GetClient(), Records: mgr.GetClient(), Policy: opts.Policy,
			Access: SubjectAccessReviewer{Client: mgr.GetClient()}, Services: backends, GatewayAPI: opts.GatewayAPI,
			TrustsProxies: opts.TrustsProxies}},
	}}), admissionCopies, inflight.Admission))
	register(ConvertPath, "apigateway.convert", budget.Wrap(conversion.NewWebhookHandler(), conversion.HeldPerRequestByte, inflight.Open))
	return nil
}

// ConvertPath is where the CRD's conversion webhook is served
// (manifests/crd/patches/conversion_webhook.yaml).
const ConvertPath = "/convert"
