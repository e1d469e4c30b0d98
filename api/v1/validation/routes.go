package validation

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/routepath"
)

// validateRoutes checks each route, and that no two share a RouteKey: such
// routes serve the same requests, so the later one is reported, at its own
// index, naming the earlier.
func validateRoutes(routes []v1.Route, fld *field.Path) field.ErrorList {
	if len(routes) == 0 {
		return field.ErrorList{field.Required(fld,
			"at least one route, such as {host: api.example.com, path: /, backendService: {name: my-service, port: 80}}").WithOrigin(RuleRoutes)}
	}
	var errs field.ErrorList
	first := make(map[string]int, len(routes))
	for i := range routes {
		r := &routes[i]
		errs = append(errs, ValidateRoute(r, fld, i)...)
		// Within one gateway every route has the gateway's scopes.
		key, ok := RouteKey("", r)
		if !ok {
			continue
		}
		if j, seen := first[key]; seen {
			e := field.Duplicate(fld.Index(i), RouteString(r))
			e.Detail = fmt.Sprintf("same host, path and pathType as spec.routes[%d]%s; merge the two routes or change one%s",
				j, sameMatchHint(&routes[j], r), rulesHint(&routes[j], r, j))
			errs = append(errs, e.WithOrigin(RuleDuplicateRoute))
			continue
		}
		first[key] = i
	}
	return errs
}

// rulesHint points a route that differs from an earlier one only by
// conditions to where conditions go: the earlier route's rules.
func rulesHint(a, b *v1.Route, j int) string {
	if len(a.Rules) == 0 && len(b.Rules) == 0 {
		return ""
	}
	return fmt.Sprintf(" (conditions on a request go in spec.routes[%d].rules)", j)
}

// sameMatchHint explains why two routes whose paths differ as written
// share a key: it names the normalised path both match.
func sameMatchHint(a, b *v1.Route) string {
	if a.Path == b.Path {
		return ""
	}
	return fmt.Sprintf(" once normalised (%q and %q both match %s)", a.Path, b.Path, MatchString(b))
}

// The fields of a route, relative to the route and built once: a valid
// route, the common case, then costs no field path at all, and
// ValidateRoute puts the route's own path in front of an invalid one's.
var (
	routeHost        = field.NewPath("host")
	routePath        = field.NewPath("path")
	routePathType    = field.NewPath("pathType")
	routeBackend     = field.NewPath("backendService")
	routeBackendName = field.NewPath("backendService", "name")
	routeBackendPort = field.NewPath("backendService", "port")

	routeAdditionalBackends = field.NewPath("additionalBackends")
	routeTimeouts           = field.NewPath("timeouts")
	routeRewritePrefix      = field.NewPath("rewritePrefix")
	routeRequestHeaders     = field.NewPath("requestHeaders")
	routeResponseHeaders    = field.NewPath("responseHeaders")
	routeMaxBodySize        = field.NewPath("maxBodySize")
	routeRateLimit          = field.NewPath("rateLimit")
)

// ValidateRoute checks r, the route at routes[i]: its host, path, pathType
// and backend. These are the strings the renderer writes into the proxy
// configuration, so the renderer calls this too.
func ValidateRoute(r *v1.Route, routes *field.Path, i int) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateHost(string(r.Host), routeHost)...)
	errs = append(errs, validatePath(string(r.Path), routePath)...)
	errs = append(errs, validatePathType(r.PathType, routePathType)...)
	errs = append(errs, validateBackend(r)...)
	errs = append(errs, validateRules(r, routeRules)...)
	errs = append(errs, validateTraffic(r)...)
	errs = append(errs, validateRedirect(r)...)
	errs = append(errs, validateCORS(r)...)
	if len(errs) > 0 {
		prefix := routes.Index(i).String() + "."
		for _, e := range errs {
			e.Field = prefix + e.Field
		}
	}
	return errs
}

// validateBackend checks the route's backendService, which a route with
// rules may leave out (such a route answers 404 to what no rule takes),
// and so may one whose redirect answers every request (AnswersAll):
// at the same fields as the schema's rules on Route.
func validateBackend(r *v1.Route) field.ErrorList {
	if r.BackendService == (v1.BackendService{}) {
		var errs field.ErrorList
		if len(r.Rules) == 0 && !AnswersAll(r) {
			errs = append(errs, field.Required(routeBackend, "a Service to send the requests to, such as {name: my-service, port: 80}, rules that pick one, or a redirect that answers every request (one with a hostname or without scheme)").WithOrigin(RuleRules))
		}
		if len(r.AdditionalBackends) > 0 {
			errs = append(errs, field.Invalid(routeAdditionalBackends, len(r.AdditionalBackends), "shares the requests of backendService, which the route does not have").WithOrigin(RuleAdditionalBackends))
		}
		return errs
	}
	return append(validateBackendName(string(r.BackendService.Name), routeBackendName),
		validateBackendPort(r.BackendService.Port, routeBackendPort)...)
}

func validatePathType(pt v1.PathType, fld *field.Path) field.ErrorList {
	var err *field.Error
	values := rules().pathTypes
	switch {
	case slices.Contains(values, string(pt)):
		return nil
	case pt == "":
		err = field.Required(fld, quotedOr(values))
	default:
		err = field.NotSupported(fld, pt, values)
	}
	return field.ErrorList{err.WithOrigin(RulePathType)}
}

// validateBackendName checks a backend Service's name. It becomes part of
// a DNS name in the proxy configuration.
func validateBackendName(name string, fld *field.Path) field.ErrorList {
	var err *field.Error
	switch maxLength := rules().backendName.maxLength; {
	case name == "":
		err = field.Required(fld, "the name of a Service in the gateway's namespace")
	case len(name) > maxLength:
		err = field.TooLong(fld, name, maxLength)
	case !isDNS1035Label(name):
		err = field.Invalid(fld, name,
			"must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter, such as user-service"+
				suggest(name, NormalizeHost(name), isDNS1035Label))
	default:
		return nil
	}
	return field.ErrorList{err.WithOrigin(RuleBackendName)}
}

func validateBackendPort(port v1.PortNumber, fld *field.Path) field.ErrorList {
	if bounds := rules().backendPort; !bounds.holds(int64(port)) {
		return field.ErrorList{field.Invalid(fld, int32(port), fmt.Sprintf("must be a port number from %d to %d", bounds.min, bounds.max)).WithOrigin(RuleBackendPort)}
	}
	return nil
}

// quotedOr lists values for a message: "a" or "b", "a", "b" or "c".
func quotedOr(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = strconv.Quote(v)
	}
	if len(quoted) < 2 {
		return strings.Join(quoted, "")
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

// RouteKey is what the Ingress controller, or a parent Gateway, tells two
// routes apart by: the scope the route is exposed in (a RouteScopes
// entry), the route's pathType, host and normalised path
// (routepath.MatchPath: percent-decoded, a Prefix path without its
// trailing "/"). Two routes with one key compete for the same requests,
// whatever their namespaces, since Ingress controllers merge the rules of
// one host across the cluster and a Gateway merges its HTTPRoutes'. The
// host, which holds no space, ends where the path's "/" begins. It returns
// false when r's path has no normal form: validation refuses such a path
// and the renderer never serves it, so it competes with nothing.
func RouteKey(scope string, r *v1.Route) (string, bool) {
	match, ok := RouteMatch(r)
	if !ok {
		return "", false
	}
	return scope + " " + match, true
}

// RouteMatch is what r matches, whatever its scope: its pathType, host and
// normalised path, such as "Prefix api.example.com/users" (RouteKey without
// the scope). A route's rules are not part of it: two routes that differ
// only in their rules serve the same requests, and compete. It returns
// false when r's path has no normal form.
func RouteMatch(r *v1.Route) (string, bool) {
	p, err := routepath.MatchPath(string(r.Path), r.PathType == v1.PathTypePrefix)
	if err != nil {
		return "", false
	}
	return string(r.PathType) + " " + string(r.Host) + p, true
}

// RouteScopes are the scopes in which gw's routes compete with other
// gateways' (see RouteKey): its ingress class, quoted, or "default" when
// unset (the cluster's default class, its own class here); with exposure
// type HTTPRoute, each parent Gateway, as "gateway <namespace>/<name>" (a
// Gateway merges the routes of all its listeners, so the listener does not
// count). A Gateway listed twice, for two listeners, is one scope.
func RouteScopes(gw *v1.APIGateway) []string {
	if !ExposedByHTTPRoute(&gw.Spec) {
		if gw.Spec.IngressClassName == nil {
			return []string{"default"}
		}
		return []string{strconv.Quote(*gw.Spec.IngressClassName)}
	}
	var scopes []string
	for _, p := range gw.Spec.Exposure.HTTPRoute.ParentRefs {
		if s := gatewayScope + ParentGateway(gw.Namespace, &p); !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	return scopes
}

// gatewayScope starts the scope of a parent Gateway (RouteScopes); a quoted
// class or "default" never does.
const gatewayScope = "gateway "

// GatewayScope is the scope (RouteScopes) of the parent Gateway named
// namespace/name.
func GatewayScope(namespace, name string) string { return gatewayScope + namespace + "/" + name }

// ScopeGateway returns the parent Gateway, as namespace/name, that scope
// (a RouteScopes entry) stands for, and false for an ingress class.
func ScopeGateway(scope string) (string, bool) { return strings.CutPrefix(scope, gatewayScope) }

// ExposedByHTTPRoute reports whether spec asks for HTTPRoutes rather than
// an Ingress.
func ExposedByHTTPRoute(spec *v1.APIGatewaySpec) bool {
	return spec.Exposure != nil && spec.Exposure.Type == v1.ExposureHTTPRoute && spec.Exposure.HTTPRoute != nil
}

// ParentGateway is the Gateway p names, as namespace/name, for a gateway
// in namespace.
func ParentGateway(namespace string, p *v1.ParentGatewayReference) string {
	if p.Namespace != nil {
		namespace = *p.Namespace
	}
	return namespace + "/" + p.Name
}

// ParentString renders p for messages: its Gateway, as ParentGateway does
// for a gateway in namespace ("" leaves an unset namespace out), and its
// listener.
func ParentString(p *v1.ParentGatewayReference, namespace string) string {
	s := p.Name
	if g := ParentGateway(namespace, p); namespace != "" || p.Namespace != nil {
		s = g
	}
	if p.SectionName != nil {
		s += " listener " + *p.SectionName
	}
	return "Gateway " + s
}

// RouteKeys returns gw's distinct route keys: each route's key in each of
// gw's scopes, in route order.
func RouteKeys(gw *v1.APIGateway) []string {
	scopes := RouteScopes(gw)
	n := len(scopes)
	if n == 0 {
		// An HTTPRoute exposure without parentRefs, refused by validation:
		// its routes are exposed nowhere and compete with nothing.
		return nil
	}
	keys := make([]string, 0, len(gw.Spec.Routes)*n)
	for i := range gw.Spec.Routes {
		r := &gw.Spec.Routes[i]
		first, ok := RouteKey(scopes[0], r)
		if !ok || repeated(keys, first, n) {
			continue
		}
		keys = append(keys, first)
		for _, scope := range scopes[1:] {
			k, _ := RouteKey(scope, r)
			keys = append(keys, k)
		}
	}
	return keys
}

// repeated reports whether key, a route's key in the first of n scopes, is
// already among keys, which holds n keys per route, the first scope's
// first. Only those need comparing: a route that repeats another in one
// scope repeats it in all, since the key is the scope and the route's
// match, and the scopes differ. Comparing every key with every other would
// cost millions of comparisons for 100 routes and 32 parent Gateways.
func repeated(keys []string, key string, n int) bool {
	for i := 0; i < len(keys); i += n {
		if keys[i] == key {
			return true
		}
	}
	return false
}

// RouteString renders a route for messages: host and path as a URL would
// show them, and the match type.
func RouteString(r *v1.Route) string {
	return fmt.Sprintf("%s%s (%s)", r.Host, r.Path, r.PathType)
}

// MatchString renders what a route matches as the Ingress controller sees
// it: host, normalised path (see RouteKey) and pathType.
func MatchString(r *v1.Route) string {
	p, err := routepath.MatchPath(string(r.Path), r.PathType == v1.PathTypePrefix)
	if err != nil {
		p = string(r.Path)
	}
	return fmt.Sprintf("%s%s (%s)", r.Host, p, r.PathType)
}
