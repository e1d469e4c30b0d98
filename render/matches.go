package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// Request matching (routes[].rules) with stock nginx, and without ever
// building a regular expression from a tenant's string:
//
//   - each condition is a variable that is "1" or "0": for an exact value
//     of $http_x_canary, $arg_debug, $cookie_session or $request_method,
//     set in the server block by an if comparing with "=" (an nginx map,
//     tried first, matched "ALWAYS" for "always": its string keys compare
//     without case), and for a present one a map whose only key is "";
//   - each match is a map from its conditions' variables, joined, to "1"
//     when all are "1";
//   - each location of a route with rules picks, from its matches'
//     variables in the rules' order, the named location of the rule of
//     the first match that holds: a map whose regular expressions the
//     renderer writes from digits alone ("^1", "^.{1}1", "^.{2}1", ...);
//   - the location returns 520 when one was picked, and its error_page
//     sends 520 to the picked named location (error_page with a named
//     location keeps the request's method, URI and body); nginx never
//     answers 520 itself, so a backend's error or nginx's own 502 cannot
//     be sent there. The named location is the route's location with the
//     rule's backend. Otherwise the location serves the route's
//     backendService, or answers 404 when the route has none.
//
// Inside `if` there is only `return` in a location, and `set` in a
// server block (nginx's "if is evil" rule: both are the rewrite module's).

const (
	// matchStatus is the status a location returns to hand a request to
	// the rule that took it: one nginx never sends. Each group of
	// pickGroup matches has its own, from 520 on (8 rules of 4 matches
	// are one group).
	matchStatus = 520
	// pickGroup is how many matches one pick map reads: their variables,
	// joined, stay within the 4096 bytes nginx reads as one parameter.
	pickGroup = 100
)

// ruleTarget is one rule of a location's route: its matches, and the
// backend ($backend's value) of its named location.
type ruleTarget struct {
	matches []v1.RequestMatch
	backend string
}

// matchWriter writes the http-level maps of a gateway's matches, each
// variable once, and the server-level lines of the host being planned.
type matchWriter struct {
	http    strings.Builder
	defined map[string]bool
	// server holds the current host's lines; serverDefined the exact
	// conditions they set.
	server        strings.Builder
	serverDefined map[string]bool
}

// planMatches gives every location of servers whose route has rules its
// dispatch (the lines at its top) and its named locations, and returns
// the http-level maps they read. Hosts and locations are walked sorted:
// same spec, same bytes.
func planMatches(servers map[string]map[string]location) (http string, serverLines map[string]string) {
	w := &matchWriter{defined: map[string]bool{}}
	serverLines = map[string]string{}
	hosts := make([]string, 0, len(servers))
	for h := range servers {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		keys := make([]string, 0, len(servers[h]))
		for k, l := range servers[h] {
			if len(l.rules) > 0 {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		w.server.Reset()
		w.serverDefined = map[string]bool{}
		for _, k := range keys {
			l := servers[h][k]
			w.plan(&l, h)
			servers[h][k] = l
		}
		if w.server.Len() > 0 {
			serverLines[h] = "\n    # The conditions on exact values of routes[].rules (an nginx map\n" +
				"    # compares its keys without case; \"=\" compares every byte).\n" + w.server.String()
		}
	}
	if w.http.Len() == 0 {
		return "", serverLines
	}
	return "# Request matching (routes[].rules).\n" + w.http.String(), serverLines
}

// plan writes l's pick map and sets its dispatch and named locations.
func (w *matchWriter) plan(l *location, host string) {
	id := shortID(host + "\x00" + l.match)
	pick := "agw_p_" + id
	type choice struct {
		rule  int
		match *v1.RequestMatch
	}
	var choices []choice
	var named strings.Builder
	for i, r := range l.rules {
		for s := range r.matches {
			choices = append(choices, choice{rule: i, match: &r.matches[s]})
		}
		writeLocationBody(&named, fmt.Sprintf("@agw_%s_%d", id, i), ruleLocation(*l, r.backend))
	}
	var dispatch strings.Builder
	for g := 0; g*pickGroup < len(choices); g++ {
		group := choices[g*pickGroup : min((g+1)*pickGroup, len(choices))]
		name := fmt.Sprintf("%s_%d", pick, g)
		var source, keys strings.Builder
		for i, c := range group {
			source.WriteString("$" + w.set(c.match))
			fmt.Fprintf(&keys, "    \"~^%s1\" @agw_%s_%d;\n", skip(i), id, c.rule)
		}
		fmt.Fprintf(&w.http, "map \"%s\" $%s {\n    default \"\";\n%s}\n", source.String(), name, keys.String())
		// One status per group, so each group's error_page names its
		// variable; the ifs are tried in order.
		fmt.Fprintf(&dispatch, "%serror_page %d = $%s;\n%sif ($%s) {\n%s    return %d;\n%s}\n",
			indent, matchStatus+g, name, indent, name, indent, matchStatus+g, indent)
	}
	l.dispatch = dispatch.String()
	l.named = named.String()
}

// ruleLocation is l, a location of a route with rules, as the named
// location of a rule whose backend is backend: the route's settings, the
// one backend (additionalBackends share only backendService's requests).
func ruleLocation(l location, backend string) location {
	t := *l.traffic
	t.split = ""
	return location{match: l.match, sortKey: l.sortKey, backend: backend, exact: l.exact, traffic: &t, rewrite: l.rewrite, route: l.route}
}

// skip is the regular expression of the first i sets' variables ("0" or
// "1" each, a character) in the pick map's source: short whatever i, so
// the map grows linearly with the sets.
func skip(i int) string {
	if i == 0 {
		return ""
	}
	return fmt.Sprintf(".{%d}", i)
}

// set defines the variable that is "1" when every condition of m holds,
// and returns its name.
func (w *matchWriter) set(m *v1.RequestMatch) string {
	conds := conditions(m)
	vars := make([]string, len(conds))
	for i, c := range conds {
		vars[i] = w.condition(c)
	}
	slices.Sort(vars)
	name := "agw_s_" + shortID(strings.Join(vars, " "))
	if !w.defined[name] {
		w.defined[name] = true
		fmt.Fprintf(&w.http, "map \"$%s\" $%s {\n    default 0;\n    \"%s\" 1;\n}\n",
			strings.Join(vars, "$"), name, strings.Repeat("1", len(vars)))
	}
	return name
}

// condition is one condition of a match set: the nginx variable it reads
// and, for an exact one, the value.
type condition struct {
	variable string
	present  bool
	value    string
}

// conditions are m's conditions, in its order. The names and values were
// checked by validation.ValidateRoute and are checked again by
// checkRules before any is written.
func conditions(m *v1.RequestMatch) []condition {
	var out []condition
	for _, h := range m.Headers {
		out = append(out, condition{variable: "http_" + headerVariable(string(h.Name)),
			present: h.Type == v1.MatchPresent, value: string(h.Value)})
	}
	for _, q := range m.QueryParams {
		out = append(out, condition{variable: "arg_" + strings.ToLower(string(q.Name)), present: q.Type == v1.MatchPresent, value: q.Value})
	}
	if m.Method != nil {
		out = append(out, condition{variable: "request_method", value: string(*m.Method)})
	}
	for _, c := range m.Cookies {
		out = append(out, condition{variable: "cookie_" + strings.ToLower(string(c.Name)), value: c.Value})
	}
	return out
}

// condition defines the variable that is "1" when c holds, and returns
// its name.
func (w *matchWriter) condition(c condition) string {
	form := c.variable + "\x00" + c.value
	if c.present {
		form = c.variable + " present"
	}
	name := "agw_c_" + shortID(form)
	switch {
	case c.present && !w.defined[name]:
		// An empty value is no value to nginx: $http_x is "" for a header
		// sent empty, $arg_x for "?x" and "?x=".
		w.defined[name] = true
		fmt.Fprintf(&w.http, "map $%s $%s {\n    default 1;\n    \"\" 0;\n}\n", c.variable, name)
	case !c.present && !w.serverDefined[name]:
		// A map would compare without case, so the server sets the
		// variable, before any location is chosen: "=" in an if compares
		// bytes, and the value is a quoted string no tenant character can
		// end (checkRules). Only set is inside this if.
		w.serverDefined[name] = true
		fmt.Fprintf(&w.server, "    set $%[1]s 0;\n    if ($%[2]s = \"%[3]s\") {\n        set $%[1]s 1;\n    }\n", name, c.variable, c.value)
	}
	return name
}

// shortID is 64 bits of s's SHA-256, in hex: a variable or location name
// no tenant string is written into.
func shortID(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// checkRules refuses a match whose names or values the renderer would
// have to escape: validation.ValidateRoute has checked them, and this is
// the renderer's own second look, as for every string it writes. A name
// becomes part of an nginx variable's name (letters, digits, '_'; '-' in
// a header name, which nginx's $http_ reads as '_'), a value is a quoted
// string (nginxArgument).
func checkRules(r *v1.Route, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range r.Rules {
		for j := range r.Rules[i].Matches {
			mfld := fld.Index(i).Child("matches").Index(j)
			for _, c := range conditions(&r.Rules[i].Matches[j]) {
				if !isVariableName(c.variable) {
					errs = append(errs, field.Invalid(mfld, c.variable, "the renderer writes only names of letters, digits, '-' and '_' in a variable").WithOrigin(validation.RuleRules))
				}
				if _, err := nginxArgument(c.value); err != nil {
					errs = append(errs, field.Invalid(mfld, c.value, err.Error()).WithOrigin(validation.RuleRules))
				}
			}
		}
	}
	return errs
}

// isVariableName reports whether s is a whole nginx variable name: the
// letters, digits and '_' nginx reads in one, and at most 128 of them.
func isVariableName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// rulesBound bounds what r's rules add to a gateway whose Services' DNS
// suffix is suffix bytes long, given location, the bound of one of r's
// locations without rules: in each location, the dispatch and a named
// location per rule (the location again, with the rule's backend); at
// http level, a map per condition (its variable and value), per match,
// and the pick map with a line per match.
func rulesBound(r *v1.Route, location, suffix int) (perLocation, http int) {
	if len(r.Rules) == 0 {
		return 0, 0
	}
	perLocation = 6 * lineBytes               // the dispatch, the 404
	http = (1 + 3*routeLocations) * lineBytes // the comment, each pick map's braces
	for i := range r.Rules {
		rule := &r.Rules[i]
		perLocation += location + lineBytes + backendBound(rule.BackendService.Name, suffix)
		for j := range rule.Matches {
			http += (4 + routeLocations) * lineBytes // the match's map, its line in each pick map
			for _, c := range conditions(&rule.Matches[j]) {
				http += 5*lineBytes + 2*len(c.variable) + len(c.value)
			}
		}
	}
	return perLocation, http
}
