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

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
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
// default or a host normalized (the matchConditions below mirror Default,
// erring towards calling it): a complete object, as most tools write it,
// then costs one webhook round trip instead of two. A condition that cannot
// be evaluated (a malformed object) skips the webhook, as its failure
// policy says, and validation reports what is wrong. An image or replicas
// sent as null (server-side apply keeps it, where a create drops it) is
// unset for Default, so it needs the webhook: has() alone says it is set.
// +kubebuilder:webhook:path=/mutate-example-com-v1-apigateway,mutating=true,failurePolicy=ignore,sideEffects=None,groups=example.com,resources=apigateways,verbs=create;update,versions=v1,name=mapigateway-v1.example.com,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5,serviceName=apigateway-operator-webhook,serviceNamespace=apigateway-operator-system,patch=`{"matchConditions":[{"name":"needs-defaults","expression":"!has(object.spec) || !has(object.spec.image) || object.spec.image == null || object.spec.image == '' || !has(object.spec.replicas) || object.spec.replicas == null || !has(object.spec.routes) || object.spec.routes.exists(r, !has(r.host) || r.host != r.host.lowerAscii() || r.host.endsWith('.') || !has(r.path) || r.path == '' || !has(r.pathType) || r.pathType == '') || (has(object.spec.tls) && object.spec.tls.exists(t, has(t.hosts) && t.hosts.exists(h, h != h.lowerAscii() || h.endsWith('.'))))"}]}`
// +kubebuilder:webhook:path=/validate-example-com-v1-apigateway,mutating=false,failurePolicy=ignore,sideEffects=None,groups=example.com,resources=apigateways,verbs=create;update,versions=v1,name=vapigateway-v1.example.com,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5,serviceName=apigateway-operator-webhook,serviceNamespace=apigateway-operator-system

// The webhooks read APIGateways (the route index), Namespace metadata
// (the default-image annotation) and Services (the port warning), all
// through watches.
// +kubebuilder:rbac:groups=example.com,resources=apigateways,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch

// Defaulter is the mutating webhook: it gathers the namespace's default
// image and calls Default.
type Defaulter struct {
	// Namespaces reads Namespace metadata. The manager's client serves it
	// from a metadata-only cache, so full Namespaces are never cached.
	Namespaces client.Reader
	// LiveNamespaces, when set, reads a Namespace the cache has not seen
	// yet straight from the API server (the manager's API reader). A
	// gateway written right after its namespace is created would otherwise
	// get the operator's default image instead of the namespace's, for good.
	LiveNamespaces client.Reader
	// Defaults are the operator's configured defaults.
	Defaults Defaults
}

var _ admission.Defaulter[*v1.APIGateway] = &Defaulter{}

// Default implements admission.Defaulter.
func (d *Defaulter) Default(ctx context.Context, gw *v1.APIGateway) error {
	defaults := d.Defaults
	// The namespace is read only when its annotation can matter.
	if gw.Spec.Image == "" {
		annotations, err := d.namespaceAnnotations(ctx, namespaceOf(ctx, gw))
		if err != nil {
			return err
		}
		source := imageFromFlag
		if ns := defaults.ForNamespace(annotations); ns.Image != defaults.Image {
			defaults, source = ns, imageFromNamespace
		}
		recordImageSource(ctx, source)
	}
	Default(gw, defaults)
	return nil
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

// Validator is the validating webhook: it gathers the gateways that serve
// the same routes and the backend Services' ports, and calls Validate.
type Validator struct {
	// Gateways finds the APIGateways that serve a route: the cache's
	// route index (routeindex.Index).
	Gateways routeindex.Finder
	// Services knows the backend Services' ports; nil skips the port
	// warning.
	Services ServicePorter
	// GatewayAPI tells whether HTTPRoutes are served; nil skips the
	// warning about a gateway that asks for them (gatewayAPIWarnings).
	GatewayAPI GatewayAPI
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
	others, err := v.servingGateways(ctx, gw)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("looking up the APIGateways that serve the same routes: %v", err))
	}
	related := RelatedObjects{Gateways: others}
	if v.Services != nil {
		related.ServicePorts = v.Services.Ports(ctx, ns, backendNames(gw))
	}
	errs, warnings := Validate(old, gw, related)
	// The API server's warnings policy sends these, operator up or down.
	spec := SpecWarnings(gw)
	warnings = slices.DeleteFunc(warnings, func(w string) bool { return slices.Contains(spec, w) })
	warnings = append(warnings, gatewayAPIWarnings(ctx, v.GatewayAPI, gw)...)
	if len(errs) > 0 {
		inv := newInvalid(gw.Name, errs)
		if slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Origin == RuleConflict }) {
			inv.holders = conflictHolders(old, gw, others)
		}
		return warnings, inv
	}
	return warnings, nil
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

// servingGateways returns the other APIGateways, of any namespace, that
// serve one of gw's route keys: one index lookup per key, never a scan.
func (v *Validator) servingGateways(ctx context.Context, gw *v1.APIGateway) ([]v1.APIGateway, error) {
	var others []v1.APIGateway
	for _, key := range validation.RouteKeys(gw) {
		serving, err := v.Gateways.Serving(ctx, key)
		if err != nil {
			return nil, err
		}
		for _, o := range serving {
			// The cache's copy is shared: a match is copied.
			if !sameGateway(o, gw) && !slices.ContainsFunc(others, func(k v1.APIGateway) bool { return sameGateway(&k, o) }) {
				others = append(others, *o.DeepCopy())
			}
		}
	}
	return others, nil
}

// sameGateway reports whether a and b are the same object: names are
// unique within a namespace only.
func sameGateway(a, b *v1.APIGateway) bool { return a.Namespace == b.Namespace && a.Name == b.Name }

func backendNames(gw *v1.APIGateway) []string {
	names := make([]string, 0, len(gw.Spec.Routes))
	for _, r := range gw.Spec.Routes {
		names = append(names, r.BackendService.Name)
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
