package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/render"
)

// Gateway API's limits on one HTTPRoute (its CRD's schema): rules, and
// the matches of one rule. (It also allows 128 matches in all; a host has
// at most 100 paths.)
const (
	maxHTTPRouteRules       = 16
	maxHTTPRouteRuleMatches = 64
)

// desiredHTTPRoutes are gw's HTTPRoutes, for exposure type HTTPRoute: one
// per route host, in host order, each matching that host's paths and
// sending them to Service N port 80.
//
// Why one per host: an HTTPRoute's hostnames apply to all its rules, so a
// single HTTPRoute for a.example.com/x and b.example.com/y would also
// claim b.example.com/x, and a Gateway gives a path claimed twice to the
// older route: a gateway could take another gateway's requests without
// ever naming them. One HTTPRoute per host claims exactly the gateway's
// routes, the same set the Ingress claims with one rule per host.
func desiredHTTPRoutes(gw *v1.APIGateway) []*gatewayv1ac.HTTPRouteApplyConfiguration {
	byHost := ingressPaths(gw)
	hosts := make([]string, 0, len(byHost))
	for h := range byHost {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	out := make([]*gatewayv1ac.HTTPRouteApplyConfiguration, 0, len(hosts))
	for _, h := range hosts {
		spec := gatewayv1ac.HTTPRouteSpec().
			WithParentRefs(parentRefs(gw)...).
			WithHostnames(gatewayv1.Hostname(h)).
			WithRules(httpRouteRules(gw, byHost[h])...)
		out = append(out, gatewayv1ac.HTTPRoute(HTTPRouteName(gw, h), gw.Namespace).
			WithLabels(childLabels(gw)).
			WithOwnerReferences(ownerReference(gw)).
			WithSpec(spec))
	}
	return out
}

// HTTPRouteName is the name of gw's HTTPRoute for host: the gateway's
// name and a digest of the host, since a host (up to 253 characters, and
// "*." for a wildcard) cannot be part of a name.
func HTTPRouteName(gw *v1.APIGateway, host string) string {
	sum := sha256.Sum256([]byte(host))
	return gw.Name + "-" + hex.EncodeToString(sum[:5])
}

// parentRefs are the HTTPRoutes' parentRefs: spec.exposure.httpRoute's,
// with the group and kind Gateway API would default spelt out.
func parentRefs(gw *v1.APIGateway) []*gatewayv1ac.ParentReferenceApplyConfiguration {
	refs := gw.Spec.Exposure.HTTPRoute.ParentRefs
	out := make([]*gatewayv1ac.ParentReferenceApplyConfiguration, 0, len(refs))
	for _, p := range refs {
		ref := gatewayv1ac.ParentReference().
			WithGroup(gatewayv1.GroupName).
			WithKind("Gateway").
			WithName(gatewayv1.ObjectName(p.Name))
		if p.Namespace != nil {
			ref.WithNamespace(gatewayv1.Namespace(*p.Namespace))
		}
		if p.SectionName != nil {
			ref.WithSectionName(gatewayv1.SectionName(*p.SectionName))
		}
		out = append(out, ref)
	}
	return out
}

// httpRouteRules match paths, all to Service N port 80, in at most 16
// rules. A rule's matches are alternatives and every rule has the same
// backend, so how matches are shared out over rules changes no request's
// route, only the rule's timeouts: the matches of paths whose routes set
// timeouts go to rules of their request timeout (ruleGroups), the others
// to rules without one. Within a group, one rule per match while they
// fit, else several matches a rule, in order (ruleSize). A path's
// matches (httpMatches) are at most 128 in all, Gateway API's bound.
//
// The backend's group, kind and weight are the schema's defaults, spelt
// out: rules is an atomic list, so the operator owns it whole, defaults
// included, and what it last applied would otherwise never equal what it
// wants (every reconcile would apply again).
//
// A path whose route's redirect answers every request gets a rule of its
// own with Gateway API's RequestRedirect filter (redirectRule), up to
// maxRedirectRules per host; the others leave the rest of the rules.
func httpRouteRules(gw *v1.APIGateway, paths []ingressPath) []*gatewayv1ac.HTTPRouteRuleApplyConfiguration {
	redirects, proxied := redirectPaths(paths)
	limit := maxHTTPRouteRules - len(redirects)
	groups := ruleGroups(httpMatches(proxied, maxHTTPRouteMatches-len(redirects)), limit)
	perRule := ruleSize(groups, limit)
	rules := make([]*gatewayv1ac.HTTPRouteRuleApplyConfiguration, 0, maxHTTPRouteRules)
	for _, g := range groups {
		for start := 0; start < len(g.paths); start += perRule {
			rule := gatewayv1ac.HTTPRouteRule().WithBackendRefs(gatewayv1ac.HTTPBackendRef().
				WithGroup("").
				WithKind("Service").
				WithName(gatewayv1.ObjectName(gw.Name)).
				WithPort(servicePort).
				WithWeight(1))
			for _, m := range g.paths[start:min(start+perRule, len(g.paths))] {
				rule.WithMatches(httpRouteMatch(m))
			}
			if g.seconds > 0 {
				rule.WithTimeouts(gatewayv1ac.HTTPRouteTimeouts().WithRequest(gatewayDuration(g.seconds)))
			}
			rules = append(rules, rule)
		}
	}
	for _, p := range redirects {
		rules = append(rules, redirectRule(p))
	}
	return rules
}

// maxRedirectRules bounds the rules of redirects in one HTTPRoute, so
// that half of Gateway API's 16 stay for the proxied paths (whose at most
// 128 matches they hold at 64 a rule). A host's redirects past it are
// passed to the gateway, whose nginx answers them alike.
const maxRedirectRules = 8

// redirectPaths splits paths into those whose route's redirect the
// Gateway answers (gatewayRedirects), up to maxRedirectRules, and the
// rest, each in order.
func redirectPaths(paths []ingressPath) (redirects, rest []ingressPath) {
	for _, p := range paths {
		if r := p.route.Route; r != nil && gatewayRedirects(r) && len(redirects) < maxRedirectRules {
			redirects = append(redirects, p)
			continue
		}
		rest = append(rest, p)
	}
	return redirects, rest
}

// gatewayRedirects reports whether r's redirect is emitted as Gateway
// API's RequestRedirect filter, for the parent Gateway to answer: one that
// answers every request (validation.AnswersAll) and that nginx need not
// answer itself.
func gatewayRedirects(r *v1.Route) bool {
	switch {
	case !validation.AnswersAll(r):
		// To another scheme of the same host: it depends on the scheme
		// the request came in with, which one HTTPRoute attached to every
		// listener cannot tell (the filter would redirect the requests
		// that came over https too, forever).
		return false
	case r.SourceRanges != nil:
		// The Gateway would answer every address; only nginx refuses the
		// others first.
		return false
	case r.CORS != nil:
		// The filter would answer the preflights with the redirect, which
		// browsers refuse, and its answers would lack the CORS headers
		// (render's cors.go says why nginx answers CORS in both
		// exposures).
		return false
	case r.Redirect.Path != nil && strings.Contains(string(r.Redirect.Path.Value), "%"):
		// Gateway API does not say whether the filter's path is encoded,
		// and Traefik encodes its '%' again (/caf%C3%A9 became
		// /caf%25C3%25A9, test/gatewayapi).
		return false
	}
	return true
}

// redirectRule answers p's requests with its route's redirect, in Gateway
// API's RequestRedirect filter: the same scheme, hostname, port, path and status
// (spelt out, as the backends' defaults are), no backend.
func redirectRule(p ingressPath) *gatewayv1ac.HTTPRouteRuleApplyConfiguration {
	rd := p.route.Redirect
	f := gatewayv1ac.HTTPRequestRedirectFilter().WithStatusCode(int(validation.RedirectStatus(rd)))
	if rd.Scheme != "" {
		f.WithScheme(string(rd.Scheme))
	}
	if rd.Hostname != "" {
		f.WithHostname(gatewayv1.PreciseHostname(rd.Hostname))
	}
	if rd.Port != nil {
		f.WithPort(int32(*rd.Port))
	}
	if rd.Path != nil {
		m := gatewayv1ac.HTTPPathModifier()
		if rd.Path.Type == v1.ReplacePrefixMatch {
			m.WithType(gatewayv1.PrefixMatchHTTPPathModifier).WithReplacePrefixMatch(string(rd.Path.Value))
		} else {
			m.WithType(gatewayv1.FullPathHTTPPathModifier).WithReplaceFullPath(string(rd.Path.Value))
		}
		f.WithPath(m)
	}
	return gatewayv1ac.HTTPRouteRule().
		WithMatches(httpRouteMatch(httpMatch{ingressPath: p})).
		WithFilters(gatewayv1ac.HTTPRouteFilter().WithType(gatewayv1.HTTPRouteFilterRequestRedirect).WithRequestRedirect(f))
}

// maxHTTPRouteMatches is Gateway API's bound on the matches of one
// HTTPRoute, all its rules together.
const maxHTTPRouteMatches = 128

// httpMatch is one match of an HTTPRoute: a path, and the conditions of
// one match of a rule of the path's route (nil: the path alone).
type httpMatch struct {
	ingressPath
	conditions *v1.RequestMatch
}

// httpMatches are the HTTPRoute matches of paths, at most budget (the
// HTTPRoute's 128, less those of its redirects). The gateway's nginx
// decides every request the HTTPRoute passes it (it has the same rules),
// so an HTTPRoute match may take more requests than the route, never
// fewer: a path whose route has a backendService takes every request
// (nginx sends the ones no rule takes there), and so does one whose
// rules hold a match Gateway API cannot state (gatewayConditions). A
// route with rules only gets a match per match of its rules, with its
// path, while the HTTPRoute stays within budget; past that, the path alone
// (nginx then answers 404 to what no rule takes, where the Gateway would
// have answered it). Such a path's requests no rule takes can then reach
// another HTTPRoute of the Gateway with a shorter path: the Gateway, not
// nginx, decides there (README).
func httpMatches(paths []ingressPath, budget int) []httpMatch {
	expanded := make([][]httpMatch, len(paths))
	total := len(paths)
	for i, p := range paths {
		expanded[i] = []httpMatch{{ingressPath: p}}
		ms := ruleMatches(p.route.Route)
		if len(ms) == 0 || total-1+len(ms) > budget {
			continue
		}
		total += len(ms) - 1
		expanded[i] = expanded[i][:0]
		for _, m := range ms {
			expanded[i] = append(expanded[i], httpMatch{ingressPath: p, conditions: m})
		}
	}
	var out []httpMatch
	for _, e := range expanded {
		out = append(out, e...)
	}
	return out
}

// ruleMatches are the matches of r's rules in Gateway API's terms
// (gatewayConditions), in order; none when r takes every request of its
// path: r has a backendService, or a match whose conditions Gateway API
// cannot state at all.
func ruleMatches(r *v1.Route) []*v1.RequestMatch {
	if r == nil || r.BackendService != (v1.BackendService{}) {
		return nil
	}
	var out []*v1.RequestMatch
	for i := range r.Rules {
		for j := range r.Rules[i].Matches {
			m := gatewayConditions(&r.Rules[i].Matches[j])
			if m == nil {
				return nil
			}
			out = append(out, m)
		}
	}
	return out
}

// gatewayConditions is m without the conditions Gateway API's standard
// channel has no match for: a header or query parameter that need only
// be present (that would take a regular expression, whose support is
// implementation-specific), and cookies; nil when no condition is left.
func gatewayConditions(m *v1.RequestMatch) *v1.RequestMatch {
	out := &v1.RequestMatch{Method: m.Method}
	for _, h := range m.Headers {
		if h.Type == v1.MatchExact {
			out.Headers = append(out.Headers, h)
		}
	}
	for _, q := range m.QueryParams {
		if q.Type == v1.MatchExact {
			out.QueryParams = append(out.QueryParams, q)
		}
	}
	if out.Method == nil && len(out.Headers) == 0 && len(out.QueryParams) == 0 {
		return nil
	}
	return out
}

// httpRouteMatch writes m: its path, and its exact headers, exact query
// parameters and method (types spelt out, as for the backend).
func httpRouteMatch(m httpMatch) *gatewayv1ac.HTTPRouteMatchApplyConfiguration {
	out := gatewayv1ac.HTTPRouteMatch().WithPath(gatewayv1ac.HTTPPathMatch().
		WithType(httpPathType(m.pathType)).
		WithValue(httpRoutePath(m.path)))
	c := m.conditions
	if c == nil {
		return out
	}
	for _, h := range c.Headers {
		out.WithHeaders(gatewayv1ac.HTTPHeaderMatch().WithType(gatewayv1.HeaderMatchExact).
			WithName(gatewayv1.HTTPHeaderName(h.Name)).WithValue(string(h.Value)))
	}
	for _, q := range c.QueryParams {
		out.WithQueryParams(gatewayv1ac.HTTPQueryParamMatch().WithType(gatewayv1.QueryParamMatchExact).
			WithName(gatewayv1.HTTPHeaderName(q.Name)).WithValue(q.Value))
	}
	if c.Method != nil {
		out.WithMethod(gatewayv1.HTTPMethod(*c.Method))
	}
	return out
}

// ruleGroup is paths whose rules share a request timeout, in seconds; 0
// for paths whose routes set no timeouts, which get none.
type ruleGroup struct {
	seconds int32
	paths   []httpMatch
}

// ruleGroups groups paths by the request timeout of the route nginx
// serves each from (requestSeconds): first the paths without one, then
// by timeout, shortest first, each group's paths in their order.
//
// More timeouts than fit Gateway API's limits are merged, the two
// closest first, into the longer: a longer request timeout is safe, since
// nginx still ends the request at the route's own timeouts (and answers
// 504), while a shorter one would let the Gateway cut a request nginx
// still waits for. Paths without timeouts are never merged into a group
// that has one: their Gateway keeps its own default, as before timeouts
// existed.
func ruleGroups(paths []httpMatch, limit int) []ruleGroup {
	seconds := make([]int32, len(paths))
	var distinct []int32
	for i, p := range paths {
		seconds[i] = requestSeconds(p.route)
		if seconds[i] > 0 && !slices.Contains(distinct, seconds[i]) {
			distinct = append(distinct, seconds[i])
		}
	}
	slices.Sort(distinct)
	for len(distinct) > 1 && !fitsRules(groupSizes(seconds, distinct), limit) {
		closest := 0
		for i := 1; i+1 < len(distinct); i++ {
			if distinct[i+1]-distinct[i] < distinct[closest+1]-distinct[closest] {
				closest = i
			}
		}
		for i, s := range seconds {
			if s == distinct[closest] {
				seconds[i] = distinct[closest+1]
			}
		}
		distinct = slices.Delete(distinct, closest, closest+1)
	}
	var groups []ruleGroup
	for _, s := range append([]int32{0}, distinct...) {
		g := ruleGroup{seconds: s}
		for i, p := range paths {
			if seconds[i] == s {
				g.paths = append(g.paths, p)
			}
		}
		if len(g.paths) > 0 {
			groups = append(groups, g)
		}
	}
	return groups
}

// groupSizes are the number of paths without a timeout and with each of
// distinct.
func groupSizes(seconds, distinct []int32) []int {
	sizes := make([]int, len(distinct)+1)
	for _, s := range seconds {
		if s == 0 {
			sizes[0]++
		} else {
			sizes[1+slices.Index(distinct, s)]++
		}
	}
	return sizes
}

// ruleSize is the fewest paths a rule must hold for groups to fit
// Gateway API's 16 rules, every group in rules of its own: 1 (a rule per
// path) while they fit.
func ruleSize(groups []ruleGroup, limit int) int {
	sizes := make([]int, len(groups))
	for i, g := range groups {
		sizes[i] = len(g.paths)
	}
	return minRuleSize(sizes, limit)
}

// minRuleSize is the fewest paths a rule must hold for groups of sizes
// to fit in limit rules; for one group of n paths, ceil(n/limit).
func minRuleSize(sizes []int, limit int) int {
	perRule := 1
	for rulesNeeded(sizes, perRule) > limit {
		perRule++
	}
	return perRule
}

func rulesNeeded(sizes []int, perRule int) int {
	n := 0
	for _, s := range sizes {
		n += (s + perRule - 1) / perRule
	}
	return n
}

// fitsRules reports whether groups of sizes fit in limit rules of at
// most 64 matches each.
func fitsRules(sizes []int, limit int) bool {
	groups := 0
	for _, s := range sizes {
		if s > 0 {
			groups++
		}
	}
	return groups <= limit && minRuleSize(sizes, limit) <= maxHTTPRouteRuleMatches
}

// requestSeconds is the longest nginx may wait for r's backend before
// it answers: the time to connect plus the time to the first byte of
// the answer, each as the resolved route has it (the route's, or
// render.DefaultTimeoutSeconds); 0 when r sets no timeouts (the Gateway's own default then applies, as before
// the field existed). An answer that keeps streaming may last longer
// (nginx's read timeout is between two reads): a Gateway that enforces
// its request timeout on the whole answer cuts such one.
func requestSeconds(r render.Route) int32 {
	if !r.SetsTimeouts() {
		return 0
	}
	return r.ConnectSeconds + r.ReadSeconds
}

// gatewayDuration writes seconds as a Gateway API Duration (GEP-2257):
// each unit once, the largest first, so 75 is 1m15s and 3675 1h1m15s.
func gatewayDuration(seconds int32) gatewayv1.Duration {
	var b strings.Builder
	for _, u := range []struct {
		unit string
		size int32
	}{{"h", 3600}, {"m", 60}, {"s", 1}} {
		if n := seconds / u.size; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.unit)
			seconds -= n * u.size
		}
	}
	if b.Len() == 0 {
		return "0s"
	}
	return gatewayv1.Duration(b.String())
}

func httpPathType(pt networkingv1.PathType) gatewayv1.PathMatchType {
	if pt == networkingv1.PathTypeExact {
		return gatewayv1.PathMatchExact
	}
	return gatewayv1.PathMatchPathPrefix
}

// httpRoutePath writes a normalised route path (routepath.MatchPath, as
// the Ingress has it) in the characters Gateway API allows in a path
// match, percent-encoding every other byte, such as those of a decoded
// é, in upper case.
func httpRoutePath(path string) string {
	var b strings.Builder
	for i := range len(path) {
		c := path[i]
		if isGatewayPathByte(c) {
			b.WriteByte(c)
			continue
		}
		const hexDigits = "0123456789ABCDEF"
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// isGatewayPathByte reports whether Gateway API's HTTPRoute schema allows
// c, as written, in a path match: letters, digits and - / . _ ~ ! $ & ' (
// ) * + , ; = : @.
func isGatewayPathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-/._~!$&'()*+,;=:@", c) >= 0
}

// exposedByHTTPRoute reports whether gw asks for HTTPRoutes.
func exposedByHTTPRoute(gw *v1.APIGateway) bool { return validation.ExposedByHTTPRoute(&gw.Spec) }
