// Package ownership decides, as pure functions, which namespace may route
// which host and which gateway serves a route two of them ask for: the
// durable records (HostClaims, DomainBindings), the claim times of routes
// and scopes, delegations, and the names below an owned host. Admission
// (package admit) and the reconciler call the same Resolve, so a write
// admitted is a write the reconciler serves.
package ownership

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// Policy says whether a host belongs to one namespace.
type Policy string

const (
	// Strict: a host belongs to the namespace that claimed it first;
	// another namespace routes on it only under prefixes the owner lends
	// it (spec.delegations).
	Strict Policy = "Strict"
	// InterNamespaceAllowed: every namespace may route on every host; only
	// two gateways with the same route compete. Unsafe among untrusted
	// tenants: a longer prefix, an exact path under a prefix, or an exact
	// host under a wildcard takes requests from the route's owner.
	InterNamespaceAllowed Policy = "InterNamespaceAllowed"
)

// Input is what Resolve decides from.
type Input struct {
	// Gateway is the gateway whose routes are decided.
	Gateway *v1.APIGateway
	// Claims are Gateway's claims: Stamp's in the reconciler, the stored
	// status in admission.
	Claims *v1.Claims
	// Others are the gateways it may compete with (Candidates); Gateway
	// itself among them is ignored.
	Others  []*v1.APIGateway
	Classes Classes
	Policy  Policy
	// Admission: Gateway is being written. Its routes and scopes without
	// a claim are newer than everything stored, and a stored gateway's
	// route or scope the operator has not claimed yet holds, since it was
	// stored first. In the reconciler (false) every route of Gateway has
	// its claim (Stamp), and an unclaimed one of another gateway waits
	// for that gateway's own pass.
	Admission bool
	// Records are the HostClaims and DomainBindings: a host a record
	// covers is its namespace's whatever the claims say, and a bound
	// domain's names belong to its namespaces only.
	Records Records
}

// Loss is a route of Gateway that another gateway holds.
type Loss struct {
	// Index is the route's index in spec.routes.
	Index int
	Route v1.Route
	// Reason is v1.ReasonHostOwned (the host belongs to Owner, which
	// lends this path to no gateway of Gateway's), v1.ReasonDomainBound
	// (Domain's DomainBinding leaves Gateway's namespace out) or
	// v1.ReasonRouteConflict (Holder claimed the same route first).
	Reason string
	// Holder is the gateway that holds the route: for RouteConflict
	// always; for HostOwned the gateway whose claim made its namespace
	// the owner, nil when a HostClaim did (the owner may have no gateway
	// at all).
	Holder *v1.APIGateway
	// Owner is the namespace that owns the host, for HostOwned.
	Owner string
	// Domain is the bound domain, for DomainBound.
	Domain string
	// Scope is where Holder holds the route, for RouteConflict.
	Scope string
}

// Resolve returns Gateway's routes that other gateways or namespaces
// hold, in route order. A route on a name of a domain that a DomainBinding
// binds to other namespaces is DomainBound, under either policy. Under
// Strict, a host a HostClaim of another namespace covers (or that covers
// its host) is that namespace's; a host no record decides yet belongs to
// the namespace whose gateway claimed it (or a host overlapping it) first.
// Another namespace routes on an owned host only under a path its owner
// lends (spec.delegations). On the route itself, in each scope, the gateway
// that claimed it first holds it. Ties in time go to the first by
// namespace, then name, so every gateway reaches the same verdict about any
// two. A gateway being deleted, a scope that does not route (an ingress
// class that does not exist, a parent Gateway that refused the gateway's
// HTTPRoutes), or a route its own gateway lost holds nothing.
func Resolve(in Input) []Loss {
	d := newDecider(in)
	var losses []Loss
	owners := map[string]holder{} // by host: the same for every route of the host
	for i := range in.Gateway.Spec.Routes {
		r := &in.Gateway.Spec.Routes[i]
		match, ok := claimable(r)
		if !ok {
			continue // refused by validation, served by no one
		}
		if domain, out := in.Records.BoundOut(string(r.Host), in.Gateway.Namespace); out {
			losses = append(losses, Loss{Index: i, Route: *r, Reason: v1.ReasonDomainBound, Domain: domain})
			continue
		}
		if in.Policy != InterNamespaceAllowed {
			h, known := owners[string(r.Host)]
			if !known {
				h = d.hostHolder(string(r.Host))
				owners[string(r.Host)] = h
			}
			if h.namespace != "" && !lent(d.others, h.namespace, in.Gateway.Namespace, r) {
				losses = append(losses, Loss{Index: i, Route: *r, Reason: v1.ReasonHostOwned, Holder: h.gateway(), Owner: h.namespace})
				continue
			}
		}
		if holder, scope := routeHolder(d.self, d.others, match); holder != nil {
			losses = append(losses, Loss{Index: i, Route: *r, Reason: v1.ReasonRouteConflict, Holder: holder.gw, Scope: scope})
		}
	}
	return losses
}

// decider holds Resolve's views of the gateways.
type decider struct {
	in     Input
	self   *view
	others []*view
}

func newDecider(in Input) decider {
	d := decider{in: in, self: newView(in.Gateway, in.Claims, in.Classes, true)}
	d.others = make([]*view, 0, len(in.Others))
	for _, o := range in.Others {
		if sameGateway(o, in.Gateway) || !o.DeletionTimestamp.IsZero() {
			continue
		}
		d.others = append(d.others, newView(o, o.Status.Claims, in.Classes, false))
	}
	return d
}

// holder is the namespace that owns a host against Gateway's, and the
// gateway whose claim decided it when no record did.
type holder struct {
	namespace string
	view      *view
}

func (h holder) gateway() *v1.APIGateway {
	if h.view == nil {
		return nil
	}
	return h.view.gw
}

// hostHolder is the other namespace that owns host, zero when host is
// Gateway's namespace's or no one's: a record's namespace (Records.Owner)
// when a record decides host, else the namespace of the first claim on
// host or on a host overlapping it. A namespace's own record covering host
// makes it its own, whatever the claims.
func (d decider) hostHolder(host string) holder {
	ns := d.in.Gateway.Namespace
	if owner, ok := d.in.Records.Owner(host, ns); ok {
		return holder{namespace: owner}
	}
	if d.in.Records.recorded(host) {
		return holder{}
	}
	if v := d.firstClaim(host); v != nil && v.gw.Namespace != ns {
		return holder{namespace: v.gw.Namespace, view: v}
	}
	return holder{}
}

// firstClaim is the gateway that claimed host, or a host overlapping it,
// first among held claims, of a namespace the DomainBindings let claim
// host; nil when none did.
func (d decider) firstClaim(host string) *view {
	first, firstAt := (*view)(nil), when{rank: never}
	for _, v := range append([]*view{d.self}, d.others...) {
		if _, out := d.in.Records.BoundOut(host, v.gw.Namespace); out {
			continue
		}
		for j := range v.gw.Spec.Routes {
			if !validation.Overlap(string(v.gw.Spec.Routes[j].Host), host) {
				continue
			}
			if at := v.hostClaim(j); at.rank != never && (first == nil || precedes(at, v.gw, firstAt, first.gw)) {
				first, firstAt = v, at
			}
		}
	}
	return first
}

// lent reports whether a gateway of owner, among others, lends r's path on
// r's host to namespace.
func lent(others []*view, owner, namespace string, r *v1.Route) bool {
	for _, o := range others {
		if o.gw.Namespace != owner {
			continue
		}
		for i := range o.gw.Spec.Delegations {
			if d := &o.gw.Spec.Delegations[i]; d.Namespace == namespace && validation.Lends(d, r) {
				return true
			}
		}
	}
	return false
}

// routeHolder is the other gateway that claimed the route match first in
// one of Gateway's scopes, before Gateway did, and that scope; nil when
// Gateway claimed it first everywhere.
func routeHolder(self *view, others []*view, match string) (*view, string) {
	for _, s := range self.scopes {
		first, firstAt := (*view)(nil), later(self.scopeClaim(s), self.routeClaim(match))
		firstGW := self.gw
		for _, o := range others {
			theirRoute := o.routeClaim(match)
			if theirRoute.rank == never {
				continue
			}
			for _, os := range o.scopes {
				if !sharesKey(s, os) {
					continue
				}
				at := o.scopeClaim(os)
				if at.rank == never {
					continue
				}
				if at = later(at, theirRoute); precedes(at, o.gw, firstAt, firstGW) {
					first, firstAt, firstGW = o, at, o.gw
				}
			}
		}
		if first != nil {
			return first, s.Name
		}
	}
	return nil, ""
}

// sharesKey reports whether routes of scopes a and b compete (their
// RouteKey spellings meet).
func sharesKey(a, b Scope) bool {
	for _, k := range a.Keys {
		for _, l := range b.Keys {
			if k == l {
				return true
			}
		}
	}
	return false
}

// when is the time of a claim, ordered: a claimed time, then a claim not
// made yet of a stored gateway, then one newer than anything stored;
// never is no claim at all (the route or scope holds nothing).
type when struct {
	rank int
	t    time.Time
}

const (
	atTime = iota
	pending
	newest
	never
)

func at(t metav1.MicroTime) when { return when{rank: atTime, t: t.Time} }

func (a when) before(b when) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.t.Before(b.t)
}

func later(a, b when) when {
	if a.before(b) {
		return b
	}
	return a
}

// precedes reports whether a's claim at ta comes before b's at tb: the
// earlier, or on a tie the first by namespace, then name.
func precedes(ta when, a *v1.APIGateway, tb when, b *v1.APIGateway) bool {
	if ta.before(tb) || tb.before(ta) {
		return ta.before(tb)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

func sameGateway(a, b *v1.APIGateway) bool { return a.Namespace == b.Namespace && a.Name == b.Name }
