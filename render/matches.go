package render

import (
	"cmp"
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

// Request matching (routes[].matches) with stock nginx, and without ever
// building a regular expression from a tenant's string:
//
//   - each condition is a variable that is "1" or "0": for an exact value
//     of $http_x_canary, $arg_debug, $cookie_session or $request_method,
//     set in the server block by an if comparing with "=" (an nginx map,
//     tried first, matched "ALWAYS" for "always": its string keys compare
//     without case), and for a present one a map whose only key is "";
//   - each match set is a map from its conditions' variables, joined, to
//     "1" when all are "1";
//   - each location that routes with matches share picks, from its sets'
//     variables in order of precedence, the named location of the first
//     set that holds: a map whose regular expressions the renderer writes
//     from digits alone ("^1", "^.{1}1", "^.{2}1", ...);
//   - the location returns 520 when one was picked (521 to 527 for the
//     101st set on, each group of 100 a pick map of its own: nginx reads
//     at most 4096 bytes as one parameter), and its error_page sends 520
//     to the picked named location (error_page with a named
//     location keeps the request's method, URI and body); nginx never
//     answers 520 itself, so a backend's error or nginx's own 502 cannot
//     be sent there. Otherwise the location serves the route without
//     matches, or answers 404.
//
// Inside `if` there is only `return` in a location, and `set` in a
// server block (nginx's "if is evil" rule: both are the rewrite module's).

const (
	// matchStatus is the status a location returns to hand a request to
	// the route with matches that accepted it: one nginx never sends.
	// Each group of pickGroup sets has its own, from 520 to 527 (100
	// routes of 8 sets on one path).
	matchStatus = 520
	// pickGroup is how many sets one pick map reads: their variables,
	// joined, stay within the 4096 bytes nginx reads as one parameter.
	pickGroup = 100
)

// alternative is a route with matches in a location of its path: the
// location it would have without matches, served from a named location
// when one of its sets accepts a request.
type alternative struct {
	loc   location
	route *v1.Route
	index int // the route's index in spec.routes
}

// choice is one set of one alternative, in the order the location tries
// them.
type choice struct {
	alt   int // the alternative's position in location.matched
	set   int
	match *v1.RequestMatch
	exact bool
}

// precedence orders choices as Gateway API orders matches on one path:
// an Exact route first, then a set with a method, more headers, more
// query parameters, more cookies, then spec.routes' order and the set's.
func precedence(alts []alternative) func(a, b choice) int {
	return func(a, b choice) int {
		return cmp.Or(
			-cmp.Compare(b2i(a.exact), b2i(b.exact)),
			-cmp.Compare(b2i(a.match.Method != nil), b2i(b.match.Method != nil)),
			-cmp.Compare(len(a.match.Headers), len(b.match.Headers)),
			-cmp.Compare(len(a.match.QueryParams), len(b.match.QueryParams)),
			-cmp.Compare(len(a.match.Cookies), len(b.match.Cookies)),
			cmp.Compare(alts[a.alt].index, alts[b.alt].index),
			cmp.Compare(a.set, b.set),
		)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
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

// planMatches gives every location of servers that routes with matches
// share its dispatch (the lines at its top) and its named locations, and
// returns the http-level maps they read. Hosts and locations are walked
// sorted: same spec, same bytes.
func planMatches(servers map[string]map[string]location) (http string, serverLines map[string]string) {
	w := &matchWriter{defined: map[string]bool{}}
	serverLines = map[string]string{}
	hosts := slices.Sorted(func(yield func(string) bool) {
		for h := range servers {
			if !yield(h) {
				return
			}
		}
	})
	for _, h := range hosts {
		keys := make([]string, 0, len(servers[h]))
		for k, l := range servers[h] {
			if len(l.matched) > 0 {
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
			serverLines[h] = "\n    # The conditions on exact values of routes[].matches (an nginx map\n" +
				"    # compares its keys without case; \"=\" compares every byte).\n" + w.server.String()
		}
	}
	if w.http.Len() == 0 {
		return "", serverLines
	}
	return "# Request matching (routes[].matches).\n" + w.http.String(), serverLines
}

// plan writes l's pick map and sets its dispatch and named locations.
func (w *matchWriter) plan(l *location, host string) {
	id := shortID(host + "\x00" + l.match)
	pick := "agw_p_" + id
	var choices []choice
	var named strings.Builder
	for i, a := range l.matched {
		for s := range a.route.Matches {
			choices = append(choices, choice{alt: i, set: s, match: &a.route.Matches[s], exact: a.loc.exact})
		}
		writeLocationBody(&named, fmt.Sprintf("@agw_%s_%d", id, i), a.loc)
	}
	slices.SortStableFunc(choices, precedence(l.matched))
	var dispatch strings.Builder
	for g := 0; g*pickGroup < len(choices); g++ {
		group := choices[g*pickGroup : min((g+1)*pickGroup, len(choices))]
		name := fmt.Sprintf("%s_%d", pick, g)
		var source, keys strings.Builder
		for i, c := range group {
			source.WriteString("$" + w.set(c.match))
			fmt.Fprintf(&keys, "    \"~^%s1\" @agw_%s_%d;\n", skip(i), id, c.alt)
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
// checkMatches before any is written.
func conditions(m *v1.RequestMatch) []condition {
	var out []condition
	for _, h := range m.Headers {
		out = append(out, condition{variable: "http_" + strings.ReplaceAll(strings.ToLower(string(h.Name)), "-", "_"),
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
		// end (checkMatches). Only set is inside this if.
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

// checkMatches refuses a match whose names or values the renderer would
// have to escape: validation.ValidateRoute has checked them, and this is
// the renderer's own second look, as for every string it writes. A name
// becomes part of an nginx variable's name (letters, digits, '_'; '-' in
// a header name, which nginx's $http_ reads as '_'), a value is a quoted
// map key (nginxArgument).
func checkMatches(r *v1.Route, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range r.Matches {
		mfld := fld.Index(i)
		for _, c := range conditions(&r.Matches[i]) {
			if !isVariableName(c.variable) {
				errs = append(errs, field.Invalid(mfld, c.variable, "the renderer writes only names of letters, digits, '-' and '_' in a variable").WithOrigin(validation.RuleMatches))
			}
			if _, err := nginxArgument(c.value); err != nil {
				errs = append(errs, field.Invalid(mfld, c.value, err.Error()).WithOrigin(validation.RuleMatches))
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

// matchesBound bounds what r's matches add: in each of its locations, the
// dispatch, its named location's opening, and its line in the pick map;
// at http level, a map per condition (its variable and value) and per
// set, and the bucket size.
func matchesBound(r *v1.Route) (location, http int) {
	if len(r.Matches) == 0 {
		return 0, 0
	}
	// The dispatch (4 lines) and a 404 for a location no route without
	// matches serves, the named location's braces, its pick map entries
	// and the pick map's own lines (a location may be shared: counted for
	// each route that is in it).
	location = 12*lineBytes + 6*len(r.Matches)*lineBytes
	http = 2 * lineBytes // the comment, and the pick map's braces
	for i := range r.Matches {
		conds := conditions(&r.Matches[i])
		http += 4 * lineBytes // the set's map
		for _, c := range conds {
			http += 5*lineBytes + 2*len(c.variable) + len(c.value)
		}
	}
	return location, http
}
