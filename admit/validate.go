package admit

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/conversion"
	"example.com/apigateway-operator/ownership"
	"example.com/apigateway-operator/render"
)

// The rules admission adds to package validation's, as field.Error.Origin
// names them (see validation.RuleName and the others).
const (
	// RuleConflict: no route of the gateway was claimed first by another
	// APIGateway of its ingress class, or attached to one of its parent
	// Gateways, in any namespace.
	RuleConflict = "conflict"
	// RuleHostOwned: no route of the gateway is on a host that belongs to
	// another namespace (its HostClaim covers the host or a host below it,
	// or, before any record, it claimed an overlapping host first),
	// unless that namespace lends the route's path to the gateway's
	// (package ownership, Strict).
	RuleHostOwned = "hostOwned"
	// RuleDomainBound: no route of the gateway is on a name of a domain
	// a DomainBinding binds to other namespaces, nor on a wildcard
	// covering such a domain.
	RuleDomainBound = "domainBound"
	// RuleV1alpha1Size: the gateway's v1alpha1 form fits in the
	// annotations the API server allows a converted object.
	RuleV1alpha1Size = "v1alpha1Size"
)

// RelatedObjects are the objects other than the gateway that its
// validation looks at, and how the cluster treats them. The handler
// gathers them from the caches; tests build them by hand.
type RelatedObjects struct {
	// Gateways are the APIGateways, of any namespace, the gateway may
	// compete with (ownership.Candidates). A gateway with the object's own
	// namespace and name is ignored, so on update the stored copy of the
	// object never conflicts with itself.
	Gateways []v1.APIGateway
	// Classes are the cluster's IngressClasses; the zero value knows none
	// and has no default, so every class is taken to exist.
	Classes ownership.Classes
	// Policy is the operator's --namespace-ownership; empty is Strict.
	Policy ownership.Policy
	// Records are the HostClaims and DomainBindings the reconciler
	// decides from too.
	Records ownership.Records
	// Readable reports whether the user making the request may read the
	// APIGateways of a namespace other than the gateway's: a denial names
	// another namespace's gateway only then. Nil: never.
	Readable func(namespace string) bool
	// ServicePorts maps the name of each backend Service that exists to its
	// port numbers. A name missing from it means the Service does not exist
	// or is not known, which is not worth a warning: it may be created
	// after the gateway.
	ServicePorts map[string][]int32
	// TrustsProxies is whether the operator believes front proxies'
	// client addresses (--gateway-trusted-proxies); false warns about
	// routes' sourceRanges (sourceRangeWarnings).
	TrustsProxies bool
}

// Validate checks gw against every rule of the contract and returns all the
// errors at once, each with its field path and rule (Origin), and the
// warnings that need other objects or the operator's settings (a backend
// Service without the route's port, source ranges that would see the
// front proxy); the warnings about the gateway alone are the warnings policy's
// (WarningsPolicy). old is nil on create and the stored object on
// update. The rules about the gateway alone are package validation's; the
// ones added here look at the related objects (host ownership, conflicts)
// or at conversion (the v1alpha1 form's size). A gateway with a list
// longer than its limit gets only those errors: no lookup, no warning.
func Validate(old, gw *v1.APIGateway, related RelatedObjects) (field.ErrorList, []string) {
	spec := field.NewPath("spec")
	if errs := validation.ValidateCounts(&gw.Spec, spec); len(errs) > 0 {
		return errs, nil
	}
	errs := validation.Validate(old, gw)
	errs = append(errs, validateClaims(old, gw, related, spec.Child("routes"))...)
	errs = append(errs, validateV1alpha1Size(gw, spec)...)
	// The renderer's bound, checked by rendering when a cheap upper bound
	// of the size does not settle it: a gateway whose nginx configuration
	// would not fit in its ConfigMap is refused here, with the bound
	// named, instead of failing every reconcile.
	errs = append(errs, render.ValidateRenderedSize(gw)...)
	return errs, append(portWarnings(gw.Spec.Routes, related.ServicePorts), sourceRangeWarnings(related.TrustsProxies, gw)...)
}

// validateClaims refuses routes that another gateway holds, as the
// reconciler decides it (ownership.Resolve), with gw's new routes claimed
// after everything stored: a host of another namespace's, unless it lends
// the path; a route another gateway of the same scope claimed first
// (Ingress controllers merge a host's paths across namespaces, a Gateway
// its HTTPRoutes', so both would fight over the requests). Only routes
// with keys that old did not have are checked, so that a conflict that
// slipped in (two gateways created at the same moment, each unseen by the
// other's check) never blocks unrelated updates such as a label or
// finalizer change, unless old is reported as losing routes: then every
// route is checked again, and the gateway cannot be updated while it still
// asks for a route someone else holds.
func validateClaims(old, gw *v1.APIGateway, related RelatedObjects, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, l := range admissionLosses(old, gw, related) {
		errs = append(errs, lossError(gw, l, related, fld.Index(l.Index)))
	}
	return errs
}

// admissionLosses are the losses validateClaims reports.
func admissionLosses(old, gw *v1.APIGateway, related RelatedObjects) []ownership.Loss {
	if len(related.Gateways) == 0 && len(related.Records.Claims) == 0 && len(related.Records.Bindings) == 0 {
		return nil
	}
	others := make([]*v1.APIGateway, len(related.Gateways))
	for i := range related.Gateways {
		others[i] = &related.Gateways[i]
	}
	losses := ownership.Resolve(ownership.Input{Gateway: gw, Claims: gw.Status.Claims, Others: others,
		Classes: related.Classes, Policy: related.Policy, Admission: true, Records: related.Records})
	if old == nil || losing(old) {
		return losses
	}
	// A set: with 100 routes and 32 parent Gateways a gateway has 3,200
	// keys.
	had := sets.New(validation.RouteKeys(old)...)
	scopes := validation.RouteScopes(gw)
	return slices.DeleteFunc(losses, func(l ownership.Loss) bool {
		for _, scope := range scopes {
			if key, ok := validation.RouteKey(scope, &l.Route); ok && !had.Has(key) {
				return false
			}
		}
		return true
	})
}

// losing reports whether gw's status says it does not serve some route.
func losing(gw *v1.APIGateway) bool {
	if c := gw.Status.Claims; c != nil && slices.ContainsFunc(c.Routes, func(r v1.RouteClaim) bool { return r.Lost }) {
		return true
	}
	return meta.IsStatusConditionFalse(gw.Status.Conditions, v1.ConditionAccepted)
}

// lossError is the field error of a lost route at fld. It names another
// namespace, and its gateway, only to a user who may read that
// namespace's APIGateways.
func lossError(gw *v1.APIGateway, l ownership.Loss, related RelatedObjects, fld *field.Path) *field.Error {
	readable := func(ns string) bool {
		return ns == gw.Namespace || (related.Readable != nil && related.Readable(ns))
	}
	switch l.Reason {
	case v1.ReasonDomainBound:
		return field.Forbidden(fld.Child("host"), fmt.Sprintf(
			"host %s is of domain %s, which the cluster's admins bound to other namespaces (a DomainBinding): "+
				"ask them to add namespace %s to the binding, or use another host", l.Route.Host, l.Domain, gw.Namespace)).WithOrigin(RuleDomainBound)
	case v1.ReasonHostOwned:
		owner := "another namespace"
		switch h := l.Holder; {
		case h != nil && readable(h.Namespace):
			owner = fmt.Sprintf("namespace %s (APIGateway %s/%s claimed it first)", h.Namespace, h.Namespace, h.Name)
		case h == nil && readable(l.Owner):
			owner = fmt.Sprintf("namespace %s (its HostClaim covers it)", l.Owner)
		}
		return field.Forbidden(fld.Child("host"), fmt.Sprintf(
			"host %s belongs to %s, which lends namespace %s no path prefix covering %s: "+
				"a host and the names below it belong to one namespace; "+
				"ask the host's owners for a delegation (spec.delegations on one of their gateways), or use another host",
			l.Route.Host, owner, gw.Namespace, validation.MatchString(&l.Route))).WithOrigin(RuleHostOwned)
	}
	holder := "an APIGateway of another namespace"
	if readable(l.Holder.Namespace) {
		holder = "APIGateway " + l.Holder.Namespace + "/" + l.Holder.Name
	}
	e := field.Duplicate(fld, validation.RouteString(&l.Route))
	e.Detail = fmt.Sprintf("host and path already served by %s, which claimed %s first for %s; %s, "+
		"so only one gateway can have it: use another host or path, or remove the route there",
		holder, validation.MatchString(&l.Route), scopeName(gw, l.Scope), scopeMerges(gw))
	return e.WithOrigin(RuleConflict)
}

// ConflictHolders are the gateways, as sorted namespace/name, that hold
// the routes Validate refuses gw, or the owner namespace ("namespace/")
// when a HostClaim holds the host, or the bound domain: for the audit
// annotation, which the cluster's admins read.
func ConflictHolders(old, gw *v1.APIGateway, related RelatedObjects) []string {
	var holders []string
	for _, l := range admissionLosses(old, gw, related) {
		name := l.Owner + "/"
		switch {
		case l.Holder != nil:
			name = l.Holder.Namespace + "/" + l.Holder.Name
		case l.Reason == v1.ReasonDomainBound:
			name = "domain " + l.Domain
		}
		if !slices.Contains(holders, name) {
			holders = append(holders, name)
		}
	}
	slices.Sort(holders)
	return holders
}

// scopeName names a scope of gw's (ownership.Scope.Name) for a message.
func scopeName(gw *v1.APIGateway, scope string) string {
	if g, ok := validation.ScopeGateway(scope); ok {
		return "Gateway " + g
	}
	if scope == "default" || gw.Spec.IngressClassName == nil {
		return "the cluster's default ingress class"
	}
	return fmt.Sprintf("ingress class %s", scope)
}

// scopeMerges says why routes of one scope compete.
func scopeMerges(gw *v1.APIGateway) string {
	if validation.ExposedByHTTPRoute(&gw.Spec) {
		return "a Gateway merges the HTTPRoutes attached to it, whatever their namespaces"
	}
	return "Ingress controllers merge a host's paths across namespaces"
}

// validateV1alpha1Size refuses a gateway whose v1alpha1 form would carry
// more annotations than the API server accepts in a converted object:
// from then on every v1alpha1 GET, LIST and WATCH that reaches it would
// fail, for every client of the namespace. It is a rule about the gateway
// alone, but conversion measures it, and api/ never imports conversion.
func validateV1alpha1Size(gw *v1.APIGateway, fld *field.Path) field.ErrorList {
	if conversion.V1alpha1AnnotationBytesBound(gw) <= conversion.MaxV1alpha1AnnotationBytes {
		return nil
	}
	size, err := conversion.V1alpha1AnnotationBytes(gw)
	if err != nil {
		return field.ErrorList{field.InternalError(fld, err).WithOrigin(RuleV1alpha1Size)}
	}
	if size <= conversion.MaxV1alpha1AnnotationBytes {
		return nil
	}
	return field.ErrorList{field.Invalid(fld, fmt.Sprintf("<%d bytes of annotations as v1alpha1>", size), fmt.Sprintf(
		"too large to be read through v1alpha1: the v1-only fields (pathType, tls, ingressClassName, resources) are kept in the %s "+
			"annotation there, and with the object's own annotations that would be %d bytes, over the %d the operator allows "+
			"(the API server refuses more than 262144 in a converted object, failing every v1alpha1 read of the namespace); "+
			"use fewer or shorter Exact routes, or fewer annotations",
		conversion.DataAnnotation, size, conversion.MaxV1alpha1AnnotationBytes)).WithOrigin(RuleV1alpha1Size)}
}
