package controller

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/routeindex"
)

// Two APIGateways of one ingress class, or attached to one Gateway, with a
// route of the same validation.RouteKey would fight over its requests. The validating
// webhook refuses the second, but it fails open, so while it does not
// answer both can be stored. The reconciler then resolves the conflict the
// way Gateway API resolves conflicting routes: the oldest gateway serves
// the route, the others leave it out of every child and report it in
// their Accepted condition.

// routeConflict is a route of the gateway that another gateway serves.
type routeConflict struct {
	// index is the route's index in spec.routes.
	index int
	route v1.Route
	// holder is the gateway that serves the route.
	holder *v1.APIGateway
	// sameAge: holder was created in the same second as the gateway and
	// wins by namespace and name.
	sameAge bool
}

// String names the route and its holder, for the condition's message.
func (c routeConflict) String() string {
	why := "created earlier"
	if c.sameAge {
		why = "same age, first by namespace/name"
	}
	return fmt.Sprintf("spec.routes[%d] (%s %s %s) is served by APIGateway %s/%s, %s",
		c.index, c.route.Host, c.route.PathType, c.route.Path, c.holder.Namespace, c.holder.Name, why)
}

// resolveConflicts splits gw's routes into those it serves and those that
// another gateway wins. holders maps each of gw's route keys to the
// gateways, of any namespace, with a route of that key (gw itself may be
// among them, as it is in the index). A route without a key (a path with
// no normal form, which the renderer refuses) competes with nothing. It is
// pure: holders are only read.
func resolveConflicts(gw *v1.APIGateway, holders map[string][]*v1.APIGateway) ([]v1.Route, []routeConflict) {
	kept := make([]v1.Route, 0, len(gw.Spec.Routes))
	var lost []routeConflict
	scopes := validation.RouteScopes(gw)
	for i := range gw.Spec.Routes {
		r := &gw.Spec.Routes[i]
		if w := routeWinner(gw, r, scopes, holders); w != nil {
			lost = append(lost, routeConflict{index: i, route: *r, holder: w, sameAge: w.CreationTimestamp.Equal(&gw.CreationTimestamp)})
			continue
		}
		kept = append(kept, *r)
	}
	return kept, lost
}

// routeWinner is the gateway that serves r instead of gw in one of gw's
// scopes, or nil when gw serves it in all. A route lost at one parent
// Gateway is left out at every other too: all of them get the same
// HTTPRoutes.
func routeWinner(gw *v1.APIGateway, r *v1.Route, scopes []string, holders map[string][]*v1.APIGateway) *v1.APIGateway {
	for _, scope := range scopes {
		key, ok := validation.RouteKey(scope, r)
		if !ok {
			return nil
		}
		if w := winner(gw, holders[key]); w != nil {
			return w
		}
	}
	return nil
}

// winner is the gateway of holders that serves their shared route, or nil
// when that is gw. A gateway being deleted holds nothing: its children go
// with it, and the next in line takes the route over at once.
func winner(gw *v1.APIGateway, holders []*v1.APIGateway) *v1.APIGateway {
	var best *v1.APIGateway
	for _, h := range holders {
		if isGateway(h, gw.Namespace, gw.Name) || !h.DeletionTimestamp.IsZero() || !precedes(h, gw) {
			continue
		}
		if best == nil || precedes(h, best) {
			best = h
		}
	}
	return best
}

// precedes reports whether a wins a route over b: the older by
// metadata.creationTimestamp, which has a resolution of one second, so
// that ties, which are common, go to the first by namespace, then name.
// Every gateway reaches the same verdict about any two.
func precedes(a, b *v1.APIGateway) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

func isGateway(gw *v1.APIGateway, namespace, name string) bool {
	return gw.Namespace == namespace && gw.Name == name
}

// maxConflictsShown bounds the Accepted condition's message: a gateway of
// 100 routes that all lose would otherwise list 100 holders.
const maxConflictsShown = 5

// conflictsMessage is the Accepted condition's message for lost routes.
func conflictsMessage(lost []routeConflict) string {
	return joinBounded(lost, maxConflictsShown) + ". Only the oldest APIGateway of an ingress class, or of a parent Gateway, serves a host, pathType and path; " +
		"remove or change the route here or there"
}

// servedGateway is gw with only the routes it serves, kept, and only the
// TLS hosts of those routes (a certificate for a host it no longer routes
// would compete with the holder's): the gateway the children are built
// from. gw itself when it keeps every route.
func servedGateway(gw *v1.APIGateway, kept []v1.Route) *v1.APIGateway {
	if len(kept) == len(gw.Spec.Routes) {
		return gw
	}
	served := gw.DeepCopy()
	served.Spec.Routes = kept
	served.Spec.TLS = nil
	for _, t := range gw.Spec.TLS {
		var hosts []string
		for _, h := range t.Hosts {
			if slices.ContainsFunc(kept, func(r v1.Route) bool { return r.Host == h }) {
				hosts = append(hosts, h)
			}
		}
		if len(hosts) > 0 {
			served.Spec.TLS = append(served.Spec.TLS, v1.GatewayTLS{Hosts: hosts, SecretName: t.SecretName})
		}
	}
	return served
}

// holders are, for each of gw's route keys, the gateways of any namespace
// with a route of that key, from the route index.
func holders(ctx context.Context, gateways routeindex.Finder, gw *v1.APIGateway) (map[string][]*v1.APIGateway, error) {
	keys := validation.RouteKeys(gw)
	out := make(map[string][]*v1.APIGateway, len(keys))
	for _, key := range keys {
		gws, err := gateways.Serving(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("finding the gateways that serve %s: %w", key, err)
		}
		out[key] = gws
	}
	return out, nil
}

// competitorHandler enqueues, for an event on an APIGateway, the other
// gateways that have one of its route keys, old or new: the winner of
// that route may have changed for them (it appeared, left the route, or
// went), so a loser takes a route over as soon as its holder lets it go.
// The gateway's own reconcile comes from For, as before.
type competitorHandler struct{ gateways routeindex.Finder }

type requestQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Create implements handler.EventHandler: a new gateway can win a tie.
func (h competitorHandler) Create(ctx context.Context, e event.CreateEvent, q requestQueue) {
	h.enqueue(ctx, q, e.Object)
}

// Update implements handler.EventHandler. Only what decides a route's
// winner counts: the route keys and whether the gateway is being deleted
// (creationTimestamp, namespace and name never change). Status writes,
// every reconcile's, change neither, so they reconcile no one else.
func (h competitorHandler) Update(ctx context.Context, e event.UpdateEvent, q requestQueue) {
	old, okOld := e.ObjectOld.(*v1.APIGateway)
	gw, ok := e.ObjectNew.(*v1.APIGateway)
	if !okOld || !ok {
		return
	}
	if old.DeletionTimestamp.IsZero() == gw.DeletionTimestamp.IsZero() && sameKeys(old, gw) {
		return
	}
	h.enqueue(ctx, q, old, gw)
}

// Delete implements handler.EventHandler.
func (h competitorHandler) Delete(ctx context.Context, e event.DeleteEvent, q requestQueue) {
	h.enqueue(ctx, q, e.Object)
}

// Generic implements handler.EventHandler; no source sends any.
func (competitorHandler) Generic(context.Context, event.GenericEvent, requestQueue) {}

// enqueue adds the gateways other than objs' own that hold one of objs'
// route keys.
func (h competitorHandler) enqueue(ctx context.Context, q requestQueue, objs ...client.Object) {
	seen := map[reconcile.Request]bool{}
	for _, obj := range objs {
		gw, ok := obj.(*v1.APIGateway)
		if !ok {
			continue
		}
		for _, key := range validation.RouteKeys(gw) {
			others, err := h.gateways.Serving(ctx, key)
			if err != nil {
				logf.FromContext(ctx).Error(err, "finding the gateways that share a route", "gateway", client.ObjectKeyFromObject(gw))
				continue
			}
			for _, o := range others {
				req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.Namespace, Name: o.Name}}
				if isGateway(o, gw.Namespace, gw.Name) || seen[req] {
					continue
				}
				seen[req] = true
				q.Add(req)
			}
		}
	}
}

func sameKeys(a, b *v1.APIGateway) bool {
	// The keys come from the spec alone, and the spec changes only with
	// the generation: the status writes every reconcile makes, the most
	// common update, need no key computed.
	return a.Generation == b.Generation || slices.Equal(validation.RouteKeys(a), validation.RouteKeys(b))
}
