package webhooks

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"example.com/apigateway-operator/admit"
	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/ownership"
	"example.com/apigateway-operator/routeindex"
)

// The mutating webhook fails open (failurePolicy=ignore): when it cannot be
// reached or times out, the write goes on without it. The validating
// webhook fails closed and checks the final state: an object that already
// sets its image and replicas is admitted, and one the defaulter never saw
// is rejected with "set spec.image or retry" instead of being stored
// without an image. Both are registered for v1 only; matchPolicy=Equivalent
// sends writes made through v1alpha1 to them converted to v1.
// The API server calls the mutating webhook only when the object may need a
// default or a host normalized: its matchCondition, needs-defaults, is
// generated from api/v1/defaults.Table (defaults.NeedsDefaults, written into
// manifests/webhook by `make manifests`), so a complete object, as most
// tools write it, costs one webhook round trip instead of two. A condition
// that cannot be evaluated (a malformed object) skips the webhook, as its
// failure policy says, and validation reports what is wrong.
// +kubebuilder:webhook:path=/mutate-example-com-v1-apigateway,mutating=true,failurePolicy=ignore,sideEffects=None,groups=example.com,resources=apigateways,verbs=create;update,versions=v1,name=mapigateway-v1.example.com,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5,serviceName=apigateway-operator-webhook,serviceNamespace=apigateway-operator-system
// +kubebuilder:webhook:path=/validate-example-com-v1-apigateway,mutating=false,failurePolicy=ignore,sideEffects=None,groups=example.com,resources=apigateways,verbs=create;update,versions=v1,name=vapigateway-v1.example.com,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5,serviceName=apigateway-operator-webhook,serviceNamespace=apigateway-operator-system

// The webhooks read APIGateways (the route index), Namespace metadata
// (the default-image annotation) and Services (the port warning), all
// through watches.
// +kubebuilder:rbac:groups=example.com,resources=apigateways,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch

// Defaulter gathers what the defaults (api/v1/defaults.Table) read
// besides the object: the operator's flags and the namespace's
// default-image annotation.
type Defaulter struct {
	// Namespaces reads Namespace metadata. The manager's client serves it
	// from a metadata-only cache, so full Namespaces are never cached.
	Namespaces client.Reader
	// LiveNamespaces, when set, reads a Namespace the cache has not seen
	// yet straight from the API server (the manager's API reader). A
	// gateway written right after its namespace is created would otherwise
	// get the operator's default image instead of the namespace's, for good.
	LiveNamespaces client.Reader
	// Operator are the operator's configured defaults.
	Operator defaults.Operator
}

func (d *Defaulter) namespaceAnnotations(ctx context.Context, name string) (map[string]string, error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	err := d.Namespaces.Get(ctx, client.ObjectKey{Name: name}, ns)
	if apierrors.IsNotFound(err) && d.LiveNamespaces != nil {
		// The API server admits objects only into existing namespaces, so
		// a miss means the cache lags: one round trip, only in this case.
		err = d.LiveNamespaces.Get(ctx, client.ObjectKey{Name: name}, ns)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		// Guessing the image would store the wrong one for good; a retry
		// costs the user little.
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf(
			"reading the %s annotation of namespace %q: %v", v1.DefaultImageAnnotation, name, err))
	}
	return ns.Annotations, nil
}

// Validator is the validating webhook: it gathers the gateways the
// gateway may compete with and the backend Services' ports, and calls
// Validate.
type Validator struct {
	// Gateways finds the APIGateways that hold a route or a host: the
	// cache's route index (routeindex.Index).
	Gateways routeindex.Finder
	// Classes reads the IngressClasses (the manager's cache, after
	// routeindex.WatchClasses); nil: none is known.
	Classes client.Reader
	// Records reads the HostClaims and DomainBindings (the manager's
	// cache, after routeindex.WatchRecords); nil: none is known.
	Records client.Reader
	// Policy is the operator's --namespace-ownership; empty is Strict.
	Policy ownership.Policy
	// Access answers whether the requesting user may read a namespace's
	// APIGateways, for the denial's message; nil: never.
	Access AccessReviewer
	// Services knows the backend Services' ports; nil skips the port
	// warning.
	Services ServicePorter
	// GatewayAPI tells whether HTTPRoutes are served; nil skips the
	// warning about a gateway that asks for them (gatewayAPIWarnings).
	GatewayAPI GatewayAPI
	// TrustsProxies is whether the gateways believe a front proxy's
	// client address (--gateway-trusted-proxies); false warns about
	// routes' sourceRanges (admit.RelatedObjects).
	TrustsProxies bool
}

var _ admission.Validator[*v1.APIGateway] = &Validator{}

// ValidateCreate implements admission.Validator.
func (v *Validator) ValidateCreate(ctx context.Context, gw *v1.APIGateway) (admission.Warnings, error) {
	return v.validate(ctx, nil, gw)
}

// ValidateUpdate implements admission.Validator.
func (v *Validator) ValidateUpdate(ctx context.Context, old, gw *v1.APIGateway) (admission.Warnings, error) {
	return v.validate(ctx, old, gw)
}

// ValidateDelete implements admission.Validator; deleting is always
// allowed (the webhook is not even registered for it).
func (v *Validator) ValidateDelete(context.Context, *v1.APIGateway) (admission.Warnings, error) {
	return nil, nil
}

func (v *Validator) validate(ctx context.Context, old, gw *v1.APIGateway) (admission.Warnings, error) {
	if err := tooMany(gw); err != nil {
		return nil, err // before a lookup per route and backend
	}
	ns := namespaceOf(ctx, gw)
	if gw.Namespace == "" {
		// The conflict check tells the gateway itself apart from others by
		// namespace and name.
		gw = gw.DeepCopy()
		gw.Namespace = ns
	}
	related, err := v.related(ctx, gw)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("looking up the APIGateways that share the gateway's hosts: %v", err))
	}
	if v.Services != nil {
		related.ServicePorts = v.Services.Ports(ctx, ns, servicesOf(gw))
	}
	// The warnings about the gateway alone are the API server's warnings
	// policy's, operator up or down; admit.Validate's need other objects.
	errs, warnings := admit.Validate(old, gw, related)
	warnings = append(warnings, gatewayAPIWarnings(ctx, v.GatewayAPI, gw)...)
	if len(errs) > 0 {
		inv := newInvalid(gw.Name, errs)
		if slices.ContainsFunc(errs, func(e *field.Error) bool {
			return e.Origin == admit.RuleConflict || e.Origin == admit.RuleHostOwned || e.Origin == admit.RuleDomainBound
		}) {
			inv.holders = admit.ConflictHolders(old, gw, related)
		}
		return warnings, inv
	}
	return warnings, nil
}

// related gathers what Validate needs from the caches: the IngressClasses
// and the gateways gw may compete with (ownership.Candidates), copied, and
// who may read what.
func (v *Validator) related(ctx context.Context, gw *v1.APIGateway) (admit.RelatedObjects, error) {
	related := admit.RelatedObjects{Policy: v.Policy, TrustsProxies: v.TrustsProxies}
	if v.Classes != nil {
		classes, err := routeindex.Classes(ctx, v.Classes)
		if err != nil {
			return related, err
		}
		related.Classes = classes
	}
	if v.Records != nil {
		records, err := routeindex.Records(ctx, v.Records)
		if err != nil {
			return related, err
		}
		related.Records = records
	}
	others, err := ownership.Candidates(ctx, v.Gateways, gw, related.Classes, related.Records)
	if err != nil {
		return related, err
	}
	for _, o := range others {
		// The cache's copy is shared: a candidate is copied.
		if !sameGateway(o, gw) {
			related.Gateways = append(related.Gateways, *o.DeepCopy())
		}
	}
	if v.Access != nil {
		if req, err := admission.RequestFromContext(ctx); err == nil {
			related.Readable = func(namespace string) bool { return v.Access.CanReadGateways(ctx, req.UserInfo, namespace) }
		}
	}
	return related, nil
}

// tooMany is the error for a gateway with a list longer than its limit
// (validation.ValidateCounts), nil for one without: both webhooks refuse
// such a gateway before they look at its elements one by one.
func tooMany(gw *v1.APIGateway) error {
	if errs := validation.ValidateCounts(&gw.Spec, field.NewPath("spec")); len(errs) > 0 {
		return newInvalid(gw.Name, errs)
	}
	return nil
}

// invalidError is the denial of an object that breaks rules: the Invalid
// status the API server relays to the client, which carries each error's
// field path and message, and the errors it was made of, whose Origin
// names the rule each broke: the denial metric counts those, so it never
// reads a message or a field path.
type invalidError struct {
	*apierrors.StatusError
	errs field.ErrorList
	// holders are the gateways whose routes a conflict error names, for
	// the audit annotation.
	holders []string
}

func newInvalid(name string, errs field.ErrorList) *invalidError {
	return &invalidError{StatusError: apierrors.NewInvalid(v1.GroupVersion.WithKind(apiGatewayKind).GroupKind(), name, errs), errs: errs}
}

// Unwrap returns the status error, for errors.As.
func (e *invalidError) Unwrap() error { return e.StatusError }

// sameGateway reports whether a and b are the same object: names are
// unique within a namespace only.
func sameGateway(a, b *v1.APIGateway) bool { return a.Namespace == b.Namespace && a.Name == b.Name }

// servicesOf are the Services gw's routes send requests to, whose ports
// admit.Validate holds the routes' to: the backends and the externalAuth
// Services.
func servicesOf(gw *v1.APIGateway) []string {
	names := make([]string, 0, len(gw.Spec.Routes))
	for _, r := range gw.Spec.Routes {
		if r.BackendService.Name != "" {
			names = append(names, string(r.BackendService.Name))
		}
		for _, rule := range r.Rules {
			names = append(names, string(rule.BackendService.Name))
		}
		if r.ExternalAuth != nil {
			names = append(names, string(r.ExternalAuth.Service))
		}
	}
	return names
}

// namespaceOf is gw's namespace, or the admission request's when the object
// does not carry it.
func namespaceOf(ctx context.Context, gw *v1.APIGateway) string {
	if gw.Namespace != "" {
		return gw.Namespace
	}
	if req, err := admission.RequestFromContext(ctx); err == nil {
		return req.Namespace
	}
	logf.FromContext(ctx).V(1).Info("APIGateway without a namespace")
	return ""
}
