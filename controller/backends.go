package controller

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/mirror"
	"example.com/apigateway-operator/render"
)

// backendServices are the tenants' Services the gateways route to, as far
// as the renderer needs them: their ClusterIPs, to which the gateways pool
// connections (render.ServiceAddresses). The manager's cache holds only
// the operator's own Services (CacheOptions), so these have a cache of
// their own, of every Service in the watched namespaces, each slimmed to
// its name, namespace, type and ClusterIP.
type backendServices struct {
	cache cache.Cache
}

// newBackendServices builds the cache and registers its informer, so it
// starts with the manager (which runs it: mgr.Add).
func newBackendServices(mgr ctrl.Manager, namespaces []string) (*backendServices, error) {
	opts := cache.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		ByObject:   map[client.Object]cache.ByObject{&corev1.Service{}: {Transform: slimBackendService}},
		// A read must never start (and wait for) an informer of some
		// other kind: this cache serves Services only.
		ReaderFailOnMissingInformer: true,
		DefaultNamespaces:           mirror.Namespaces(namespaces),
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1.APIGateway{}, backendServiceIndex, backendServiceNames); err != nil {
		return nil, fmt.Errorf("indexing APIGateways by backend Service: %w", err)
	}
	c, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("building the backend Service cache: %w", err)
	}
	if _, err := c.GetInformer(context.Background(), &corev1.Service{}, cache.BlockUntilSynced(false)); err != nil {
		return nil, fmt.Errorf("watching backend Services: %w", err)
	}
	return &backendServices{cache: c}, mgr.Add(c)
}

// addresses reads the cache for the renderer; without a cache (a
// reconciler built by hand, in unit tests) every backend is by name.
func (s *backendServices) addresses(ctx context.Context) render.ServiceAddresses {
	if s == nil {
		return nil
	}
	return func(namespace, name string, port int32) (netip.Addr, bool) {
		svc := &corev1.Service{}
		if err := s.cache.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, svc); err != nil || !servesPort(svc, port) {
			return netip.Addr{}, false
		}
		return clusterIP(svc)
	}
}

// servesPort reports whether svc has port for TCP: a ClusterIP refuses
// any other port, so a backend on one keeps its name, and fails as it
// did before pools, or reaches whatever the name resolves to.
func servesPort(svc *corev1.Service, port int32) bool {
	for _, p := range svc.Spec.Ports {
		if p.Port == port && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP) {
			return true
		}
	}
	return false
}

// clusterIP is the address a gateway pools connections to for svc: its
// ClusterIP, unless it has none (headless: "None"; ExternalName: a name,
// not an address), in which case the gateway resolves its name per
// request.
func clusterIP(svc *corev1.Service) (netip.Addr, bool) {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return netip.Addr{}, false
	}
	addr, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || addr.Zone() != "" {
		return netip.Addr{}, false
	}
	return addr, true
}

// slimBackendService is the cache's transform: what the informer keys and
// tracks a Service by, its type, its ClusterIP and its ports. It is idempotent, as
// client-go requires.
func slimBackendService(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, UID: svc.UID, ResourceVersion: svc.ResourceVersion},
		Spec:       corev1.ServiceSpec{Type: svc.Spec.Type, ClusterIP: svc.Spec.ClusterIP, Ports: slimPorts(svc.Spec.Ports)},
	}, nil
}

// slimPorts are ports with only their number and protocol.
func slimPorts(ports []corev1.ServicePort) []corev1.ServicePort {
	slim := make([]corev1.ServicePort, 0, len(ports))
	for _, p := range ports {
		slim = append(slim, corev1.ServicePort{Port: p.Port, Protocol: p.Protocol})
	}
	return slim
}

// watch is the reconciler's source of Service changes: a Service that
// appears, goes or changes its address re-renders the gateways of its
// namespace that route to it.
func (s *backendServices) watch(gateways client.Reader) source.Source {
	return source.Kind(s.cache, &corev1.Service{},
		handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, svc *corev1.Service) []reconcile.Request {
			return gatewaysRoutingTo(ctx, gateways, svc)
		}),
		predicate.TypedFuncs[*corev1.Service]{
			UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Service]) bool {
				oldIP, oldOK := clusterIP(e.ObjectOld)
				newIP, newOK := clusterIP(e.ObjectNew)
				return oldIP != newIP || oldOK != newOK || !apiequality.Semantic.DeepEqual(e.ObjectOld.Spec.Ports, e.ObjectNew.Spec.Ports)
			},
		})
}

// gatewaysRoutingTo are the gateways of svc's namespace with a route to
// it, as backendService or an additional backend: backendServiceIndex's
// entries, not a list of the namespace's gateways per Service event (a
// namespace of 1,000 gateways creates 1,000 Services of its own).
func gatewaysRoutingTo(ctx context.Context, gateways client.Reader, svc *corev1.Service) []reconcile.Request {
	var list v1.APIGatewayList
	err := gateways.List(ctx, &list, client.InNamespace(svc.Namespace), client.MatchingFields{backendServiceIndex: svc.Name}, client.UnsafeDisableDeepCopy)
	if err != nil {
		logf.FromContext(ctx).Error(err, "finding the APIGateways that route to a Service", "service", svc.Name, "namespace", svc.Namespace)
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// backendServiceIndex is the cache's index of APIGateways by the names of
// the Services their routes send requests to.
const backendServiceIndex = "apigateway.example.com/backend-service"

// backendServiceNames is backendServiceIndex's function: the distinct
// names of gw's backends, backendService and additional ones.
func backendServiceNames(obj client.Object) []string {
	gw, ok := obj.(*v1.APIGateway)
	if !ok {
		return nil
	}
	var out []string
	add := func(name v1.ServiceName) {
		if name != "" && !slices.Contains(out, string(name)) {
			out = append(out, string(name))
		}
	}
	for _, r := range gw.Spec.Routes {
		add(r.BackendService.Name)
		for _, b := range r.AdditionalBackends {
			add(b.Name)
		}
		for _, rule := range r.Rules {
			add(rule.BackendService.Name)
		}
	}
	return out
}
