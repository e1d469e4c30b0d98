package ownership

import (
	v1 "example.com/apigateway-operator/api/v1"
)

// view is a gateway's claims as Resolve reads them: when each of its
// routes and scopes was claimed, and whether it holds them.
type view struct {
	gw      *v1.APIGateway
	claims  *v1.Claims
	scopes  []Scope
	matches []string // RouteMatch of each route, "" for none
	byMatch map[string]int
	claimed map[string]*v1.RouteClaim // claims.Routes by route
	// self: the gateway being decided. What it has not claimed is newer
	// than anything stored (it is being written, or routes nowhere yet).
	self bool
	// stale: another gateway whose status does not describe its spec yet:
	// what it has not claimed may be claimed by its next pass.
	stale bool
}

func newView(gw *v1.APIGateway, claims *v1.Claims, classes Classes, self bool) *view {
	v := &view{gw: gw, claims: claims, scopes: Scopes(gw, classes), self: self,
		matches: make([]string, len(gw.Spec.Routes)), byMatch: make(map[string]int, len(gw.Spec.Routes))}
	v.stale = !self && (claims == nil || gw.Status.ObservedGeneration < gw.Generation)
	if claims != nil {
		v.claimed = make(map[string]*v1.RouteClaim, len(claims.Routes))
		for i := range claims.Routes {
			v.claimed[claims.Routes[i].Route] = &claims.Routes[i]
		}
	}
	for i := range gw.Spec.Routes {
		if m, ok := claimable(&gw.Spec.Routes[i]); ok {
			v.matches[i] = m
			if _, dup := v.byMatch[m]; !dup {
				v.byMatch[m] = i
			}
		}
	}
	return v
}

// unclaimed is the time of something the gateway has not claimed.
func (v *view) unclaimed() when {
	if v.self {
		return when{rank: newest}
	}
	return when{rank: pending}
}

// routing is when the gateway began to route somewhere.
func (v *view) routing() when {
	switch {
	case v.claims != nil && v.claims.RoutingSince != nil:
		return at(*v.claims.RoutingSince)
	case v.self || v.stale:
		return v.unclaimed()
	}
	return when{rank: never} // routes nowhere: holds no host
}

// routeClaim is when the gateway claimed the route match; never when it
// has no such route or lost it, and for the gateway decided, a claim not
// made yet when it lost it.
func (v *view) routeClaim(match string) when {
	if _, ok := v.byMatch[match]; !ok {
		if v.self {
			return v.unclaimed()
		}
		return when{rank: never}
	}
	if c := v.claimed[match]; c != nil {
		switch {
		case !c.Lost:
			return at(c.Since)
		case v.self:
			// A lost route competes as a new one, in the reconciler and
			// at admission alike: others read it as holding nothing, so
			// a gateway admitted onto it while it was lost must not lose
			// it to the old time on the loser's next pass.
			return v.unclaimed()
		}
		return when{rank: never}
	}
	if v.self || v.stale {
		return v.unclaimed()
	}
	return when{rank: never} // its operator found it unclaimable
}

// hostClaim is when the gateway claimed the host of its route i: the
// later of the route's claim and its routing.
func (v *view) hostClaim(i int) when {
	m := v.matches[i]
	if m == "" {
		return when{rank: never}
	}
	routing := v.routing()
	if routing.rank == never {
		return routing
	}
	route := v.routeClaim(m)
	if route.rank == never {
		return route
	}
	return later(routing, route)
}

// scopeClaim is when the gateway began to route in scope s; never when it
// does not.
func (v *view) scopeClaim(s Scope) when {
	if c := findScope(v.claims, s.Name); c != nil {
		return at(c.Since)
	}
	if v.self || v.stale {
		return v.unclaimed()
	}
	return when{rank: never}
}
