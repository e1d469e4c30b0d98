package endpoints

import (
	"context"
	"hash/maphash"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// ServiceKey names a Service.
type ServiceKey struct{ Namespace, Name string }

// Change is what an event changed of a Service's endpoints, which says
// whose configuration it changes.
type Change int

const (
	// Endpoints: the ready endpoints changed, not which ports have some:
	// only the routes with retries write them.
	Endpoints Change = iota + 1
	// Readiness: whether the Service has slices, or which of its ports
	// have a ready endpoint, changed: every route naming it writes that
	// (the 503 of a Service without endpoints).
	Readiness
)

// fetchTimeout bounds the LIST of a newly referenced Service's slices,
// which a render waits for.
const fetchTimeout = 5 * time.Second

// Cache holds the slices of the referenced Services.
type Cache struct {
	// Referenced says whether a gateway routes to the Service; the cache
	// keeps the slices of those only. It may block until the gateways'
	// cache has synced.
	referenced func(ServiceKey) bool
	// list reads a Service's slices from the API server (fetch).
	list func(ctx context.Context, k ServiceKey) ([]*Slice, error)

	mu sync.Mutex
	// slices are the slices held, by namespace and name.
	slices map[sliceKey]*Slice
	// services are the referenced Services the cache has slices of or
	// has looked up.
	services map[ServiceKey]*service
	// fetching counts the fetches in flight per namespace (knownObjects).
	fetching map[string]int
	// dropped holds a hash of each Service whose slices the cache has
	// dropped (unreferenced): only such a Service needs a fetch when it
	// becomes referenced; the slices of any other arrive by events. A
	// hash, 16 bytes a Service, as most of a cluster's Services are no
	// gateway's backend; a collision costs one needless fetch.
	dropped map[uint64]struct{}
	seed    maphash.Seed
	// watchers are told of each change (Watch).
	watchers []func(ServiceKey, Change)

	controllers []toolscache.Controller
}

// service is what the cache knows of one Service.
type service struct {
	// slices are few: the EndpointSlice controller puts up to 100
	// endpoints in one.
	slices []*Slice
	// known: the cache holds every slice of the Service, from its
	// initial list or a fetch, and keeps them by the events since.
	known bool
	// fetches in flight, and the slices deleted meanwhile, which a
	// fetch's older LIST must not bring back.
	fetches int
	gone    map[string]struct{}
}

// New is a cache that keeps the slices of the Services referenced says a
// gateway routes to, reading them with client, of namespaces (every
// namespace when there are none). Run it with Start.
func New(client discoveryclient.EndpointSlicesGetter, namespaces []string, referenced func(ServiceKey) bool) *Cache {
	c := &Cache{
		referenced: referenced,
		list: func(ctx context.Context, k ServiceKey) ([]*Slice, error) {
			l, err := client.EndpointSlices(k.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + k.Name})
			if err != nil {
				return nil, err
			}
			out := make([]*Slice, 0, len(l.Items))
			for i := range l.Items {
				s, _ := Slim(&l.Items[i])
				out = append(out, s.(*Slice))
			}
			return out, nil
		},
		slices:   map[sliceKey]*Slice{},
		services: map[ServiceKey]*service{},
		fetching: map[string]int{},
		dropped:  map[uint64]struct{}{},
		seed:     maphash.MakeSeed(),
	}
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		fifo := toolscache.NewDeltaFIFOWithOptions(toolscache.DeltaFIFOOptions{
			KeyFunction: key, KnownObjects: view{c: c, namespace: ns}, EmitDeltaTypeReplaced: true, Transformer: Slim,
		})
		c.controllers = append(c.controllers, toolscache.New(&toolscache.Config{
			Queue:             fifo,
			ListerWatcher:     listWatch(client, ns),
			ObjectType:        &discoveryv1.EndpointSlice{},
			ObjectDescription: "EndpointSlice",
			Process:           c.process,
		}))
	}
	return c
}

func listWatch(client discoveryclient.EndpointSlicesGetter, namespace string) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.EndpointSlices(namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.EndpointSlices(namespace).Watch(ctx, o)
		},
	}
}

// Synced reports whether each reflector's initial list is held.
func (c *Cache) Synced() bool {
	for _, ctl := range c.controllers {
		if !ctl.HasSynced() {
			return false
		}
	}
	return true
}

// Ready are the ready endpoints of port portName of the Service, and
// whether the cache knows them: false for a Service without slices (none
// yet, no selector, ExternalName) or one it could not read. A Service it
// does not hold yet (newly referenced) is read first, once.
func (c *Cache) Ready(k ServiceKey, portName string) ([]netip.AddrPort, bool) {
	if !c.fetch(k) {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.services[k]
	if s == nil || !s.known || len(s.slices) == 0 {
		return nil, false
	}
	return ready(s.slices, portName), true
}

// fetch makes the cache hold every slice of k, with a LIST of them
// unless it does already, and says whether it does.
func (c *Cache) fetch(k ServiceKey) bool {
	c.mu.Lock()
	s := c.services[k]
	if s == nil {
		if _, dropped := c.dropped[c.hash(k)]; !dropped {
			// No slice of it was ever dropped: it has none yet (or
			// none since the cache started), and events bring them.
			c.mu.Unlock()
			return true
		}
		s = &service{}
		c.services[k] = s
	}
	if s.known {
		c.mu.Unlock()
		return true
	}
	s.fetches++
	if s.gone == nil {
		s.gone = map[string]struct{}{}
	}
	c.fetching[k.Namespace]++
	c.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	listed, err := c.list(ctx, k)
	cancel()

	c.mu.Lock()
	defer c.mu.Unlock()
	s.fetches--
	if c.fetching[k.Namespace]--; c.fetching[k.Namespace] == 0 {
		delete(c.fetching, k.Namespace)
	}
	gone := s.gone
	if s.fetches == 0 {
		s.gone = nil
	}
	if err != nil || c.services[k] != s {
		return false // unreadable, or no longer referenced meanwhile
	}
	for _, sl := range listed {
		id, _ := key(sl)
		if _, deleted := gone[id]; deleted || sl.Service != k.Name {
			continue
		}
		if s.index(sl.Name) < 0 {
			// An event since the LIST holds a version at least as new
			// as it, or an older one whose successors the watch brings.
			c.hold(s, sl)
		}
	}
	s.known = true
	delete(c.dropped, c.hash(k))
	return true
}

// hash is k's key in dropped.
func (c *Cache) hash(k ServiceKey) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(k.Namespace)
	h.WriteByte('/')
	h.WriteString(k.Name)
	return h.Sum64()
}

// process is the DeltaFIFO's consumer: the newest state of a slice is
// held, dropped (deleted, or its Service no longer referenced) or
// ignored, and the watchers hear of what that changed.
func (c *Cache) process(obj any, initial bool) error {
	deltas, ok := obj.(toolscache.Deltas)
	if !ok || len(deltas) == 0 {
		return nil
	}
	d := deltas.Newest()
	id, err := key(d.Object)
	if tomb, ok := d.Object.(toolscache.DeletedFinalStateUnknown); ok {
		id, err = tomb.Key, nil
	}
	if err != nil {
		return nil
	}
	var sl *Slice
	if d.Type != toolscache.Deleted {
		sl, _ = d.Object.(*Slice)
	}
	// Asked before the lock: it reads the gateways' cache.
	referenced := sl != nil && sl.Service != "" && c.referenced(ServiceKey{sl.Namespace, sl.Service})

	c.mu.Lock()
	before := c.summaries(id, sl)
	c.apply(id, sl, d.Object, referenced, initial)
	changes := map[ServiceKey]Change{}
	for k, b := range before {
		if s := c.services[k]; s != nil && s.known && !initial {
			if ch := changeOf(b, summarize(s)); ch != 0 {
				changes[k] = ch
			}
		}
	}
	watchers := slices.Clone(c.watchers)
	c.mu.Unlock()
	for k, ch := range changes {
		for _, w := range watchers {
			w(k, ch)
		}
	}
	return nil
}

// summaries are the summaries of the Services whose slice id was or
// becomes sl, before the change, as a render read them: a Service the
// cache holds nothing of has no slices. The caller holds mu.
func (c *Cache) summaries(id string, sl *Slice) map[ServiceKey]summary {
	out := map[ServiceKey]summary{}
	add := func(k ServiceKey) {
		switch s := c.services[k]; {
		case s == nil:
			out[k] = summary{}
		case s.known:
			out[k] = summarize(s)
		}
	}
	if held := c.slices[splitKey(id)]; held != nil {
		add(ServiceKey{held.Namespace, held.Service})
	}
	if sl != nil {
		add(ServiceKey{sl.Namespace, sl.Service})
	}
	return out
}

// apply makes the cache hold sl as slice id, or not (nil: deleted, obj
// is the Deleted delta's), when it is of a referenced Service; one no
// longer referenced loses all its slices. The caller holds mu.
func (c *Cache) apply(id string, sl *Slice, obj any, referenced, initial bool) {
	if held := c.slices[splitKey(id)]; held != nil {
		delete(c.slices, splitKey(id))
		if s := c.services[ServiceKey{held.Namespace, held.Service}]; s != nil {
			if i := s.index(held.Name); i >= 0 {
				s.slices = slices.Delete(s.slices, i, i+1)
			}
		}
	}
	if sl == nil {
		// A fetch in flight must not bring a deleted slice back.
		ns, _, _ := strings.Cut(id, "/")
		if s := c.services[ServiceKey{ns, deletedService(obj)}]; s != nil && s.gone != nil {
			s.gone[id] = struct{}{}
		}
		return
	}
	k := ServiceKey{sl.Namespace, sl.Service}
	s := c.services[k]
	switch {
	case referenced && s == nil:
		// The initial list holds every slice; after it, a Service
		// whose slices were dropped before it was referenced needs a
		// fetch.
		_, dropped := c.dropped[c.hash(k)]
		s = &service{known: initial || !dropped}
		c.services[k] = s
	case !referenced && s != nil:
		// A reference later reads them all again.
		c.drop(k, s)
		return
	case !referenced:
		c.dropped[c.hash(k)] = struct{}{}
		return
	}
	c.hold(s, sl)
}

// hold holds sl, a slice of s that s does not hold. The caller holds mu.
func (c *Cache) hold(s *service, sl *Slice) {
	s.slices = append(s.slices, sl)
	c.slices[sliceKey{sl.Namespace, sl.Name}] = sl
}

// index is the index of slice name in s.slices, or -1.
func (s *service) index(name string) int {
	return slices.IndexFunc(s.slices, func(sl *Slice) bool { return sl.Name == name })
}

// drop forgets Service k. The caller holds mu.
func (c *Cache) drop(k ServiceKey, s *service) {
	c.dropped[c.hash(k)] = struct{}{}
	delete(c.services, k)
	for _, sl := range s.slices {
		delete(c.slices, sliceKey{sl.Namespace, sl.Name})
	}
}

// sliceKey is a slice's key in slices: its own strings, where the
// DeltaFIFO's namespace/name would be one more string per slice.
type sliceKey struct{ namespace, name string }

// splitKey is the sliceKey of a DeltaFIFO key.
func splitKey(id string) sliceKey {
	ns, name, _ := strings.Cut(id, "/")
	return sliceKey{ns, name}
}

// deletedService is the Service of a deleted slice as its Deleted delta
// carries it, for a slice the cache does not hold.
func deletedService(obj any) string {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if sl, ok := obj.(*Slice); ok {
		return sl.Service
	}
	return ""
}

// summary is what a render reads of a Service: whether it has slices, and
// the endpoints of each port name.
type summary struct {
	slices bool
	ports  map[string][]netip.AddrPort
}

func summarize(s *service) summary {
	sum := summary{slices: len(s.slices) > 0, ports: map[string][]netip.AddrPort{}}
	for _, sl := range s.slices {
		for _, p := range sl.Ports {
			if _, done := sum.ports[p.Name]; !done {
				e := ready(s.slices, p.Name)
				slices.SortFunc(e, func(a, b netip.AddrPort) int { return a.Compare(b) })
				sum.ports[p.Name] = slices.Compact(e)
			}
		}
	}
	return sum
}

// changeOf is what changed between two summaries of a Service.
func changeOf(before, after summary) Change {
	switch {
	case before.slices != after.slices || !sameReadyPorts(before, after):
		return Readiness
	case !maps.EqualFunc(before.ports, after.ports, slices.Equal[[]netip.AddrPort]):
		return Endpoints
	}
	return 0
}

// sameReadyPorts: the same port names have a ready endpoint.
func sameReadyPorts(a, b summary) bool {
	readyPorts := func(s summary) []string {
		var out []string
		for name, e := range s.ports {
			if len(e) > 0 {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(readyPorts(a), readyPorts(b))
}

// Sweep drops the Services no longer referenced, whose slices saw no
// event since (process drops the others).
func (c *Cache) Sweep() {
	c.mu.Lock()
	keys := slices.Collect(maps.Keys(c.services))
	c.mu.Unlock()
	for _, k := range keys {
		if c.referenced(k) {
			continue
		}
		c.mu.Lock()
		if s := c.services[k]; s != nil && s.fetches == 0 {
			c.drop(k, s)
		}
		c.mu.Unlock()
	}
}

// Len is the number of slices held (tests, metrics).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.slices)
}

// view is the cache as one reflector's DeltaFIFO knows it: the slices of
// its namespace (a re-list deletes the known slices it lacks, so each
// reflector must know only its own).
type view struct {
	c         *Cache
	namespace string
}

// ListKeys implements toolscache.KeyLister.
func (v view) ListKeys() []string {
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	out := make([]string, 0, len(v.c.slices))
	for k := range v.c.slices {
		if v.namespace == "" || k.namespace == v.namespace {
			out = append(out, k.namespace+"/"+k.name)
		}
	}
	return out
}

// GetByKey implements toolscache.KeyGetter. While a fetch of its
// namespace is in flight, a slice not held is said to exist, so that the
// DeltaFIFO passes on its deletion (it drops the deletion of an unknown
// object), which the fetch must hear of.
func (v view) GetByKey(id string) (any, bool, error) {
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	k := splitKey(id)
	if sl, ok := v.c.slices[k]; ok {
		return sl, true, nil
	}
	if v.c.fetching[k.namespace] > 0 {
		return &Slice{Namespace: k.namespace, Name: k.name}, true, nil
	}
	return nil, false, nil
}

// sweepEvery is how often the cache forgets the Services no gateway
// routes to any more (Sweep).
const sweepEvery = 5 * time.Minute

// Runnable runs the cache in a manager, once ready returns true (the
// gateways' cache has synced), and sweeps it.
func (c *Cache) Runnable(ready func(context.Context) bool) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		if !ready(ctx) {
			return ctx.Err()
		}
		for _, ctl := range c.controllers {
			go ctl.RunWithContext(ctx)
		}
		t := time.NewTicker(sweepEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				c.Sweep()
			}
		}
	})
}

// Watch is a controller's source of endpoint changes, each Service's as
// requests maps it. It syncs with the cache.
func (c *Cache) Watch(requests func(context.Context, ServiceKey, Change) []reconcile.Request) source.SyncingSource {
	return watchSource{c: c, requests: requests}
}

type watchSource struct {
	c        *Cache
	requests func(context.Context, ServiceKey, Change) []reconcile.Request
}

// Start implements source.Source.
func (w watchSource) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	w.c.watchers = append(w.c.watchers, func(k ServiceKey, ch Change) {
		if ctx.Err() != nil {
			return
		}
		for _, r := range w.requests(ctx, k, ch) {
			queue.Add(r)
		}
	})
	return nil
}

// WaitForSync implements source.SyncingSource.
func (w watchSource) WaitForSync(ctx context.Context) error {
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return w.c.Synced(), nil
	})
}

func (w watchSource) String() string { return "endpoints.Watch" }
