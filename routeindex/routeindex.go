// Package routeindex indexes the cluster's APIGateways by route key
// (validation.RouteKey: ingress class, pathType, host and normalised path),
// so that the gateways competing for a route are found with one map read,
// whatever the number of gateways. The validating webhook refuses a new
// route that another gateway already serves; the reconciler decides, after
// admission, which of the gateways holding a route serves it. Both read the
// same index on the manager's APIGateway informer.
package routeindex

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/mirror"
	"example.com/apigateway-operator/ownership"
)

// Name is the index on the APIGateway informer that holds one value per
// distinct route key (validation.RouteKey) of each gateway, in every
// namespace.
const Name = "apigateway.example.com/route-key"

// HostName is the index on the APIGateway informer that holds, for each
// distinct host of a gateway, the host and the host's family
// (ownership.Family), each with the gateway's namespace: the gateways of
// one namespace on a host, or on a family, are one map read away.
const HostName = "apigateway.example.com/host"

// OverlapName is the index on the APIGateway informer that holds, for
// each distinct host of a gateway, the host and the domains it lies below
// (ownership.Domains), or shortValue for a host ownership does not index
// (ownership.Indexable): the gateways with a host overlapping a record's
// are a few map reads away.
const OverlapName = "apigateway.example.com/overlap"

// Finder finds the APIGateways that hold a route or a host: an
// ownership.Index. They are shared with the cache: read only.
type Finder interface {
	ownership.Index
	// Overlapping returns the gateways, of any namespace, with a route on
	// a host that overlaps host (validation.Overlap).
	Overlapping(host string) ([]*v1.APIGateway, error)
}

// IndexFunc is the toolscache.IndexFunc of Name: the object's distinct
// route keys, none for anything but an APIGateway, and none for one
// beyond the v1 schema's size limits (validation.WithinSizeLimits), which
// could make hundreds of thousands of keys in every replica; admission
// refuses such a gateway, and the reconciler serves none of its routes.
func IndexFunc(obj any) ([]string, error) {
	gw, ok := obj.(*v1.APIGateway)
	if !ok || !validation.WithinSizeLimits(&gw.Spec) {
		return nil, nil
	}
	return validation.RouteKeys(gw), nil
}

// Indexers are Name and HostName with their functions, for a test's
// toolscache.NewIndexer under NewFinder.
func Indexers() toolscache.Indexers {
	return toolscache.Indexers{Name: IndexFunc, HostName: HostIndexFunc, OverlapName: OverlapIndexFunc}
}

// OverlapIndexFunc is the toolscache.IndexFunc of OverlapName.
func OverlapIndexFunc(obj any) ([]string, error) {
	gw, ok := obj.(*v1.APIGateway)
	if !ok {
		return nil, nil
	}
	seen := make(map[string]bool, 3*len(gw.Spec.Routes))
	var out []string
	add := func(v string) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, r := range gw.Spec.Routes {
		host := string(r.Host)
		if !ownership.Indexable(host) {
			add(shortValue)
			continue
		}
		add(hostValue(host))
		for _, d := range ownership.Domains(host) {
			add(belowValue(d))
		}
	}
	return out, nil
}

// belowValue is OverlapName's value of a domain a host lies below;
// shortValue that of a host ownership does not index.
func belowValue(domain string) string { return "b" + domain }

const shortValue = "s"

// HostIndexFunc is the toolscache.IndexFunc of HostName: for each distinct
// host of the gateway, hostValue and familyValue with its namespace.
func HostIndexFunc(obj any) ([]string, error) {
	gw, ok := obj.(*v1.APIGateway)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, v := range hostValues(gw) {
		out = append(out, v+"\x00"+gw.Namespace)
	}
	return out, nil
}

// hostValues are gw's distinct hostValue and familyValue entries.
func hostValues(gw *v1.APIGateway) []string {
	seen := make(map[string]bool, 2*len(gw.Spec.Routes))
	var out []string
	for _, r := range gw.Spec.Routes {
		for _, v := range []string{hostValue(string(r.Host)), familyValue(validation.HostFamily(string(r.Host)))} {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}

func hostValue(host string) string     { return "h" + host }
func familyValue(family string) string { return "f" + family }

// Index adds Name to the APIGateway informer of c (once: a second call,
// from the webhooks' or the reconciler's setup, reuses it) and returns a
// Finder that reads it. A route competes with the gateways of every
// namespace the cache sees: the whole cluster, or the watched namespaces
// in namespaced mode (see controller.CacheOptions).
//
// Why the informer's own index rather than a controller-runtime field index
// read through the client: a cached List with a field selector parses the
// selector, looks up two indexes and copies the result through reflection,
// which was the validating webhook's largest cost under load; this is one
// map read per key.
//
// In namespaced mode the index is a mirror of the watched namespaces'
// informers (package mirror), which the Finder reads once it has synced.
func Index(ctx context.Context, c cache.Cache) (Finder, error) {
	informer, err := c.GetInformer(ctx, &v1.APIGateway{})
	if err != nil {
		return nil, fmt.Errorf("getting the APIGateway informer: %w", err)
	}
	registry.Lock()
	defer registry.Unlock()
	if f, found := registry.finders[c]; found {
		return f, nil
	}
	indexer, synced, err := mirror.Indexer(informer, Indexers())
	if err != nil {
		return nil, fmt.Errorf("indexing APIGateways by route and host: %w", err)
	}
	counts := &namespaceCounts{m: map[string]map[string]int{}}
	if _, err := informer.AddEventHandler(counts); err != nil {
		return nil, fmt.Errorf("counting APIGateways by host and namespace: %w", err)
	}
	f := indexFinder{indexer: indexer, counts: counts, synced: synced}
	registry.finders[c] = f
	return f, nil
}

// registry holds the Finder of each cache, so the webhooks and the
// reconciler, which both call Index, share one.
var registry = struct {
	sync.Mutex
	finders map[cache.Cache]indexFinder
}{finders: map[cache.Cache]indexFinder{}}

// errNotSynced is the Finder's answer while its index, a mirror, has not
// synced: the reconciler retries, the webhook's failure policy decides.
var errNotSynced = errors.New("the APIGateways of the watched namespaces are not indexed yet")

// NewFinder is the Finder over indexer, which must hold the indexes Name
// and HostName (a test's toolscache.NewIndexer with IndexFunc and
// HostIndexFunc). It finds a host's namespaces by listing the indexer,
// which suits a test's few gateways; Index's Finder keeps them counted.
func NewFinder(indexer toolscache.Indexer) Finder { return indexFinder{indexer: indexer} }

// NewStaticFinder is NewFinder over an indexer that no longer changes: it
// counts the host namespaces once, as Index's Finder keeps them counted,
// so that a test or benchmark of many gateways pays what the operator
// pays, not a listing of every gateway per lookup.
func NewStaticFinder(indexer toolscache.Indexer) Finder {
	return indexFinder{indexer: indexer, counts: countNamespaces(indexer)}
}

// countNamespaces counts the host namespaces of indexer's gateways now.
func countNamespaces(indexer toolscache.Indexer) *namespaceCounts {
	c := &namespaceCounts{m: map[string]map[string]int{}}
	for _, obj := range indexer.List() {
		c.OnAdd(obj, false)
	}
	return c
}

// indexFinder is the Finder over an indexer holding Name and HostName.
type indexFinder struct {
	indexer toolscache.Indexer
	counts  *namespaceCounts // nil: list the indexer
	// synced, when not nil, is closed once the indexer, a mirror, holds
	// the gateways the cache held when it synced (mirror.Indexer).
	synced <-chan struct{}
}

// await waits until f's indexer has synced, or ctx is done.
func (f indexFinder) await(ctx context.Context) error {
	if f.synced == nil {
		return nil
	}
	select {
	case <-f.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errNotSynced, context.Cause(ctx))
	}
}

// Serving implements Finder.
func (f indexFinder) Serving(ctx context.Context, key string) ([]*v1.APIGateway, error) {
	return f.byIndex(ctx, Name, key)
}

// HostNamespaces implements Finder.
func (f indexFinder) HostNamespaces(host string) []string { return f.namespaces(hostValue(host)) }

// FamilyNamespaces implements Finder.
func (f indexFinder) FamilyNamespaces(family string) []string {
	return f.namespaces(familyValue(family))
}

// Overlapping implements Finder: the gateways on host's Ancestors (their
// hosts cover it), those below its domain (it covers theirs) and those
// on a host ownership does not index, filtered; for such a host itself,
// every gateway, filtered.
func (f indexFinder) Overlapping(host string) ([]*v1.APIGateway, error) {
	if !mirror.Synced(f.synced) {
		return nil, errNotSynced
	}
	var candidates []any
	if ownership.Indexable(host) {
		for _, v := range append(ancestorValues(host), belowValue(strings.TrimPrefix(host, "*.")), shortValue) {
			objs, err := f.indexer.ByIndex(OverlapName, v)
			if err != nil {
				return nil, err
			}
			candidates = append(candidates, objs...)
		}
	} else {
		candidates = f.indexer.List()
	}
	seen := make(map[*v1.APIGateway]bool, len(candidates))
	var out []*v1.APIGateway
	for _, o := range candidates {
		gw, ok := o.(*v1.APIGateway)
		if !ok || seen[gw] {
			continue
		}
		seen[gw] = true
		if slices.ContainsFunc(gw.Spec.Routes, func(r v1.Route) bool { return validation.Overlap(host, string(r.Host)) }) {
			out = append(out, gw)
		}
	}
	return out, nil
}

// ancestorValues are the OverlapName values of the hosts that cover host
// (ownership.Ancestors).
func ancestorValues(host string) []string {
	ancestors := ownership.Ancestors(host)
	out := make([]string, len(ancestors))
	for i, a := range ancestors {
		out[i] = hostValue(a)
	}
	return out
}

// OnHost implements Finder.
func (f indexFinder) OnHost(ctx context.Context, namespace, host string) ([]*v1.APIGateway, error) {
	return f.byIndex(ctx, HostName, hostValue(host)+"\x00"+namespace)
}

// InFamily implements Finder.
func (f indexFinder) InFamily(ctx context.Context, namespace, family string) ([]*v1.APIGateway, error) {
	return f.byIndex(ctx, HostName, familyValue(family)+"\x00"+namespace)
}

func (f indexFinder) namespaces(value string) []string {
	if f.counts != nil {
		return f.counts.namespaces(value)
	}
	return countNamespaces(f.indexer).namespaces(value)
}

func (f indexFinder) byIndex(ctx context.Context, index, value string) ([]*v1.APIGateway, error) {
	if err := f.await(ctx); err != nil {
		return nil, err
	}
	objs, err := f.indexer.ByIndex(index, value)
	if err != nil {
		return nil, err
	}
	gws := make([]*v1.APIGateway, 0, len(objs))
	for _, o := range objs {
		gw, ok := o.(*v1.APIGateway)
		if !ok {
			return nil, errors.New("the APIGateway index holds another kind of object")
		}
		gws = append(gws, gw)
	}
	return gws, nil
}

// namespaceCounts counts, for each hostValue and familyValue, the gateways
// of each namespace that have it: kept by the informer's events, so that
// the namespaces on a host are found without visiting the host's
// gateways, however many one namespace has there.
type namespaceCounts struct {
	mu sync.RWMutex
	m  map[string]map[string]int
}

var _ toolscache.ResourceEventHandler = &namespaceCounts{}

// OnAdd implements toolscache.ResourceEventHandler.
func (c *namespaceCounts) OnAdd(obj any, _ bool) { c.apply(obj, 1) }

// OnUpdate implements toolscache.ResourceEventHandler.
func (c *namespaceCounts) OnUpdate(old, obj any) {
	c.apply(old, -1)
	c.apply(obj, 1)
}

// OnDelete implements toolscache.ResourceEventHandler.
func (c *namespaceCounts) OnDelete(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	c.apply(obj, -1)
}

func (c *namespaceCounts) apply(obj any, delta int) {
	gw, ok := obj.(*v1.APIGateway)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range hostValues(gw) {
		byNS := c.m[v]
		if byNS == nil {
			byNS = map[string]int{}
			c.m[v] = byNS
		}
		if byNS[gw.Namespace] += delta; byNS[gw.Namespace] <= 0 {
			delete(byNS, gw.Namespace)
		}
		if len(byNS) == 0 {
			delete(c.m, v)
		}
	}
}

func (c *namespaceCounts) namespaces(value string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.m[value]))
	for ns := range c.m[value] {
		out = append(out, ns)
	}
	return out
}
