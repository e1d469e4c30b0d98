package validation

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// A route's CORS (issue 34). Its bounds and the origin's pattern are the
// v1 schema's (markers in api/v1/cors_types.go, read here from the
// embedded CRD as rules reads the others); the renderer writes the
// origins into an nginx map and a regular expression, and the methods
// and header names into header values, so it calls this check again and
// parses each origin once more itself (ParseCORSOrigin).

var routeCORS = field.NewPath("cors")

// The schema's messages, said again by the Go rules.
const (
	corsCredentialsMessage    = "allowCredentials lets the browser send cookies: it needs the origins named, not '*' (any site could read the answers with the user's credentials)"
	corsAnyAloneMessage       = "'*' allows every origin: list it alone"
	corsPortMessage           = "the port is from 1 to 65535"
	corsResponseHeaderMessage = "sets an Access-Control-* header, which the route's cors writes: a browser refuses two values; change cors instead"
	corsAnyMethodMessage      = "'*' allows every method: list it alone"
	corsAnyHeaderMessage      = "'*' allows every header: list it alone"
	corsHeaderNameMessage     = "must be '*', or letters, digits and '-', starting with a letter or digit, such as X-Team"
	corsOriginMessage         = "must be '*', or http:// or https://, a lower-case DNS name optionally starting '*.', and an optional port, such as https://app.example.com or https://*.example.com:8443"
)

// AnyOrigin is the allowOrigins entry that allows every origin, and
// AnyCORSName the allowMethods or allowHeaders entry that allows every
// method or header.
const (
	AnyOrigin   = "*"
	AnyCORSName = "*"
)

// AllowsAny reports whether names is "*" alone, the list admission
// accepts with "*": every method or header is allowed.
func AllowsAny[S ~string](names []S) bool {
	return len(names) == 1 && names[0] == AnyCORSName
}

// DefaultCORSMaxAge is a preflight's Access-Control-Max-Age when a route
// names none: Gateway API's default.
const DefaultCORSMaxAge int32 = 5

// CORSMaxAge is c's maxAge, or DefaultCORSMaxAge.
func CORSMaxAge(c *v1.CORS) int32 { return ptr.Deref(c.MaxAge, DefaultCORSMaxAge) }

// CORSOrigin is an allowed origin, parsed: a scheme, a DNS name (the
// part after "*." for a suffix), whether it is a suffix, and a port ("" for
// none). Any is set for "*", with the others empty.
type CORSOrigin struct {
	Any          bool
	Scheme, Host string
	Suffix       bool
	Port         string
}

// originParts is the schema's pattern, its parts captured.
var originParts = regexp.MustCompile(`^(https?)://(\*\.)?([-a-z0-9.]+?)(?::([0-9]{1,5}))?$`)

// ParseCORSOrigin parses o as the schema's pattern and CEL rule allow it:
// "*", or http or https, "://", a DNS name, optionally after "*.", and a
// port from 1 to 65535 without leading zero. ok is false for anything
// else: the renderer writes only what this accepts.
func ParseCORSOrigin(o string) (CORSOrigin, bool) {
	if o == AnyOrigin {
		return CORSOrigin{Any: true}, true
	}
	if len(o) > rules().corsOrigin.maxLength {
		return CORSOrigin{}, false
	}
	m := originParts.FindStringSubmatch(o)
	if m == nil || !IsDNSName(m[3]) || !strings.Contains(m[3], ".") {
		return CORSOrigin{}, false
	}
	if p := m[4]; p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 || p[0] == '0' {
			return CORSOrigin{}, false
		}
	}
	return CORSOrigin{Scheme: m[1], Host: m[3], Suffix: m[2] != "", Port: m[4]}, true
}

// validateCORS checks r's CORS, at the fields the schema's rules name.
func validateCORS(r *v1.Route) field.ErrorList {
	c := r.CORS
	if c == nil {
		return nil
	}
	limits := rules()
	origin := func(o v1.CORSOrigin) string { return string(o) }
	errs := field.ErrorList{}
	origins := routeCORS.Child("allowOrigins")
	if len(c.AllowOrigins) == 0 {
		errs = append(errs, field.Required(origins, "the origins allowed, such as https://app.example.com"))
	}
	errs = append(errs, eachCondition(c.AllowOrigins, origins, limits.corsOrigins, origin, validateCORSOrigin)...)
	if slices.Contains(c.AllowOrigins, AnyOrigin) && len(c.AllowOrigins) > 1 {
		errs = append(errs, field.Invalid(origins, c.AllowOrigins, corsAnyAloneMessage))
	}
	if c.AllowCredentials && slices.Contains(c.AllowOrigins, AnyOrigin) {
		errs = append(errs, field.Invalid(routeCORS.Child("allowCredentials"), true, corsCredentialsMessage))
	}
	methods, allowHeaders := routeCORS.Child("allowMethods"), routeCORS.Child("allowHeaders")
	method := func(m v1.CORSMethod) string { return string(m) }
	errs = append(errs, eachCondition(c.AllowMethods, methods, limits.corsMethods, method, validateCORSMethod)...)
	errs = append(errs, anyAlone(c.AllowMethods, methods, corsAnyMethodMessage)...)
	allowed := func(n v1.CORSHeaderName) string { return string(n) }
	errs = append(errs, eachCondition(c.AllowHeaders, allowHeaders, limits.corsAllowHeaders, allowed, validateCORSHeaderName)...)
	errs = append(errs, anyAlone(c.AllowHeaders, allowHeaders, corsAnyHeaderMessage)...)
	name := func(n v1.HTTPHeaderName) string { return string(n) }
	check := func(n v1.HTTPHeaderName, f *field.Path) field.ErrorList { return validateHeaderName(string(n), f) }
	errs = append(errs, eachCondition(c.ExposeHeaders, routeCORS.Child("exposeHeaders"), limits.corsExposeHeaders, name, check)...)
	errs = append(errs, corsResponseHeaders(r.ResponseHeaders)...)
	if c.MaxAge != nil && !limits.corsMaxAge.holds(int64(*c.MaxAge)) {
		errs = append(errs, field.Invalid(routeCORS.Child("maxAge"), *c.MaxAge, fmt.Sprintf("must be from %d to %d seconds", limits.corsMaxAge.min, limits.corsMaxAge.max)))
	}
	return errs.WithOrigin(RuleCORS)
}

func validateCORSOrigin(o v1.CORSOrigin, fld *field.Path) field.ErrorList {
	if o == "" {
		return field.ErrorList{field.Required(fld, corsOriginMessage)}
	}
	if errs := validateString(string(o), fld, rules().corsOrigin, corsOriginMessage); len(errs) > 0 {
		return errs
	}
	if _, ok := ParseCORSOrigin(string(o)); !ok {
		return field.ErrorList{field.Invalid(fld, o, corsPortMessage)}
	}
	return nil
}

// corsResponseHeaders refuses response headers that set or add an
// Access-Control-* header on a route with cors: the answer would carry
// cors's value and the route's, and a browser refuses two (or takes the
// wrong one). Removing one is harmless: cors hides the backend's anyway.
// The schema's rule is on the route, at responseHeaders: reported once,
// there.
func corsResponseHeaders(m *v1.HeaderModifier) field.ErrorList {
	if m == nil {
		return nil
	}
	for _, h := range slices.Concat(m.Set, m.Add) {
		if strings.HasPrefix(strings.ToLower(string(h.Name)), "access-control-") {
			return field.ErrorList{field.Invalid(routeResponseHeaders, h.Name, corsResponseHeaderMessage)}
		}
	}
	return nil
}

// anyAlone refuses "*" beside other names, at the list, as the schema's
// rule does.
func anyAlone[S ~string](names []S, fld *field.Path, message string) field.ErrorList {
	if slices.Contains(names, AnyCORSName) && len(names) > 1 {
		return field.ErrorList{field.Invalid(fld, names, message)}
	}
	return nil
}

func validateCORSMethod(m v1.CORSMethod, fld *field.Path) field.ErrorList {
	if methods := rules().corsMethodValues; !slices.Contains(methods, string(m)) {
		return field.ErrorList{field.NotSupported(fld, m, methods)}
	}
	return nil
}

func validateCORSHeaderName(n v1.CORSHeaderName, fld *field.Path) field.ErrorList {
	if n == "" {
		return field.ErrorList{field.Required(fld, corsHeaderNameMessage)}
	}
	return validateString(string(n), fld, rules().corsHeaderName, corsHeaderNameMessage)
}

// corsShown bounds the origins CORSString names.
const corsShown = 2

// CORSString renders a route's CORS for the routes command: the allowed
// origins, "any origin" for "*", the first corsShown and how many more,
// and "credentials" when the browser sends them; "" for none.
func CORSString(c *v1.CORS) string {
	if c == nil {
		return ""
	}
	shown := c.AllowOrigins[:min(len(c.AllowOrigins), corsShown)]
	origins := make([]string, len(shown))
	for i, o := range shown {
		origins[i] = string(o)
	}
	s := strings.Join(origins, ", ")
	if more := len(c.AllowOrigins) - len(shown); more > 0 {
		s += fmt.Sprintf(" +%d more", more)
	}
	if slices.Equal(c.AllowOrigins, []v1.CORSOrigin{AnyOrigin}) {
		s = "any origin"
	}
	if c.AllowCredentials {
		s += "; credentials"
	}
	return s
}
