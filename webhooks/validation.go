package webhooks

import (
	"fmt"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/internal/routepath"
)

// Limits the schema also enforces; validation repeats them so the pure
// functions hold on their own and never format an unbounded value.
const (
	maxHostLength        = validation.DNS1123SubdomainMaxLength
	maxPathLength        = 1024
	maxImageLength       = 1024
	maxRoutes            = 100
	maxReplicas    int32 = 100
)

// Context is what validation needs to know beyond the object itself. The
// handler gathers it; tests build it by hand.
type Context struct {
	// Others are APIGateways, of any namespace, that serve at least one of
	// the object's RouteKeys, as found by the RouteIndex. A gateway with
	// the object's own namespace and name is ignored, so on update the
	// stored copy of the object never conflicts with itself.
	Others []v1.APIGateway
	// ServicePorts maps the name of each backend Service that exists to its
	// port numbers. A name missing from it means the Service does not exist
	// or is not known, which is not worth a warning: it may be created
	// after the gateway.
	ServicePorts map[string][]int32
}

// Validate checks gw against every rule of the contract and returns all the
// errors at once, each with its field path, and the warnings to show the
// user. old is nil on create and the stored object on update. Only the
// cross-gateway rule looks at old: a route the gateway already had is not
// re-checked against other gateways, so a conflict that slipped in (two
// gateways created at the same moment, each unseen by the other's check)
// never blocks unrelated updates such as a label or finalizer change.
func Validate(old, gw *v1.APIGateway, c Context) (field.ErrorList, admission.Warnings) {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if old == nil {
		errs = append(errs, validateName(gw.Name, field.NewPath("metadata", "name"))...)
	}
	errs = append(errs, validateImage(gw.Spec.Image, spec.Child("image"))...)
	errs = append(errs, validateReplicas(gw.Spec.Replicas, spec.Child("replicas"))...)
	keys := routeKeys(gw)
	errs = append(errs, validateRoutes(gw.Spec.Routes, keys, spec.Child("routes"))...)
	errs = append(errs, validateConflicts(old, gw, keys, c.Others, spec.Child("routes"))...)
	errs = append(errs, validateTLS(gw.Spec.TLS, gw.Spec.Routes, spec.Child("tls"))...)
	errs = append(errs, validateSpecFields(&gw.Spec, spec)...)
	errs = append(errs, validateV1alpha1Size(gw, spec)...)
	return errs, warnings(gw, c)
}

// validateName checks the gateway's name on create: it names the gateway's
// Service and Deployment and is the value of their instance label, so it
// must be a DNS-1035 label of at most 63 characters. An empty name means
// generateName, which the API server completes from a checked prefix.
func validateName(name string, fld *field.Path) field.ErrorList {
	if name == "" {
		return nil
	}
	if isDNS1035Label(name) {
		return nil
	}
	return field.ErrorList{field.Invalid(fld, name,
		"must be a DNS-1035 label (it names the gateway's Service): "+strings.Join(validation.IsDNS1035Label(name), "; "))}
}

func validateImage(image string, fld *field.Path) field.ErrorList {
	switch {
	case image == "":
		return field.ErrorList{field.Required(fld, "the mutating webhook fills it in from the namespace's "+
			v1.DefaultImageAnnotation+" annotation or the operator's default, but it did not run (it fails open); "+
			"set spec.image or retry")}
	case len(image) > maxImageLength:
		return field.ErrorList{field.TooLong(fld, image, maxImageLength)}
	case strings.IndexFunc(image, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return field.ErrorList{field.Invalid(fld, image, "must not contain whitespace or control characters")}
	}
	return nil
}

func validateReplicas(replicas *int32, fld *field.Path) field.ErrorList {
	switch {
	case replicas == nil:
		return field.ErrorList{field.Required(fld, "the mutating webhook fills it in with the operator's default, "+
			"but it did not run (it fails open); set spec.replicas or retry")}
	case *replicas < 0 || *replicas > maxReplicas:
		return field.ErrorList{field.Invalid(fld, *replicas, fmt.Sprintf("must be from 0 to %d", maxReplicas))}
	}
	return nil
}

// validateRoutes checks each route, and that no two share a RouteKey (keys
// holds routes' keys, in order): such routes serve the same requests, so
// the later one is reported, at its own index, naming the earlier.
func validateRoutes(routes []v1.Route, keys []string, fld *field.Path) field.ErrorList {
	switch {
	case len(routes) == 0:
		return field.ErrorList{field.Required(fld, "at least one route, such as {host: api.example.com, path: /, backendService: {name: my-service, port: 80}}")}
	case len(routes) > maxRoutes:
		return field.ErrorList{field.TooMany(fld, len(routes), maxRoutes)}
	}
	var errs field.ErrorList
	first := make(map[string]int, len(routes))
	for i, r := range routes {
		errs = append(errs, validateRoute(r, fld, i)...)
		if keys[i] == "" {
			continue
		}
		if j, seen := first[keys[i]]; seen {
			e := field.Duplicate(fld.Index(i), routeString(r))
			e.Detail = fmt.Sprintf("same host, path and pathType as spec.routes[%d]%s; merge the two routes or change one",
				j, sameMatchHint(routes[j], r))
			errs = append(errs, e)
			continue
		}
		first[keys[i]] = i
	}
	return errs
}

// sameMatchHint explains why two routes whose paths differ as written
// share a key: it names the normalised path both match.
func sameMatchHint(a, b v1.Route) string {
	if a.Path == b.Path {
		return ""
	}
	return fmt.Sprintf(" once normalised (%q and %q both match %s)", a.Path, b.Path, matchString(b))
}

// matchString renders what a route matches as the Ingress controller sees
// it: host, normalised path (see RouteKey) and pathType.
func matchString(r v1.Route) string {
	p, err := routepath.MatchPath(r.Path, r.PathType == v1.PathTypePrefix)
	if err != nil {
		p = r.Path
	}
	return fmt.Sprintf("%s%s (%s)", r.Host, p, r.PathType)
}

// The fields of a route, relative to the route and built once: a valid
// route, the common case, then costs no path at all, and validateRoute
// puts the route's own path in front of an invalid one's errors.
var (
	routeHost     = field.NewPath("host")
	routePath     = field.NewPath("path")
	routePathType = field.NewPath("pathType")
	routeBackend  = field.NewPath("backendService")
)

// validateRoute checks routes[i], whose path is fld.Index(i).
func validateRoute(r v1.Route, fld *field.Path, i int) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateHost(r.Host, routeHost)...)
	errs = append(errs, validatePath(r.Path, routePath)...)
	errs = append(errs, validatePathType(r.PathType, routePathType)...)
	errs = append(errs, validateBackend(r.BackendService, routeBackend)...)
	if len(errs) > 0 {
		prefix := fld.Index(i).String() + "."
		for _, e := range errs {
			e.Field = prefix + e.Field
		}
	}
	return errs
}

// routeString renders a route for messages: host and path as a URL would
// show them, and the match type.
func routeString(r v1.Route) string {
	return fmt.Sprintf("%s%s (%s)", r.Host, r.Path, r.PathType)
}

func validatePathType(pt v1.PathType, fld *field.Path) field.ErrorList {
	switch pt {
	case v1.PathTypePrefix, v1.PathTypeExact:
		return nil
	case "":
		return field.ErrorList{field.Required(fld, `"Prefix" or "Exact"`)}
	}
	return field.ErrorList{field.NotSupported(fld, pt, []v1.PathType{v1.PathTypePrefix, v1.PathTypeExact})}
}

func validateBackend(b v1.BackendService, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case b.Name == "":
		errs = append(errs, field.Required(fld.Child("name"), "the name of a Service in the gateway's namespace"))
	case len(b.Name) > validation.DNS1035LabelMaxLength:
		errs = append(errs, field.TooLong(fld.Child("name"), b.Name, validation.DNS1035LabelMaxLength))
	case !isDNS1035Label(b.Name):
		errs = append(errs, field.Invalid(fld.Child("name"), b.Name,
			"must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter, such as user-service"+
				suggest(b.Name, NormalizeHost(b.Name), isDNS1035Label)))
	}
	if b.Port < 1 || b.Port > 65535 {
		errs = append(errs, field.Invalid(fld.Child("port"), b.Port, "must be a port number from 1 to 65535"))
	}
	return errs
}

// validateHost checks a route host: a lower-case DNS name, optionally with
// a leading "*." wildcard, and never an IP address. The host is written
// into the proxy configuration, so this is part of the security boundary.
func validateHost(host string, fld *field.Path) field.ErrorList {
	switch {
	case host == "":
		return field.ErrorList{field.Required(fld, "a DNS name such as api.example.com")}
	case len(host) > maxHostLength:
		return field.ErrorList{field.TooLong(fld, host, maxHostLength)}
	case isIP(host) || isIP(strings.TrimPrefix(host, "*.")):
		return field.ErrorList{field.Invalid(fld, host, "must be a DNS name, not an IP address")}
	case isTopLevelWildcard(host):
		return field.ErrorList{field.Invalid(fld, host, fmt.Sprintf(
			`a wildcard must keep at least two labels after "*.", as in *.example.com: %s would claim every name under %q`, host, host[2:]))}
	case !validHost(host):
		return field.ErrorList{field.Invalid(fld, host,
			`must be a lower-case DNS name such as api.example.com, optionally starting with "*.", `+
				`with labels of at most 63 characters`+hostHint(host))}
	}
	return nil
}

// isIP reports whether s is an IP address. Only digits and dots (IPv4) or a
// string with a colon (IPv6) can be one, so other strings, every DNS name
// among them, skip the parser.
func isIP(s string) bool {
	if !strings.Contains(s, ":") && strings.ContainsFunc(s, func(r rune) bool { return r != '.' && (r < '0' || r > '9') }) {
		return false
	}
	return net.ParseIP(s) != nil
}

// validHost reports whether host is a DNS-1123 subdomain or "*." and one
// of at least two labels, with no label longer than DNS allows (63 bytes),
// which the subdomain check alone lets through.
func validHost(host string) bool {
	name := strings.TrimPrefix(host, "*.")
	return len(host) <= maxHostLength && isDNS1123Subdomain(name) && !isIP(name) && !isTopLevelWildcard(host)
}

// isTopLevelWildcard reports whether host is "*." and a single label, such
// as *.com: one gateway would take every name of a top-level domain (or of
// a single-label internal domain), which no tenant may claim. The CRD's
// CEL rule on host says the same.
func isTopLevelWildcard(host string) bool {
	label, ok := strings.CutPrefix(host, "*.")
	return ok && !strings.Contains(label, ".") && isDNS1123Subdomain(label)
}

// isDNS1123Subdomain is validation.IsDNS1123Subdomain plus the 63-byte
// limit on each label, without a regular expression: it runs for every
// route of every admission request. TestNameChecksMatchApimachinery holds
// it to apimachinery's check.
func isDNS1123Subdomain(name string) bool {
	if len(name) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if !isLabel(label, validation.DNS1123LabelMaxLength, isAlnum) {
			return false
		}
	}
	return true
}

// isDNS1035Label is validation.IsDNS1035Label without a regular expression
// (TestNameChecksMatchApimachinery holds it to apimachinery's check).
func isDNS1035Label(name string) bool {
	return isLabel(name, validation.DNS1035LabelMaxLength, func(c byte) bool { return 'a' <= c && c <= 'z' })
}

// isLabel reports whether label is 1 to maxLen lower-case letters, digits
// and '-', starts with a byte first accepts and ends with a letter or digit.
func isLabel(label string, maxLen int, first func(byte) bool) bool {
	if label == "" || len(label) > maxLen || !first(label[0]) || !isAlnum(label[len(label)-1]) {
		return false
	}
	for i := 1; i < len(label)-1; i++ {
		if c := label[i]; c != '-' && !isAlnum(c) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// hostHint explains the usual mistakes: a URL, a port, a misplaced
// wildcard, upper case or a trailing dot (the last two are normally fixed
// by the mutating webhook).
func hostHint(host string) string {
	candidate := host
	if _, rest, ok := strings.Cut(candidate, "://"); ok {
		candidate = rest
	}
	candidate, _, _ = strings.Cut(candidate, "/")
	if i := strings.LastIndexByte(candidate, ':'); i >= 0 {
		if _, err := strconv.Atoi(candidate[i+1:]); err == nil {
			candidate = candidate[:i]
		}
	}
	candidate = NormalizeHost(candidate)
	if hint := suggest(host, candidate, validHost); hint != "" {
		return hint + " (a host is a name only: no scheme, port or path)"
	}
	if strings.Contains(strings.TrimPrefix(host, "*."), "*") {
		return `; "*" is allowed only as the whole first label, as in *.example.com`
	}
	return ""
}

// suggest returns a "did you mean" hint for candidate when it differs from
// what the user wrote and passes valid.
func suggest(got, candidate string, valid func(string) bool) string {
	if candidate == got || candidate == "" || !valid(candidate) {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", candidate)
}

// isPathByte reports whether c may appear in a route path: the same
// characters the CRD schema allows. Everything else, in particular
// whitespace, control characters, quotes, braces, ';', '$', '#' and '\',
// could end or alter a directive of the generated nginx configuration.
func isPathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~/!&()*+,=:@%", c) >= 0
}

// validatePath checks a route path. The path is written into the proxy
// configuration, so this is the security boundary against configuration
// injection: only whitelisted characters, no dot segments, and percent
// signs only as well-formed escapes of printable characters.
func validatePath(p string, fld *field.Path) field.ErrorList {
	switch {
	case p == "":
		return field.ErrorList{field.Required(fld, `a path starting with "/", such as "/" or "/users/"`)}
	case len(p) > maxPathLength:
		return field.ErrorList{field.TooLong(fld, p, maxPathLength)}
	}
	if bad := badPathChars(p); len(bad) > 0 {
		return field.ErrorList{field.Invalid(fld, p,
			"must hold only letters, digits and - . _ ~ / ! & ( ) * + , = : @ %; found "+strings.Join(bad, ", ")+pathCharHint(p))}
	}
	var errs field.ErrorList
	if !strings.HasPrefix(p, "/") {
		errs = append(errs, field.Invalid(fld, p, `must start with "/"`+suggest(p, "/"+p, func(s string) bool { return !hasDotSegments(s) })))
	}
	if hasDotSegments(p) {
		errs = append(errs, field.Invalid(fld, p, `must not contain empty, "." or ".." segments`+suggest(p, cleanPath(p), func(string) bool { return true })))
	}
	if msg := checkPercentEncoding(p); msg != "" {
		errs = append(errs, field.Invalid(fld, p, msg))
	} else if strings.Contains(p, "%") && len(errs) == 0 {
		// Only escapes can make the decoded form differ from p, which
		// passed the same checks above; the renderer refuses a path whose
		// decoded form is unsafe too: say so now, at admission.
		if _, err := routepath.Decode(p); err != nil {
			errs = append(errs, field.Invalid(fld, p, "must be safe once percent-decoded: "+err.Error()))
		}
	}
	return errs
}

// badPathChars lists, quoted and without repeats, up to five characters of
// p that a path may not hold.
func badPathChars(p string) []string {
	if !strings.ContainsFunc(p, func(r rune) bool { return r >= utf8.RuneSelf || !isPathByte(byte(r)) }) {
		return nil
	}
	var bad []string
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if size == 1 && isPathByte(p[i]) {
			i++
			continue
		}
		q := strconv.QuoteRune(r)
		if r == utf8.RuneError && size == 1 {
			q = fmt.Sprintf("byte 0x%02x (not UTF-8)", p[i])
		}
		if !slices.Contains(bad, q) {
			bad = append(bad, q)
		}
		if len(bad) == 5 {
			return append(bad, "...")
		}
		i += size
	}
	return bad
}

func pathCharHint(p string) string {
	switch {
	case strings.ContainsAny(p, "?#"):
		return "; a query string or fragment is not part of the path"
	case strings.ContainsFunc(p, unicode.IsSpace):
		return "; a path may not hold spaces, not even percent-encoded: use '-' or '_'"
	}
	return ""
}

func hasDotSegments(p string) bool {
	return strings.Contains(p, "//") || strings.Contains(p, "/./") || strings.Contains(p, "/../") ||
		strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")
}

// cleanPath removes dot and empty segments the way a client would, keeping
// a trailing slash, to suggest what the user probably meant.
func cleanPath(p string) string {
	c := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// checkPercentEncoding returns why p's percent escapes are malformed, or "".
// An escape must be "%" and two hex digits, and must not encode a control
// character: %00 or %0d%0a smuggled through a proxy are classic attacks.
func checkPercentEncoding(p string) string {
	for i := strings.IndexByte(p, '%'); i >= 0; i = strings.IndexByte(p, '%') {
		if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
			return `"%" must start a percent-encoded byte such as %C3%A9 (write "%25" for a literal "%")`
		}
		b, _ := strconv.ParseUint(p[i+1:i+3], 16, 8)
		if b < 0x20 || b == 0x7f {
			return fmt.Sprintf("must not percent-encode a control character (%s)", p[i:i+3])
		}
		p = p[i+3:]
	}
	return ""
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// validateConflicts rejects routes that another APIGateway already serves
// (keys holds gw's route keys, in order): RouteKey is what the Ingress
// controller tells routes apart by, across namespaces, so two gateways
// with one key would fight over the requests, and the Ingress controller
// would pick one of them. Only keys that old did not have are checked: a
// conflict that slipped in (two gateways created at the same moment, each
// unseen by the other's check) never blocks unrelated updates.
func validateConflicts(old, gw *v1.APIGateway, keys []string, others []v1.APIGateway, fld *field.Path) field.ErrorList {
	if len(others) == 0 {
		return nil
	}
	var had []string
	if old != nil {
		had = RouteKeys(old)
	}
	servedBy := map[string][]string{}
	for i := range others {
		o := &others[i]
		if sameGateway(o, gw) {
			continue
		}
		holder := o.Namespace + "/" + o.Name
		for _, key := range RouteKeys(o) {
			if !slices.Contains(servedBy[key], holder) {
				servedBy[key] = append(servedBy[key], holder)
			}
		}
	}
	var errs field.ErrorList
	for i, r := range gw.Spec.Routes {
		holders := servedBy[keys[i]]
		if keys[i] == "" || len(holders) == 0 || slices.Contains(had, keys[i]) {
			continue
		}
		slices.Sort(holders)
		e := field.Duplicate(fld.Index(i), routeString(r))
		e.Detail = fmt.Sprintf("%s %s, which also routes %s for %s; Ingress controllers merge a host's paths across namespaces, "+
			"so only one gateway can have it: use another host or path, or remove the route there",
			conflictDetail, gatewayNames(holders), matchString(r), className(gw.Spec.IngressClassName))
		errs = append(errs, e)
	}
	return errs
}

// gatewayNames names the holders of a route, as namespace/name, up to
// five: more can only have slipped in together, and the message stays
// bounded.
func gatewayNames(holders []string) string {
	if len(holders) == 1 {
		return "APIGateway " + holders[0]
	}
	if len(holders) > 5 {
		return fmt.Sprintf("APIGateways %s and %d more", strings.Join(holders[:5], ", "), len(holders)-5)
	}
	return "APIGateways " + strings.Join(holders, ", ")
}

func className(ingressClassName *string) string {
	if ingressClassName == nil {
		return "the cluster's default ingress class"
	}
	return fmt.Sprintf("ingress class %q", *ingressClassName)
}

// validateTLS checks that every TLS host is the host of a route (a
// certificate for a host the gateway does not serve is a mistake) and is
// listed once, and that each secretName can name a Secret.
func validateTLS(tls []v1.GatewayTLS, routes []v1.Route, fld *field.Path) field.ErrorList {
	routeHosts := make([]string, 0, len(routes))
	for _, r := range routes {
		if !slices.Contains(routeHosts, r.Host) {
			routeHosts = append(routeHosts, r.Host)
		}
	}
	var errs field.ErrorList
	seen := map[string]*field.Path{}
	for i, t := range tls {
		fld := fld.Index(i)
		if len(t.Hosts) == 0 {
			errs = append(errs, field.Required(fld.Child("hosts"), "at least one route host"))
		}
		for j, h := range t.Hosts {
			hfld := fld.Child("hosts").Index(j)
			if !slices.Contains(routeHosts, h) {
				errs = append(errs, field.Invalid(hfld, h, "must be the host of one of the gateway's routes"+tlsHostHint(h, routeHosts)))
				continue
			}
			if prev, dup := seen[h]; dup {
				e := field.Duplicate(hfld, h)
				e.Detail = "already listed in " + prev.String() + "; a host can have only one certificate"
				errs = append(errs, e)
				continue
			}
			seen[h] = hfld
		}
		errs = append(errs, validateSecretName(t.SecretName, fld.Child("secretName"))...)
	}
	return errs
}

func tlsHostHint(h string, routeHosts []string) string {
	if n := NormalizeHost(h); n != h && slices.Contains(routeHosts, n) {
		return fmt.Sprintf("; did you mean %q?", n)
	}
	if len(routeHosts) > 5 {
		return fmt.Sprintf("; the route hosts are %s and %d more", strings.Join(routeHosts[:5], ", "), len(routeHosts)-5)
	}
	return "; the route hosts are " + strings.Join(routeHosts, ", ")
}

func validateSecretName(name string, fld *field.Path) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(fld, "the name of a kubernetes.io/tls Secret in the gateway's namespace")}
	case len(name) > validation.DNS1123SubdomainMaxLength:
		return field.ErrorList{field.TooLong(fld, name, validation.DNS1123SubdomainMaxLength)}
	case len(validation.IsDNS1123Subdomain(name)) > 0:
		return field.ErrorList{field.Invalid(fld, name, "must be the name of a Secret: a lower-case DNS subdomain such as api-example-com-tls"+
			suggest(name, NormalizeHost(name), func(s string) bool { return len(validation.IsDNS1123Subdomain(s)) == 0 }))}
	}
	return nil
}
