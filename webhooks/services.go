package webhooks

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"example.com/apigateway-operator/mirror"
)

// ServicePorter tells which backend Services exist and which port numbers
// they have, for the port warning.
type ServicePorter interface {
	// Ports maps each of names that is a Service in namespace to its port
	// numbers. Names it does not know are left out; nil means it knows none.
	Ports(ctx context.Context, namespace string, names []string) map[string][]int32
}

// serviceCache is a Service informer of its own, of every namespace or of
// the watched ones, that keeps only each Service's name, namespace and
// port numbers.
//
// Why its own cache: the warning needs the ports of any Service a route may
// name, so a lookup per route against the API server would cost one round
// trip each (up to 100 per admission, inside a 5 s timeout), and the
// manager's main cache is restricted to the operator's own children. Full
// Services cached cluster-wide would cost a few KiB each (managed fields,
// annotations such as kubectl's last-applied configuration, selectors,
// status); the transform below keeps a few hundred bytes each
// (cachedService), so 10,000 Services are a few MiB, and a lookup is a map
// read.
type serviceCache struct {
	cache    cache.Cache
	informer cache.Informer
	// store is the informer's store, or a mirror of the watched
	// namespaces' (package mirror): a lookup of a Service that does not
	// exist, the usual case while a gateway is being set up, is a map miss
	// rather than a NotFound error built and thrown away.
	store toolscache.Store
	// synced is the mirror's (mirror.Indexer): nil for the informer's own
	// store.
	synced <-chan struct{}
}

var _ ServicePorter = &serviceCache{}

// newServiceCache builds the cache, of namespaces only when there are
// some; the manager must run it (mgr.Add).
func newServiceCache(mgr manager.Manager, namespaces []string) (*serviceCache, error) {
	opts := cache.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Service{}: {Transform: slimService},
		},
		// A read must never start (and wait for) an informer of some
		// other kind: this cache serves Services only.
		ReaderFailOnMissingInformer: true,
		DefaultNamespaces:           mirror.Namespaces(namespaces),
	}
	c, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("building the Service cache: %w", err)
	}
	// Registered now, so it starts with the cache rather than on the first
	// admission request.
	informer, err := c.GetInformer(context.Background(), &corev1.Service{})
	if err != nil {
		return nil, fmt.Errorf("registering the Service informer: %w", err)
	}
	store, synced, err := mirror.Indexer(informer, nil)
	if err != nil {
		return nil, fmt.Errorf("reading the Service informer: %w", err)
	}
	return &serviceCache{cache: c, informer: informer, store: store, synced: synced}, nil
}

// Ports reads the cache. Until the informer has synced it answers nil, so
// no admission request ever waits for a cluster-wide list; the port
// warning is advice and may be skipped.
func (s *serviceCache) Ports(_ context.Context, namespace string, names []string) map[string][]int32 {
	if !s.informer.HasSynced() || !mirror.Synced(s.synced) {
		return nil
	}
	var ports map[string][]int32
	for _, name := range names {
		if _, done := ports[name]; done {
			continue
		}
		obj, exists, err := s.store.GetByKey(namespace + "/" + name)
		svc, ok := obj.(*cachedService)
		if err != nil || !exists || !ok {
			continue // not found, or unknown: no warning either way
		}
		if ports == nil {
			ports = map[string][]int32{}
		}
		ports[name] = svc.ports
	}
	return ports
}

// cachedService is what the cache keeps of a Service: what the informer
// keys and tracks it by, and its port numbers. A *corev1.Service with all
// else dropped would still be 600 bytes, most of them the zero fields of
// its spec and status, and a ServicePort per port; this is a third of
// that, for every Service in the cluster.
type cachedService struct {
	metav1.ObjectMeta
	ports []int32
}

// GetObjectKind implements runtime.Object; nothing reads the kind of the
// objects in this store.
func (s *cachedService) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (s *cachedService) DeepCopyObject() runtime.Object {
	c := &cachedService{ports: slices.Clone(s.ports)}
	s.DeepCopyInto(&c.ObjectMeta)
	return c
}

// slimService is the cache's transform: it replaces each Service with a
// cachedService. It is idempotent, as client-go requires, and passes
// anything else through.
func slimService(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	slim := &cachedService{
		ObjectMeta: metav1.ObjectMeta{
			Name:            svc.Name,
			Namespace:       svc.Namespace,
			UID:             svc.UID,
			ResourceVersion: svc.ResourceVersion,
		},
		ports: make([]int32, len(svc.Spec.Ports)),
	}
	for i, p := range svc.Spec.Ports {
		slim.ports[i] = p.Port
	}
	return slim, nil
}
