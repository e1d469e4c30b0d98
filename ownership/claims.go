package ownership

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// Stamp returns gw's claims after the operator has looked at it at now:
// the claims of old (gw's status) for the routes and scopes gw still has,
// and new ones for the rest, stamped now, or just after floor when floor
// is later (see Floor). routing says which of scopes route now: only those
// are claimed, and routingSince is kept while some scope routed before and
// still does. A route keeps its Lost flag: Resolve decides a lost route of
// the gateway as a claim made now (its old time gave it nothing), and
// MarkLost sets the flags to Resolve's verdicts.
func Stamp(gw *v1.APIGateway, old *v1.Claims, scopes []Scope, routing func(Scope) bool, now, floor time.Time) *v1.Claims {
	stamp := metav1.NewMicroTime(now)
	if !floor.Before(now) {
		stamp = metav1.NewMicroTime(floor.Add(time.Microsecond))
	}
	if old == nil {
		old = &v1.Claims{}
	}
	c := &v1.Claims{}
	seen := make(map[string]bool, len(gw.Spec.Routes))
	for i := range gw.Spec.Routes {
		match, ok := claimable(&gw.Spec.Routes[i])
		if !ok || seen[match] {
			continue
		}
		seen[match] = true
		claim := v1.RouteClaim{Route: match, Since: stamp}
		if prev := findRoute(old, match); prev != nil {
			claim.Since, claim.Lost = prev.Since, prev.Lost
		}
		c.Routes = append(c.Routes, claim)
	}
	for _, s := range scopes {
		if !routing(s) {
			continue
		}
		since := stamp
		if prev := findScope(old, s.Name); prev != nil {
			since = prev.Since
		}
		c.Scopes = append(c.Scopes, v1.ScopeClaim{Scope: s.Name, Since: since})
	}
	if len(c.Scopes) > 0 {
		c.RoutingSince = &stamp
		if old.RoutingSince != nil {
			c.RoutingSince = old.RoutingSince.DeepCopy()
		}
	}
	return c
}

// MarkLost sets the Lost flag of each of claims' routes to whether losses
// name it, and reports whether any flag changed. A route regained keeps
// its Since: nothing held it when it was decided as a claim made now.
func MarkLost(claims *v1.Claims, losses []Loss) bool {
	if claims == nil {
		return false
	}
	lost := make(map[string]bool, len(losses))
	for _, l := range losses {
		if m, ok := validation.RouteMatch(&l.Route); ok {
			lost[m] = true
		}
	}
	changed := false
	for i := range claims.Routes {
		if c := &claims.Routes[i]; c.Lost != lost[c.Route] {
			c.Lost, changed = lost[c.Route], true
		}
	}
	return changed
}

// claimable returns r's match, and whether r may claim anything: a route
// that validation refuses (a public-suffix wildcard, a path with no normal
// form) is never served, so it claims nothing and blocks no one.
func claimable(r *v1.Route) (string, bool) {
	if len(validation.ValidateRoute(r, nil, 0)) > 0 {
		return "", false
	}
	return validation.RouteMatch(r)
}

// Floor is the latest claim among gateways: a new claim is stamped after
// it, so that it follows every claim it competes with even when the clock
// of the operator that stamped those ran ahead of this one's.
func Floor(gateways []*v1.APIGateway) time.Time {
	var latest time.Time
	later := func(t metav1.MicroTime) {
		if t.After(latest) {
			latest = t.Time
		}
	}
	for _, gw := range gateways {
		c := gw.Status.Claims
		if c == nil {
			continue
		}
		if c.RoutingSince != nil {
			later(*c.RoutingSince)
		}
		for _, r := range c.Routes {
			later(r.Since)
		}
		for _, s := range c.Scopes {
			later(s.Since)
		}
	}
	return latest
}

func findRoute(c *v1.Claims, match string) *v1.RouteClaim {
	if c == nil {
		return nil
	}
	for i := range c.Routes {
		if c.Routes[i].Route == match {
			return &c.Routes[i]
		}
	}
	return nil
}

func findScope(c *v1.Claims, name string) *v1.ScopeClaim {
	if c == nil {
		return nil
	}
	for i := range c.Scopes {
		if c.Scopes[i].Scope == name {
			return &c.Scopes[i]
		}
	}
	return nil
}
