package render

import (
	"sort"
	"strconv"
	"strings"

	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
)

// What a gateway gets for what it leaves unset and neither the API's
// defaults (package defaults, which a write that bypassed the defaulting
// webhook and policy never met) nor the operator's options decide. Resolve
// is the one place that applies them.
const (
	// DefaultClusterDomain is the DNS suffix of Services in most clusters,
	// for an operator whose options name none.
	DefaultClusterDomain = "cluster.local"
	// DefaultTimeoutSeconds is how long the gateway waits to connect to a
	// route's backend and for its answer when the route does not say
	// (timeouts.connectSeconds, readSeconds): nginx's proxy_connect_timeout
	// and proxy_read_timeout, which the renderer then leaves unwritten.
	DefaultTimeoutSeconds int32 = 60
)

// Gateway is a gateway resolved: the stored object with every value it
// leaves unset decided, once, from the API's defaults and the operator's
// options. The renderer, admission's size rule (ValidateRenderedSize), the
// reconciler's children and the offline commands read it and decide
// nothing again.
type Gateway struct {
	// Name, GenerateName and Namespace are the object's; the renderer
	// checks them again before it writes them.
	Name, GenerateName, Namespace string
	// Replicas is spec.replicas, or defaults.DefaultReplicas when it is
	// unset (the defaulting webhook and policy did not run: the write
	// bypassed both). It is not the operator's --default-replicas, which
	// only the defaulting reads.
	Replicas int32
	// Routes are spec.routes, each resolved, in the spec's order; Sorted
	// has them in the order the renderer serves them.
	Routes []Route
	// ClusterDomain is the Services' DNS suffix: the options', or
	// DefaultClusterDomain.
	ClusterDomain string
	// Options are the operator's options the configuration is rendered
	// with.
	Options Options
	// AccessLog is whether the pods write the JSON access log
	// (spec.accessLog); unset, they write none.
	AccessLog bool
}

// Route is one of a gateway's routes, resolved. It points into the
// stored object's spec, which nothing here writes.
type Route struct {
	*v1.Route
	// Index is the route's index in spec.routes, for its field paths.
	Index int
	// ConnectSeconds and ReadSeconds are how long the gateway waits for
	// the backend: the route's timeouts, or DefaultTimeoutSeconds each.
	ConnectSeconds, ReadSeconds int32
}

// Resolve is the gateway gw, as the operator with opts serves it. It
// only reads gw.
func Resolve(gw *v1.APIGateway, opts Options) *Gateway {
	m := &Gateway{
		Name: gw.Name, GenerateName: gw.GenerateName, Namespace: gw.Namespace,
		Replicas:      Replicas(gw),
		Routes:        resolveRoutes(gw.Spec.Routes),
		ClusterDomain: opts.ClusterDomain,
		Options:       opts,
		AccessLog:     accessLogOn(&gw.Spec),
	}
	if m.ClusterDomain == "" {
		m.ClusterDomain = DefaultClusterDomain
	}
	return m
}

// Replicas is how many pods gw runs: spec.replicas, or
// defaults.DefaultReplicas when it is unset (the write bypassed the
// defaulting webhook and policy). Resolve's Replicas; the reconciler,
// which needs only this, reads it without resolving the routes.
func Replicas(gw *v1.APIGateway) int32 {
	return ptr.Deref(gw.Spec.Replicas, defaults.DefaultReplicas)
}

// Sorted are m's routes in the order the renderer serves them: sorted
// by host, path, pathType and backend, so that which of two routes with
// one match is served does not depend on the spec's order. The Ingress
// and the HTTPRoutes follow it, so they name the route nginx serves.
// (Resolve does not sort: admission's size bound reads the routes in any
// order, on every write.)
func (m *Gateway) Sorted() []Route {
	keyed := make([]struct {
		key string
		r   Route
	}, len(m.Routes))
	for i, r := range m.Routes {
		keyed[i].key, keyed[i].r = r.sortKey(), r
	}
	sort.SliceStable(keyed, func(i, j int) bool { return keyed[i].key < keyed[j].key })
	out := make([]Route, len(keyed))
	for i := range keyed {
		out[i] = keyed[i].r
	}
	return out
}

// resolveRoutes are routes, each resolved, in their order.
func resolveRoutes(routes []v1.Route) []Route {
	out := make([]Route, len(routes))
	for i := range routes {
		out[i] = resolveRoute(&routes[i], i)
	}
	return out
}

// resolveRoute is r, the index-th route, with its unset values decided.
func resolveRoute(r *v1.Route, index int) Route {
	out := Route{Route: r, Index: index, ConnectSeconds: DefaultTimeoutSeconds, ReadSeconds: DefaultTimeoutSeconds}
	if t := r.Timeouts; t != nil {
		out.ConnectSeconds = ptr.Deref(t.ConnectSeconds, DefaultTimeoutSeconds)
		out.ReadSeconds = ptr.Deref(t.ReadSeconds, DefaultTimeoutSeconds)
	}
	return out
}

// SetsTimeouts reports whether the route sets either timeout; one that
// sets none leaves the wait to whatever is in front of the gateway too
// (a Gateway's own request timeout).
func (r Route) SetsTimeouts() bool {
	return r.Timeouts != nil && (r.Timeouts.ConnectSeconds != nil || r.Timeouts.ReadSeconds != nil)
}

// sortKey is what Sorted orders r by: its host, path, pathType and
// backend, joined by NULs.
func (r Route) sortKey() string {
	return strings.Join([]string{string(r.Host), string(r.Path), string(r.PathType), string(r.BackendService.Name), strconv.Itoa(int(r.BackendService.Port))}, "\x00")
}
