package ownership

import (
	"slices"
	"strings"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// Records are the durable decisions about hosts that Resolve obeys before
// any claim time: the operator's HostClaims (which namespace owns a host
// and the names below it) and the admins' DomainBindings (which
// namespaces may claim a domain's names at all). Claim times still decide
// the route conflicts between gateways, and the owner of a host no record
// covers yet (before the reconciler's first pass over it).
//
// A lookup reads only the records that may overlap its host when Records
// is Indexed (routeindex.Records' are): O(labels of the host), not
// O(records). Records may be appended to after Indexed (the reconciler
// adds the ones it creates); the hosts of indexed ones must not change.
type Records struct {
	Claims   []v1.HostClaim
	Bindings []v1.DomainBinding

	claimsBy, bindingsBy *hostIndex // nil: not indexed, every record is read
}

// Indexed returns r with its records indexed by host.
func (r Records) Indexed() Records {
	r.claimsBy = newHostIndex(len(r.Claims), func(i int) string { return string(r.Claims[i].Spec.Host) })
	r.bindingsBy = newHostIndex(len(r.Bindings), func(i int) string { return string(r.Bindings[i].Spec.Domain) })
	return r
}

// hostIndex finds the records whose host may overlap a host
// (validation.Overlap): those on one of its Ancestors (they cover it), and
// those below its domain (it covers them: their host ends with "." and
// the host without "*."). A host whose Ancestors stop short of what covers
// it (one label after "*.", as "localhost") is not indexed: such a record
// is read for every host, and a lookup of such a host reads every record.
type hostIndex struct {
	on    map[string][]int // positions of the records by host
	below map[string][]int // positions of the records by each domain their host lies below
	short []int            // positions of the records not indexed
	n     int              // records indexed; later ones are read for every host
}

func newHostIndex(n int, host func(int) string) *hostIndex {
	x := &hostIndex{on: make(map[string][]int, n), below: map[string][]int{}, n: n}
	for i := range n {
		h := host(i)
		if !Indexable(h) {
			x.short = append(x.short, i)
			continue
		}
		x.on[h] = append(x.on[h], i)
		for _, d := range Domains(h) {
			x.below[d] = append(x.below[d], i)
		}
	}
	return x
}

// Domains are the domains of two labels or more that host lies below
// (validation.Covers: a host on one of them covers host, and so does its
// wildcard), nearest first: those of Ancestors(host) that are neither
// host nor a wildcard.
func Domains(host string) []string {
	var out []string
	for rest := host; ; {
		_, domain, _ := strings.Cut(rest, ".")
		if !strings.Contains(domain, ".") {
			return out
		}
		out = append(out, domain)
		rest = domain
	}
}

// Indexable reports whether Ancestors(host) holds every host that covers
// host, and host is among the Ancestors of every host it covers: its
// domain (host without "*.") has two labels at least. An index by
// Ancestors and Domains finds every host overlapping an indexable one.
func Indexable(host string) bool { return strings.Contains(strings.TrimPrefix(host, "*."), ".") }

// overlapping are the positions, ascending, of the records of n whose host
// may overlap host: a superset, which the caller filters.
func (x *hostIndex) overlapping(host string, n int) []int {
	if x == nil || !Indexable(host) {
		return positions(0, n)
	}
	out := slices.Clone(x.below[strings.TrimPrefix(host, "*.")])
	for _, a := range Ancestors(host) {
		out = append(out, x.on[a]...)
	}
	out = append(append(out, x.short...), positions(x.n, n)...)
	slices.Sort(out)
	return slices.Compact(out)
}

// positions are from, ..., to-1.
func positions(from, to int) []int {
	out := make([]int, 0, max(to-from, 0))
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// BoundOut returns the domain of a DomainBinding that keeps namespace from
// claiming host, and whether there is one: a binding whose domain covers
// host leaves namespace out (where bindings nest, every one of them must
// list it), or host is a wildcard covering a bound domain whose binding
// leaves namespace out (the wildcard would serve that domain's names).
// The admission policy for HTTPRoutes and Ingresses
// (manifests/policy/hosts.yaml) decides by the same rule, one binding at a
// time.
func (r Records) BoundOut(host, namespace string) (string, bool) {
	for _, i := range r.bindingsBy.overlapping(host, len(r.Bindings)) {
		b := &r.Bindings[i]
		d := string(b.Spec.Domain)
		covered := validation.Covers(d, host) || (validation.IsWildcard(host) && validation.Covers(host, d))
		if covered && !slices.Contains(b.Spec.Namespaces, namespace) {
			return d, true
		}
	}
	return "", false
}

// Owner returns the namespace whose HostClaim keeps namespace off host,
// and whether there is one. Of the records whose host overlaps host
// (validation.Overlap: it covers host, or host covers it), the oldest
// decides (then the first by name): normally there is one, or several of
// one namespace, but two namespaces' reconciles can record overlapping
// hosts at once (different names, so both creates succeed), and then the
// older record wins everywhere they overlap, for both. A record of a
// namespace the DomainBindings keep off host does not count: the admins'
// binding comes first.
func (r Records) Owner(host, namespace string) (string, bool) {
	var first *v1.HostClaim
	for _, i := range r.claimsBy.overlapping(host, len(r.Claims)) {
		c := &r.Claims[i]
		if !validation.Overlap(string(c.Spec.Host), host) {
			continue
		}
		if _, out := r.BoundOut(host, c.Spec.Namespace); out {
			continue
		}
		if first == nil || older(c, first) {
			first = c
		}
	}
	if first == nil || first.Spec.Namespace == namespace {
		return "", false
	}
	return first.Spec.Namespace, true
}

// older reports whether record a was created before b, or at the same
// second and first by name.
func older(a, b *v1.HostClaim) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// covering is namespace's record covering host, nil when it has none.
func (r Records) covering(host, namespace string) *v1.HostClaimSpec {
	for _, i := range r.claimsBy.overlapping(host, len(r.Claims)) {
		c := &r.Claims[i].Spec
		if c.Namespace == namespace && validation.Covers(string(c.Host), host) {
			return c
		}
	}
	return nil
}

// recorded reports whether any record decides host: one overlaps it.
func (r Records) recorded(host string) bool {
	return slices.ContainsFunc(r.claimsBy.overlapping(host, len(r.Claims)), func(i int) bool {
		return validation.Overlap(string(r.Claims[i].Spec.Host), host)
	})
}

// Unrecorded are the hosts the reconciler records for in.Gateway's
// namespace after Resolve returned losses: the hosts of its routes that it
// keeps as their owner (not lost, not lent by another namespace) and that
// no record of its namespace covers yet. A gateway that routes nowhere
// (claims without RoutingSince) records nothing, nor does one under
// InterNamespaceAllowed, where hosts have no owner.
func Unrecorded(in Input, losses []Loss) []string {
	if in.Policy == InterNamespaceAllowed || in.Claims == nil || in.Claims.RoutingSince == nil {
		return nil
	}
	lost := make(map[int]bool, len(losses))
	for _, l := range losses {
		lost[l.Index] = true
	}
	d := newDecider(in)
	var out []string
	for i := range in.Gateway.Spec.Routes {
		host := string(in.Gateway.Spec.Routes[i].Host)
		if _, ok := claimable(&in.Gateway.Spec.Routes[i]); !ok || lost[i] || slices.Contains(out, host) {
			continue
		}
		if h := d.hostHolder(host); h.namespace != "" || in.Records.covering(host, in.Gateway.Namespace) != nil {
			continue
		}
		out = append(out, host)
	}
	return out
}

// Routes reports whether gateways, the gateways of claim's namespace,
// route claim's host or a name it covers: a gateway not being deleted, that
// routes somewhere (its claims have RoutingSince: an ingress class that
// exists, or a parent that has not refused it), has a route there that the
// DomainBindings do not keep the namespace off. A gateway every parent
// refused routes nowhere, so its namespace's record runs out like that of
// a deleted one.
func (r Records) Routes(claim *v1.HostClaim, gateways []*v1.APIGateway) bool {
	for _, gw := range gateways {
		if gw.Namespace != claim.Spec.Namespace || !gw.DeletionTimestamp.IsZero() ||
			gw.Status.Claims == nil || gw.Status.Claims.RoutingSince == nil {
			continue
		}
		for _, route := range gw.Spec.Routes {
			if !validation.Covers(string(claim.Spec.Host), string(route.Host)) {
				continue
			}
			if _, out := r.BoundOut(string(route.Host), gw.Namespace); !out {
				return true
			}
		}
	}
	return false
}

// Ancestors are the hosts whose owner owns name too (validation.Covers):
// name, each domain above it and the wildcard of each, in that order, up to
// the last two labels.
func Ancestors(name string) []string {
	out := []string{name}
	base, wildcard := strings.CutPrefix(name, "*.")
	if wildcard {
		out = append(out, base)
	}
	for {
		_, parent, ok := strings.Cut(base, ".")
		if !ok || !strings.Contains(parent, ".") {
			return out
		}
		out = append(out, parent, "*."+parent)
		base = parent
	}
}
