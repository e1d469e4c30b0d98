package offline

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/ownership"
	"example.com/apigateway-operator/routepath"
)

// RouteOptions are what decides between gateways that ask for one route
// besides the gateways: the operator's --namespace-ownership and the
// cluster's IngressClasses.
type RouteOptions struct {
	// Policy is the operator's --namespace-ownership; empty is Strict, its
	// default.
	Policy ownership.Policy
	// Classes are the cluster's IngressClasses; the zero value (files)
	// has every class exist and none be the default.
	Classes ownership.Classes
}

// ReasonDeleting is a RouteRow's Reason for a route of a gateway being
// deleted.
const ReasonDeleting = "Deleting"

// RouteRow is one route of one gateway: where its requests go, and
// whether the gateway serves it.
type RouteRow struct {
	Host     string      `json:"host"`
	Path     string      `json:"path"`
	PathType v1.PathType `json:"pathType"`
	// Rules send some of the route's requests to other backends
	// (routes[].rules), in order, before Backends.
	Rules []v1.RouteRule `json:"rules,omitempty"`
	// Gateway is the APIGateway, as namespace/name; Index is the route's
	// index in its spec.routes.
	Gateway string `json:"gateway"`
	Index   int    `json:"index"`
	// Scopes are where the route competes with other gateways' routes
	// (validation.RouteScopes): its ingress class, quoted, "default", or
	// each parent Gateway as "gateway namespace/name".
	Scopes []string `json:"scopes"`
	// Backends receive the requests no rule takes: backendService first,
	// with the share additionalBackends leave it, then each of those with
	// its weight; none for a route without backendService (404).
	Backends      []WeightedBackend `json:"backends"`
	Timeouts      *v1.RouteTimeouts `json:"timeouts,omitempty"`
	RewritePrefix string            `json:"rewritePrefix,omitempty"`
	// SourceRanges limit the client addresses the route serves
	// (routes[].sourceRanges).
	SourceRanges *v1.SourceRanges `json:"sourceRanges,omitempty"`
	// Redirect answers the route's requests (routes[].redirect): all of
	// them, Backends then empty, or those on the other scheme.
	Redirect *v1.HTTPRedirect `json:"redirect,omitempty"`
	// BasicAuth and ExternalAuth ask who the client is before the route
	// serves it (routes[].basicAuth, routes[].externalAuth): the Secret's
	// name, never its content; the authentication Service.
	BasicAuth    *v1.BasicAuth    `json:"basicAuth,omitempty"`
	ExternalAuth *v1.ExternalAuth `json:"externalAuth,omitempty"`
	// CORS says which other sites' scripts may call the route
	// (routes[].cors).
	CORS *v1.CORS `json:"cors,omitempty"`
	// Served is false when another gateway holds the route, HeldBy
	// (namespace/name) and Reason (v1.ReasonHostOwned or
	// v1.ReasonRouteConflict) then say which and why, or when the gateway
	// is being deleted (Reason ReasonDeleting).
	Served bool   `json:"served"`
	HeldBy string `json:"heldBy,omitempty"`
	Reason string `json:"reason,omitempty"`
	// ContestedBy are the gateways (namespace/name) that ask for the same
	// route and lose it to this one's gateway.
	ContestedBy []string `json:"contestedBy,omitempty"`
}

// WeightedBackend is a Service port and its share of a route's requests,
// in percent.
type WeightedBackend struct {
	Name   string `json:"name"`
	Port   int32  `json:"port"`
	Weight int32  `json:"weight"`
}

// Routes is the route table of gws: a row per route of each gateway,
// sorted by host, normalised path and pathType, the gateway that serves a
// route before those that lose it.
//
// Which gateway holds a route several ask for is ownership.Resolve's
// verdict, the function the reconciler and admission decide with: the
// first claim wins, on the host (its namespace) and on the route (in one
// ingress class or on one parent Gateway). The claims are those recorded
// in each gateway's status.claims (a cluster's, or files written by
// `kubectl get -o yaml`); a gateway's routes and scopes without a
// recorded claim are claimed after every recorded claim, in the order of
// gws, as the operator would stamp them if it met the gateways in that
// order. A parent Gateway counts as routing unless the recorded claims of
// a gateway whose status is current leave it out (it refused the
// gateway's HTTPRoutes).
func Routes(gws []v1.APIGateway, opts RouteOptions) []RouteRow {
	claimed := stampClaims(gws, opts.Classes)
	losses := resolveAll(claimed, opts)
	var rows []RouteRow
	for i, gw := range claimed {
		lost := map[int]ownership.Loss{}
		for _, l := range losses[i] {
			lost[l.Index] = l
		}
		for j := range gw.Spec.Routes {
			row := routeRow(gw, j)
			if l, ok := lost[j]; ok {
				row.Served, row.HeldBy, row.Reason = false, l.Owner+"/", l.Reason
				if l.Holder != nil {
					row.HeldBy = objectName(l.Holder)
				}
			}
			if !gw.DeletionTimestamp.IsZero() {
				// It holds nothing against the others (Resolve), and
				// its children go with it.
				row.Served, row.HeldBy, row.Reason = false, "", ReasonDeleting
			}
			rows = append(rows, row)
		}
	}
	markContested(rows)
	slices.SortStableFunc(rows, func(a, b RouteRow) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(matchPath(a), matchPath(b)), cmp.Compare(a.PathType, b.PathType),
			compareServed(a, b), cmp.Compare(a.Gateway, b.Gateway), cmp.Compare(a.Index, b.Index))
	})
	return rows
}

// stampClaims are copies of gws whose status holds the claims the
// operator would record (ownership.Stamp): the recorded ones kept, the
// missing ones stamped after every recorded claim, in the order of gws.
// Their status is marked current, so that Resolve reads the claims as
// final.
func stampClaims(gws []v1.APIGateway, classes ownership.Classes) []*v1.APIGateway {
	out := make([]*v1.APIGateway, len(gws))
	for i := range gws {
		out[i] = gws[i].DeepCopy()
	}
	floor := ownership.Floor(out)
	for i, gw := range out {
		recorded := gw.Status.Claims
		current := recorded != nil && gw.Status.ObservedGeneration >= gw.Generation
		routing := func(s ownership.Scope) bool {
			if s.Ingress() {
				return s.IngressRoutes(classes)
			}
			return !current || slices.ContainsFunc(recorded.Scopes, func(c v1.ScopeClaim) bool { return c.Scope == s.Name })
		}
		// Each gateway a microsecond after the one before it: ties in
		// time would go by name, not by order.
		now := floor.Add(time.Duration(i+1) * time.Microsecond)
		gw.Status.Claims = ownership.Stamp(gw, recorded, ownership.Scopes(gw, classes), routing, now, floor)
		gw.Status.ObservedGeneration = gw.Generation
	}
	return out
}

// resolveAll is each gateway's losses, by index in gws. Only gateways
// with hosts of one family can compete (validation.HostFamily: hosts and
// the wildcards over them), so each group of such gateways is resolved
// alone. A route a gateway loses holds nothing against a third (the
// reconciler records it as lost), so a group's verdicts are repeated with
// the lost routes marked until they settle, as the operator's passes over
// the gateways would.
func resolveAll(gws []*v1.APIGateway, opts RouteOptions) [][]ownership.Loss {
	policy := opts.Policy
	if policy == "" {
		policy = ownership.Strict
	}
	losses := make([][]ownership.Loss, len(gws))
	for _, group := range competingGroups(gws) {
		members := make([]*v1.APIGateway, len(group))
		for k, i := range group {
			members[k] = gws[i]
		}
		for range len(group) + 1 {
			changed := false
			for _, i := range group {
				losses[i] = ownership.Resolve(ownership.Input{Gateway: gws[i], Claims: gws[i].Status.Claims, Others: members,
					Classes: opts.Classes, Policy: policy})
				changed = ownership.MarkLost(gws[i].Status.Claims, losses[i]) || changed
			}
			if !changed {
				break
			}
		}
	}
	return losses
}

// competingGroups partitions the indexes of gws into groups of gateways
// linked by routing hosts of one family, in order.
func competingGroups(gws []*v1.APIGateway) [][]int {
	parent := make([]int, len(gws))
	for i := range parent {
		parent[i] = i
	}
	var root func(int) int
	root = func(i int) int {
		if parent[i] != i {
			parent[i] = root(parent[i])
		}
		return parent[i]
	}
	first := map[string]int{} // the first gateway with a host of the family
	for i, gw := range gws {
		for _, r := range gw.Spec.Routes {
			family := validation.HostFamily(string(r.Host))
			if j, ok := first[family]; ok {
				parent[root(i)] = root(j)
			} else {
				first[family] = i
			}
		}
	}
	byRoot := map[int][]int{}
	var roots []int
	for i := range gws {
		r := root(i)
		if byRoot[r] == nil {
			roots = append(roots, r)
		}
		byRoot[r] = append(byRoot[r], i)
	}
	out := make([][]int, len(roots))
	for k, r := range roots {
		out[k] = byRoot[r]
	}
	return out
}

// routeRow is gw's route j as served by gw.
func routeRow(gw *v1.APIGateway, j int) RouteRow {
	r := &gw.Spec.Routes[j]
	var backends []WeightedBackend
	if r.BackendService != (v1.BackendService{}) {
		rest := int32(100)
		backends = []WeightedBackend{{Name: string(r.BackendService.Name), Port: int32(r.BackendService.Port)}}
		for _, b := range r.AdditionalBackends {
			backends = append(backends, WeightedBackend{Name: string(b.Name), Port: int32(b.Port), Weight: b.Weight})
			rest -= b.Weight
		}
		backends[0].Weight = max(rest, 0)
	}
	return RouteRow{
		Host: string(r.Host), Path: string(r.Path), PathType: r.PathType, Rules: r.Rules,
		Gateway: objectName(gw), Index: j, Scopes: validation.RouteScopes(gw),
		Backends: backends, Timeouts: r.Timeouts, RewritePrefix: string(r.RewritePrefix), Redirect: r.Redirect,
		SourceRanges: r.SourceRanges, BasicAuth: r.BasicAuth, ExternalAuth: r.ExternalAuth, CORS: r.CORS, Served: true,
	}
}

// markContested names, on the row of each route a gateway serves, the
// gateways that lose the same route to it (for its host, or for the
// route).
func markContested(rows []RouteRow) {
	type routeOf struct{ gateway, match string }
	served := map[routeOf]int{}
	for i := range rows {
		if rows[i].Served {
			served[routeOf{rows[i].Gateway, rowMatch(&rows[i])}] = i
		}
	}
	for _, r := range rows {
		if r.Served || r.HeldBy == "" {
			continue
		}
		if i, ok := served[routeOf{r.HeldBy, rowMatch(&r)}]; ok && !slices.Contains(rows[i].ContestedBy, r.Gateway) {
			rows[i].ContestedBy = append(rows[i].ContestedBy, r.Gateway)
		}
	}
	for i := range rows {
		slices.Sort(rows[i].ContestedBy)
	}
}

// rowMatch is the row's validation.RouteMatch: two rows with one compete.
func rowMatch(r *RouteRow) string {
	m, _ := validation.RouteMatch(&v1.Route{Host: v1.Hostname(r.Host), Path: v1.HTTPPath(r.Path), PathType: r.PathType})
	return m
}

// matchPath is the row's path as nginx matches it, so that routes that
// match alike sort together; the path as written when it has no such
// form.
func matchPath(r RouteRow) string {
	p, err := routepath.MatchPath(r.Path, r.PathType == v1.PathTypePrefix)
	if err != nil {
		return r.Path
	}
	return p
}

// compareServed sorts a served row before one that is not.
func compareServed(a, b RouteRow) int {
	switch {
	case a.Served == b.Served:
		return 0
	case a.Served:
		return -1
	}
	return 1
}

func objectName(o metav1.Object) string { return o.GetNamespace() + "/" + o.GetName() }

// WriteRouteTable prints rows as an aligned table, one line a route. A
// RULES column follows TYPE when some route has rules: each rule's
// matches (a match's conditions joined by "and", the matches by "or")
// and "->" its backend, the rules joined by "; ", "-" for a route
// without; BACKENDS then shows what no rule takes, "-" (404) for none.
// A REDIRECT column follows when some route has a redirect: its status
// and Location, "*" for the request's path (validation.RedirectString);
// BACKENDS is "-" for a route whose redirect answers every request.
// A SOURCES column follows REWRITE when some route has source ranges:
// "allow ...; deny ...", "-" for a route that serves every address.
// An AUTH column follows when some route authenticates: "basic:" and its
// Secret, "external:" and its Service and port (validation.AuthString),
// "-" for a route that asks no one; a CORS column when some route has
// CORS: its origins (validation.CORSString), "-" for none.
func WriteRouteTable(w io.Writer, rows []RouteRow) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	rules := optionalColumn(rows, "RULES", func(r RouteRow) string { return validation.RulesString(r.Rules) })
	redirect := optionalColumn(rows, "REDIRECT", func(r RouteRow) string {
		return validation.RedirectString(&v1.Route{Host: v1.Hostname(r.Host), Redirect: r.Redirect})
	})
	sources := optionalColumn(rows, "SOURCES", func(r RouteRow) string { return validation.SourceRangesString(r.SourceRanges) })
	auth := optionalColumn(rows, "AUTH", func(r RouteRow) string {
		return validation.AuthString(&v1.Route{BasicAuth: r.BasicAuth, ExternalAuth: r.ExternalAuth})
	})
	cors := optionalColumn(rows, "CORS", func(r RouteRow) string { return validation.CORSString(r.CORS) })
	fmt.Fprintln(tw, "HOST\tPATH\tTYPE\t"+rules.header+redirect.header+"GATEWAY\tBACKENDS\tTIMEOUTS\tREWRITE\t"+
		sources.header+auth.header+cors.header+"STATUS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s%s\t%s\t%s\t%s\t%s%s%s%s\n", r.Host, r.Path, r.PathType, rules.cell(r), redirect.cell(r), r.Gateway,
			backendsText(r.Backends), timeoutsText(r.Timeouts), orDash(r.RewritePrefix), sources.cell(r), auth.cell(r), cors.cell(r), statusText(r))
	}
	return tw.Flush()
}

// column is a column of the route table that only some tables have: its
// header and each row's cell, each with its tab, or "" for both.
type column struct {
	header string
	cell   func(RouteRow) string
}

// optionalColumn is the column header, shown when text has something to
// say of some row: each row's text, or "-".
func optionalColumn(rows []RouteRow, header string, text func(RouteRow) string) column {
	if !slices.ContainsFunc(rows, func(r RouteRow) bool { return text(r) != "" }) {
		return column{cell: func(RouteRow) string { return "" }}
	}
	return column{header: header + "\t", cell: func(r RouteRow) string { return orDash(text(r)) + "\t" }}
}

// backendsText is "user-service:8080" for one backend, and each with its
// share for several: "user-service:8080 80%, canary:8080 20%".
func backendsText(bs []WeightedBackend) string {
	if len(bs) == 0 {
		return "-"
	}
	if len(bs) == 1 {
		return fmt.Sprintf("%s:%d", bs[0].Name, bs[0].Port)
	}
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = fmt.Sprintf("%s:%d %d%%", b.Name, b.Port, b.Weight)
	}
	return strings.Join(parts, ", ")
}

// timeoutsText is the timeouts the route sets, such as "connect 5s, read
// 300s"; "-" for none (nginx's 60 s each).
func timeoutsText(t *v1.RouteTimeouts) string {
	var parts []string
	if t != nil && t.ConnectSeconds != nil {
		parts = append(parts, fmt.Sprintf("connect %ds", *t.ConnectSeconds))
	}
	if t != nil && t.ReadSeconds != nil {
		parts = append(parts, fmt.Sprintf("read %ds", *t.ReadSeconds))
	}
	return orDash(strings.Join(parts, ", "))
}

// statusText says whether the gateway serves the route, and who else
// asks for it or holds it.
func statusText(r RouteRow) string {
	switch {
	case r.Reason == ReasonDeleting:
		return "not served: the gateway is being deleted"
	case !r.Served:
		return fmt.Sprintf("lost to %s (%s)", r.HeldBy, r.Reason)
	case len(r.ContestedBy) > 0:
		return "served, contested by " + strings.Join(r.ContestedBy, ", ")
	}
	return "served"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
