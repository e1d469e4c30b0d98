package validation

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
)

// A route's rules (issue 34) send some of its requests to other backends
// by conditions on them. Their bounds, patterns and enums are the v1
// schema's (markers in api/v1/match_types.go, read by rules); the
// renderer writes the names and values into nginx.conf as map keys and
// variable names, so it calls this check again. Header names are
// HTTPHeaderName, with the rules of the header modifiers; query parameter
// and cookie names are MatchName, the characters an nginx variable name
// may hold.

var routeRules = field.NewPath("rules")

// exactOrPresentMessage is how the schema's rule on a header or query
// parameter condition refuses a value that does not go with its type.
const exactOrPresentMessage = "value is required with type Exact and not allowed with type Present"

// validateRules checks a route's rules, each at its index under fld, and
// that the route has somewhere to send a request: its backendService, or
// rules (a route with rules and no backendService answers 404 to the
// requests no rule takes).
func validateRules(r *v1.Route, fld *field.Path) field.ErrorList {
	limits := rules()
	if len(r.Rules) > limits.rules {
		return field.ErrorList{field.TooMany(fld, len(r.Rules), limits.rules).WithOrigin(RuleRules)}
	}
	var errs field.ErrorList
	for i := range r.Rules {
		rule := &r.Rules[i]
		rfld := fld.Index(i)
		mfld := rfld.Child("matches")
		switch {
		case len(rule.Matches) == 0:
			errs = append(errs, field.Required(mfld, "at least one match, such as {headers: [{name: X-Canary, type: Exact, value: always}]}").WithOrigin(RuleRules))
		case len(rule.Matches) > limits.ruleMatches:
			errs = append(errs, field.TooMany(mfld, len(rule.Matches), limits.ruleMatches).WithOrigin(RuleRules))
		default:
			for j := range rule.Matches {
				errs = append(errs, validateMatch(&rule.Matches[j], mfld.Index(j)).WithOrigin(RuleRules)...)
			}
		}
		bfld := rfld.Child("backendService")
		errs = append(errs, validateBackendName(string(rule.BackendService.Name), bfld.Child("name"))...)
		errs = append(errs, validateBackendPort(rule.BackendService.Port, bfld.Child("port"))...)
	}
	return errs
}

func validateMatch(m *v1.RequestMatch, fld *field.Path) field.ErrorList {
	if len(m.Headers) == 0 && len(m.QueryParams) == 0 && m.Method == nil && len(m.Cookies) == 0 {
		return field.ErrorList{field.Required(fld, "at least one condition: headers, queryParams, method or cookies")}
	}
	limits := rules()
	var errs field.ErrorList
	errs = append(errs, eachCondition(m.Headers, fld.Child("headers"), limits.matchHeaders,
		func(h v1.HeaderMatch) string { return string(h.Name) },
		func(h v1.HeaderMatch, f *field.Path) field.ErrorList {
			return append(validateHeaderName(string(h.Name), f.Child("name")),
				typedValue(h.Type, string(h.Value), f, validateHeaderValue)...)
		})...)
	errs = append(errs, eachCondition(m.QueryParams, fld.Child("queryParams"), limits.matchQueryParams,
		func(q v1.QueryParamMatch) string { return string(q.Name) },
		func(q v1.QueryParamMatch, f *field.Path) field.ErrorList {
			return append(validateMatchName(string(q.Name), f.Child("name")),
				typedValue(q.Type, q.Value, f, func(v string, vf *field.Path) field.ErrorList {
					return validateString(v, vf, limits.queryValue, "must hold only letters, digits and - . _ ~ ! * ( ) , / : @")
				})...)
		})...)
	if m.Method != nil && !slices.Contains(limits.methods, string(*m.Method)) {
		errs = append(errs, field.NotSupported(fld.Child("method"), *m.Method, limits.methods))
	}
	errs = append(errs, eachCondition(m.Cookies, fld.Child("cookies"), limits.matchCookies,
		func(c v1.CookieMatch) string { return string(c.Name) },
		func(c v1.CookieMatch, f *field.Path) field.ErrorList {
			errs := validateMatchName(string(c.Name), f.Child("name"))
			if c.Value == "" {
				return append(errs, field.Required(f.Child("value"), "the cookie's value"))
			}
			return append(errs, validateString(c.Value, f.Child("value"), limits.cookieValue,
				"must hold only letters, digits and - . _ ~ ! # & ' ( ) * + / : < = > ? @ ^ |")...)
		})...)
	return errs
}

// eachCondition checks a list of conditions keyed by name (or a set, keyed
// by its strings): at most
// maxItems, each name once as written (the list is a map keyed by name:
// a repeated name is reported once, at its second entry, as the API
// server reports it), each entry by check.
func eachCondition[T any](list []T, fld *field.Path, maxItems int, name func(T) string, check func(T, *field.Path) field.ErrorList) field.ErrorList {
	if len(list) > maxItems {
		return field.ErrorList{field.TooMany(fld, len(list), maxItems)}
	}
	var errs field.ErrorList
	seen := map[string]int{}
	for i, c := range list {
		entry := fld.Index(i)
		errs = append(errs, check(c, entry)...)
		n := name(c)
		if seen[n]++; seen[n] == 2 {
			errs = append(errs, field.Duplicate(entry, n))
		}
	}
	return errs
}

// typedValue checks a condition's type, and its value against it: one with
// type Exact, checked by check, none with type Present.
func typedValue(t v1.MatchType, value string, fld *field.Path, check func(string, *field.Path) field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	types := rules().matchTypes
	switch {
	case t == "":
		errs = append(errs, field.Required(fld.Child("type"), quotedOr(types)))
	case !slices.Contains(types, string(t)):
		errs = append(errs, field.NotSupported(fld.Child("type"), t, types))
	}
	if value != "" {
		errs = append(errs, check(value, fld.Child("value"))...)
	}
	if (t == v1.MatchPresent) != (value == "") {
		errs = append(errs, field.Invalid(fld, value, exactOrPresentMessage))
	}
	return errs
}

// validateMatchName checks the name of a query parameter or a cookie.
func validateMatchName(n string, fld *field.Path) field.ErrorList {
	if n == "" {
		return field.ErrorList{field.Required(fld, "a name such as session")}
	}
	return validateString(n, fld, rules().matchName, "must hold only letters, digits and '_', such as session")
}

// validateString checks v against rule: its length, then its pattern.
func validateString(v string, fld *field.Path, rule stringRule, pattern string) field.ErrorList {
	switch {
	case len(v) > rule.maxLength:
		return field.ErrorList{field.TooLong(fld, "", rule.maxLength)}
	case !rule.pattern.MatchString(v):
		return field.ErrorList{field.Invalid(fld, v, pattern)}
	}
	return nil
}

// MatchConditions are m's conditions as text, sorted, such as
// "header x-canary=always", "query debug present", "method GET",
// "cookie session=beta": what the routes command shows.
func MatchConditions(m *v1.RequestMatch) []string {
	var out []string
	cond := func(kind, name string, t v1.MatchType, value string) string {
		if t == v1.MatchPresent {
			return fmt.Sprintf("%s %s present", kind, strings.ToLower(name))
		}
		return fmt.Sprintf("%s %s=%s", kind, strings.ToLower(name), value)
	}
	for _, h := range m.Headers {
		out = append(out, cond("header", string(h.Name), h.Type, string(h.Value)))
	}
	for _, q := range m.QueryParams {
		out = append(out, cond("query", string(q.Name), q.Type, q.Value))
	}
	if m.Method != nil {
		out = append(out, "method "+string(*m.Method))
	}
	for _, c := range m.Cookies {
		out = append(out, cond("cookie", string(c.Name), v1.MatchExact, c.Value))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// MatchesString renders matches for messages and the routes command:
// each match's conditions joined by " and ", the matches by " or ".
func MatchesString(ms []v1.RequestMatch) string {
	sets := make([]string, len(ms))
	for i := range ms {
		sets[i] = strings.Join(MatchConditions(&ms[i]), " and ")
	}
	return strings.Join(sets, " or ")
}

// RulesString renders a route's rules for the routes command, in order,
// each as its matches and its backend, such as
// "header x-canary=always -> canary:8080"; "" without rules.
func RulesString(rs []v1.RouteRule) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s -> %s:%d", MatchesString(r.Matches), r.BackendService.Name, r.BackendService.Port)
	}
	return strings.Join(out, "; ")
}
