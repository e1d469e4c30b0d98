package ownership

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// Index finds the gateways one may compete with, in every namespace
// (routeindex.Finder over the manager's cache). The gateways it returns
// are shared with the cache: read only.
type Index interface {
	// Serving returns the gateways with a route of the validation.RouteKey
	// key.
	Serving(ctx context.Context, key string) ([]*v1.APIGateway, error)
	// HostNamespaces returns the namespaces with a gateway that routes
	// host, as routes write it (a wildcard is its own host).
	HostNamespaces(host string) []string
	// FamilyNamespaces returns the namespaces with a gateway that routes
	// a host of the family (see validation.HostFamily).
	FamilyNamespaces(family string) []string
	// OnHost returns namespace's gateways that route host.
	OnHost(ctx context.Context, namespace, host string) ([]*v1.APIGateway, error)
	// InFamily returns namespace's gateways that route a host of family.
	InFamily(ctx context.Context, namespace, family string) ([]*v1.APIGateway, error)
}

// Candidates are the gateways gw may compete with (Resolve's Others):
// those with one of its routes in one of its scopes, and, for each of its
// hosts that other namespaces route too (or that conflicts with a host
// they route: a wildcard over it, a name under its wildcard), the
// gateways of those namespaces and of gw's own on the host, which decide
// whose namespace it is: those on the host, on the hosts above it that
// cover it (validation.Covers) and on the names one label below it; and
// the gateways of the namespace whose record owns it (records) on those
// hosts, which may lend it. A host only gw's namespace routes costs a few
// map reads, however many gateways share it.
func Candidates(ctx context.Context, idx Index, gw *v1.APIGateway, classes Classes, records Records) ([]*v1.APIGateway, error) {
	c := candidates{seen: map[types.NamespacedName]bool{}}
	scopes := Scopes(gw, classes)
	for i := range gw.Spec.Routes {
		match, ok := validation.RouteMatch(&gw.Spec.Routes[i])
		if !ok {
			continue
		}
		for _, s := range scopes {
			for _, k := range s.Keys {
				if err := c.add(idx.Serving(ctx, k+" "+match)); err != nil {
					return nil, err
				}
			}
		}
	}
	hosts := map[string]bool{}
	for _, r := range gw.Spec.Routes {
		if hosts[string(r.Host)] {
			continue
		}
		hosts[string(r.Host)] = true
		if err := c.addHost(ctx, idx, gw.Namespace, string(r.Host), records); err != nil {
			return nil, err
		}
	}
	return c.out, nil
}

type candidates struct {
	seen map[types.NamespacedName]bool
	out  []*v1.APIGateway
}

func (c *candidates) add(gws []*v1.APIGateway, err error) error {
	if err != nil {
		return err
	}
	for _, g := range gws {
		k := types.NamespacedName{Namespace: g.Namespace, Name: g.Name}
		if !c.seen[k] {
			c.seen[k] = true
			c.out = append(c.out, g)
		}
	}
	return nil
}

// addHost adds the gateways that decide whose namespace host is, when a
// namespace other than own routes host or a host overlapping it, or owns
// it by a record.
func (c *candidates) addHost(ctx context.Context, idx Index, own, host string, records Records) error {
	above := Ancestors(host)
	below := []string{strings.TrimPrefix(host, "*.")}
	if validation.IsWildcard(host) {
		below = append(below, validation.HostFamily(host))
	}
	var namespaces []string
	for _, h := range above {
		namespaces = append(namespaces, idx.HostNamespaces(h)...)
	}
	for _, f := range below {
		namespaces = append(namespaces, idx.FamilyNamespaces(f)...)
	}
	if owner, ok := records.Owner(host, own); ok {
		namespaces = append(namespaces, owner)
	}
	fetch := func(ns string) error {
		for _, h := range above {
			if err := c.add(idx.OnHost(ctx, ns, h)); err != nil {
				return err
			}
		}
		for _, f := range below {
			if err := c.add(idx.InFamily(ctx, ns, f)); err != nil {
				return err
			}
		}
		return nil
	}
	contested := false
	done := map[string]bool{own: true}
	for _, ns := range namespaces {
		if done[ns] {
			continue
		}
		done[ns], contested = true, true
		if err := fetch(ns); err != nil {
			return fmt.Errorf("finding namespace %s's gateways on %s: %w", ns, host, err)
		}
	}
	if !contested {
		return nil
	}
	return fetch(own)
}
