// Package services is the operator's one cache of the tenants' Services
// (of every namespace, or of the watched ones), as two readers need them:
// the reconciler pools each gateway's connections to its backends'
// ClusterIPs (Cache.Address), and the validating webhook warns of a route
// to a port its Service lacks (Cache.Ports). The manager's cache holds
// only the operator's own Services, so these have a cache of their own,
// one per manager (For), in which each Service is a Service of this
// package: its key, its address and its ports. Before, each reader had a
// cache of its own, and every Service of the cluster was held twice.
package services

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"example.com/apigateway-operator/mirror"
)

// Service is what the cache keeps of a Service: what the informer keys
// and tracks it by (name, namespace, UID and resourceVersion of its
// metadata), its address and its ports. A *corev1.Service with all else
// dropped would still be some 600 bytes, most of them the zero fields of
// its spec and status and 80 bytes per port.
type Service struct {
	metav1.ObjectMeta
	// Address is the ClusterIP a gateway pools connections to; not valid
	// when the Service has none: headless ("None"), ExternalName (a name,
	// not an address) or none allocated.
	Address netip.Addr
	Ports   []Port
}

// Port is one port of a Service.
type Port struct {
	// Name picks the port of the same name in the Service's
	// EndpointSlices, whose number is the targetPort resolved (package
	// endpoints).
	Name   string
	Number int32
	// TCP is the protocol TCP (the default); a ClusterIP refuses a TCP
	// connection to a port it has for another protocol only.
	TCP bool
}

// GetObjectKind implements runtime.Object; nothing reads the kind of the
// objects in this cache.
func (s *Service) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (s *Service) DeepCopyObject() runtime.Object {
	c := &Service{Address: s.Address, Ports: slices.Clone(s.Ports)}
	s.DeepCopyInto(&c.ObjectMeta)
	return c
}

// Slim is the cache's transform: it replaces each *corev1.Service with a
// *Service. It is idempotent, as client-go requires, and passes anything
// else through.
func Slim(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	slim := &Service{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, UID: svc.UID, ResourceVersion: svc.ResourceVersion},
		Address:    address(svc),
		Ports:      make([]Port, len(svc.Spec.Ports)),
	}
	for i, p := range svc.Spec.Ports {
		slim.Ports[i] = Port{Name: p.Name, Number: p.Port, TCP: p.Protocol == "" || p.Protocol == corev1.ProtocolTCP}
	}
	return slim, nil
}

// address is svc's ClusterIP, unless it has none: a gateway resolves the
// name of such a Service per request.
func address(svc *corev1.Service) netip.Addr {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return netip.Addr{}
	}
	addr, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || addr.Zone() != "" {
		return netip.Addr{}
	}
	return addr
}

// Cache is the cache of Services of one manager.
type Cache struct {
	informer cache.Informer
	// store is the informer's store, or a mirror of the watched
	// namespaces' (package mirror): a lookup of a Service that does not
	// exist, the usual case while a gateway is being set up, is a map miss
	// rather than a NotFound error built and thrown away.
	store toolscache.Store
	// synced is the mirror's (mirror.Indexer): nil for the informer's own
	// store.
	synced     <-chan struct{}
	namespaces []string
	// watchers are told of each change once store holds it (Watch).
	watchers *watchers
}

// registry holds the Cache of each manager cache, so the webhooks and the
// reconciler (whose manager is the webhooks' behind a fence, package
// lease) share one.
var registry = struct {
	sync.Mutex
	caches map[cache.Cache]*Cache
}{caches: map[cache.Cache]*Cache{}}

// For returns mgr's Cache, built and added to mgr on the first call, of
// namespaces only when there are some. Every call must name the same
// namespaces.
func For(mgr manager.Manager, namespaces []string) (*Cache, error) {
	registry.Lock()
	defer registry.Unlock()
	if c, found := registry.caches[mgr.GetCache()]; found {
		if !slices.Equal(c.namespaces, namespaces) {
			return nil, fmt.Errorf("the Service cache watches %q, not %q", c.namespaces, namespaces)
		}
		return c, nil
	}
	c, err := build(mgr, namespaces)
	if err != nil {
		return nil, err
	}
	registry.caches[mgr.GetCache()] = c
	return c, nil
}

// build builds the cache, registers its informer so that it starts with
// the manager, and adds it to mgr.
func build(mgr manager.Manager, namespaces []string) (*Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		ByObject:   map[client.Object]cache.ByObject{&corev1.Service{}: {Transform: Slim}},
		// A read must never start (and wait for) an informer of some
		// other kind: this cache serves Services only.
		ReaderFailOnMissingInformer: true,
		DefaultNamespaces:           mirror.Namespaces(namespaces),
	})
	if err != nil {
		return nil, fmt.Errorf("building the Service cache: %w", err)
	}
	informer, err := c.GetInformer(context.Background(), &corev1.Service{}, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("registering the Service informer: %w", err)
	}
	w := &watchers{}
	store, synced, err := mirror.IndexerThen(informer, nil, w)
	if err != nil {
		return nil, fmt.Errorf("reading the Service informer: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the Service cache to the manager: %w", err)
	}
	return &Cache{informer: informer, store: store, synced: synced, namespaces: slices.Clone(namespaces), watchers: w}, nil
}

// Synced reports whether the cache holds every Service it watches.
func (c *Cache) Synced() bool { return c.informer.HasSynced() && mirror.Synced(c.synced) }

// get is the Service namespace/name, or nil.
func (c *Cache) get(namespace, name string) *Service {
	obj, exists, err := c.store.GetByKey(namespace + "/" + name)
	svc, ok := obj.(*Service)
	if err != nil || !exists || !ok {
		return nil
	}
	return svc
}

// Address is the address a gateway pools connections to for port of the
// Service namespace/name (render.ServiceAddresses): its ClusterIP, when
// it exists, has one, and has port for TCP (a ClusterIP refuses any other
// port, so a backend on one keeps its name, and fails as it did before
// pools, or reaches whatever the name resolves to).
func (c *Cache) Address(namespace, name string, port int32) (netip.Addr, bool) {
	svc := c.get(namespace, name)
	if svc == nil || !svc.Address.IsValid() || !svc.hasTCP(port) {
		return netip.Addr{}, false
	}
	return svc.Address, true
}

// PortName is the name of TCP port port of the Service namespace/name,
// which its EndpointSlices' ports carry, and false when the cache holds
// no such Service or port.
func (c *Cache) PortName(namespace, name string, port int32) (string, bool) {
	svc := c.get(namespace, name)
	if svc == nil {
		return "", false
	}
	i := slices.IndexFunc(svc.Ports, func(p Port) bool { return p.Number == port && p.TCP })
	if i < 0 {
		return "", false
	}
	return svc.Ports[i].Name, true
}

// hasTCP reports whether the Service has port port for TCP.
func (svc *Service) hasTCP(port int32) bool {
	return slices.ContainsFunc(svc.Ports, func(p Port) bool { return p.Number == port && p.TCP })
}

// Ports maps each of names that is a Service in namespace to its port
// numbers, for the port warning. Until the cache has synced it answers
// nil, so no admission request ever waits for a cluster-wide list; the
// warning is advice and may be skipped.
func (c *Cache) Ports(_ context.Context, namespace string, names []string) map[string][]int32 {
	if !c.Synced() {
		return nil
	}
	var ports map[string][]int32
	for _, name := range names {
		if _, done := ports[name]; done {
			continue
		}
		svc := c.get(namespace, name)
		if svc == nil {
			continue // not found: no warning either way
		}
		if ports == nil {
			ports = map[string][]int32{}
		}
		numbers := make([]int32, len(svc.Ports))
		for i, p := range svc.Ports {
			numbers[i] = p.Number
		}
		ports[name] = numbers
	}
	return ports
}

// Watch is a controller's source of Service changes: each Service that
// appears or goes, and each that changes its address or ports (Changed),
// as the requests requests maps it to, once the cache holds the change.
// It syncs with the cache.
func (c *Cache) Watch(requests func(context.Context, *Service) []reconcile.Request) source.SyncingSource {
	return watch{c: c, requests: requests}
}

type watch struct {
	c        *Cache
	requests func(context.Context, *Service) []reconcile.Request
}

// Start implements source.Source: the queue gets the watch's requests
// until ctx ends.
func (w watch) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	w.c.watchers.add(ctx, func(old, svc *Service) {
		if svc == nil {
			svc = old
		}
		for _, r := range w.requests(ctx, svc) {
			queue.Add(r)
		}
	})
	return nil
}

// WaitForSync implements source.SyncingSource.
func (w watch) WaitForSync(ctx context.Context) error {
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return w.c.Synced(), nil
	})
}

// String names the source in the controller's logs.
func (w watch) String() string { return "services.Watch" }

// watchers tell each watcher of a change: old and new for an update that
// Changed, old alone for a Service gone, new alone for one added. It is the informer's handler, or
// its mirror's (mirror.IndexerThen).
type watchers struct {
	mu   sync.Mutex
	list map[int]func(old, new *Service)
	next int
}

func (ws *watchers) add(ctx context.Context, f func(old, new *Service)) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.list == nil {
		ws.list = map[int]func(old, new *Service){}
	}
	id := ws.next
	ws.next++
	ws.list[id] = f
	context.AfterFunc(ctx, func() {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		delete(ws.list, id)
	})
}

func (ws *watchers) tell(old, svc *Service) {
	ws.mu.Lock()
	fs := make([]func(old, new *Service), 0, len(ws.list))
	for _, f := range ws.list {
		fs = append(fs, f)
	}
	ws.mu.Unlock()
	for _, f := range fs {
		f(old, svc)
	}
}

// OnAdd implements toolscache.ResourceEventHandler.
func (ws *watchers) OnAdd(obj any, _ bool) {
	if svc, ok := obj.(*Service); ok {
		ws.tell(nil, svc)
	}
}

// OnUpdate implements toolscache.ResourceEventHandler.
func (ws *watchers) OnUpdate(oldObj, obj any) {
	old, okOld := oldObj.(*Service)
	svc, ok := obj.(*Service)
	if okOld && ok && Changed(old, svc) {
		ws.tell(old, svc)
	}
}

// OnDelete implements toolscache.ResourceEventHandler.
func (ws *watchers) OnDelete(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if svc, ok := obj.(*Service); ok {
		ws.tell(svc, nil)
	}
}

// Changed reports whether what the readers make of a Service changed
// between old and svc: its address or its ports.
func Changed(old, svc *Service) bool {
	return old.Address != svc.Address || !slices.Equal(old.Ports, svc.Ports)
}
