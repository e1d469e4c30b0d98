package controller

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/endpoints"
	"example.com/apigateway-operator/render"
	"example.com/apigateway-operator/services"
)

// backendServices are the tenants' Services the gateways route to, as far
// as the renderer needs them: their ClusterIPs, to which the gateways pool
// connections (render.ServiceAddresses), and the ready endpoints of those
// that routes with retries name, or that have none
// (render.ServiceEndpoints). The Services are the cache the webhooks'
// port warning reads too (package services); the endpoints are the
// reconciler's alone (package endpoints).
type backendServices struct {
	cache     *services.Cache
	endpoints *endpoints.Cache
}

// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=list;watch

// newBackendServices indexes the gateways by the Services they route to,
// and by those their routes with retries name, and returns mgr's Service
// cache and an EndpointSlice cache of the referenced Services, which the
// manager runs.
func newBackendServices(mgr ctrl.Manager, namespaces []string) (*backendServices, error) {
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(context.Background(), &v1.APIGateway{}, backendServiceIndex, backendServiceNames); err != nil {
		return nil, fmt.Errorf("indexing APIGateways by backend Service: %w", err)
	}
	if err := indexer.IndexField(context.Background(), &v1.APIGateway{}, retryServiceIndex, retryServiceNames); err != nil {
		return nil, fmt.Errorf("indexing APIGateways by retried Service: %w", err)
	}
	c, err := services.For(mgr, namespaces)
	if err != nil {
		return nil, err
	}
	discovery, err := discoveryclient.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("building the EndpointSlice client: %w", err)
	}
	gateways := mgr.GetCache()
	e := endpoints.New(discovery, namespaces, func(k endpoints.ServiceKey) bool {
		return len(gatewaysOf(context.Background(), gateways, backendServiceIndex, k, 1)) > 0
	})
	if err := mgr.Add(e.Runnable(gateways.WaitForCacheSync)); err != nil {
		return nil, fmt.Errorf("adding the EndpointSlice cache to the manager: %w", err)
	}
	return &backendServices{cache: c, endpoints: e}, nil
}

// addresses reads the cache for the renderer; without a cache (a
// reconciler built by hand, in unit tests) every backend is by name.
func (s *backendServices) addresses() render.ServiceAddresses {
	if s == nil {
		return nil
	}
	return s.cache.Address
}

// ready reads the EndpointSlice cache for the renderer: the endpoints of
// a Service port are those of the slices' port of the same name (a
// Service port's targetPort may be a name, which only the slices
// resolve). Without a cache the renderer knows no endpoints.
func (s *backendServices) ready() render.ServiceEndpoints {
	if s == nil || s.endpoints == nil {
		return nil
	}
	return func(namespace, name string, port int32) ([]netip.AddrPort, bool) {
		portName, ok := s.cache.PortName(namespace, name, port)
		if !ok {
			return nil, false
		}
		return s.endpoints.Ready(endpoints.ServiceKey{Namespace: namespace, Name: name}, portName)
	}
}

// watch is the reconciler's source of Service changes: a Service that
// appears, goes or changes its address or ports re-renders the gateways
// of its namespace that route to it.
func (s *backendServices) watch(gateways client.Reader) source.Source {
	return s.cache.Watch(func(ctx context.Context, svc *services.Service) []reconcile.Request {
		return gatewaysOf(ctx, gateways, backendServiceIndex, endpoints.ServiceKey{Namespace: svc.Namespace, Name: svc.Name}, 0)
	})
}

// watchEndpoints is the reconciler's source of endpoint changes, which
// re-render only the gateways whose configuration they change, so that
// a rollout of a backend reloads only them: a new set of ready endpoints
// the gateways whose routes with retries name the Service (which write
// them), a Service gaining its first ready endpoint or losing its last
// every gateway routing to it (each writes the 503 of a Service without
// endpoints).
func (s *backendServices) watchEndpoints(gateways client.Reader) source.Source {
	return s.endpoints.Watch(func(ctx context.Context, k endpoints.ServiceKey, ch endpoints.Change) []reconcile.Request {
		return gatewaysOf(ctx, gateways, changeIndex[ch], k, 0)
	})
}

// changeIndex is the index of the gateways an endpoint change concerns.
var changeIndex = map[endpoints.Change]string{endpoints.Endpoints: retryServiceIndex, endpoints.Readiness: backendServiceIndex}

// gatewaysOf are the gateways of k's namespace that index (one of
// backendServiceIndex and retryServiceIndex) files under Service k, at
// most limit of them (0: all): the index's entries, not a list of the
// namespace's gateways per Service event (a namespace of 1,000 gateways
// creates 1,000 Services of its own).
func gatewaysOf(ctx context.Context, gateways client.Reader, index string, k endpoints.ServiceKey, limit int64) []reconcile.Request {
	var list v1.APIGatewayList
	opts := []client.ListOption{client.InNamespace(k.Namespace), client.MatchingFields{index: k.Name}, client.UnsafeDisableDeepCopy}
	if limit > 0 {
		opts = append(opts, client.Limit(limit))
	}
	if err := gateways.List(ctx, &list, opts...); err != nil {
		logf.FromContext(ctx).Error(err, "finding the APIGateways that route to a Service", "service", k.Name, "namespace", k.Namespace)
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

// retryServiceIndex is the cache's index of APIGateways by the names of
// the Services their routes with retries send requests to, whose ready
// endpoints their configuration holds.
const retryServiceIndex = "apigateway.example.com/retry-service"

// backendServiceNames is backendServiceIndex's function: the distinct
// names of gw's backends, backendService, additional ones, the rules',
// and the authentication Services of externalAuth (pooled alike).
func backendServiceNames(obj client.Object) []string {
	return serviceNames(obj, func(*v1.Route) bool { return true }, true)
}

// retryServiceNames is retryServiceIndex's function: the distinct names
// of the backends of gw's routes with retries; not their authentication
// Services, which are pooled to their ClusterIP.
func retryServiceNames(obj client.Object) []string {
	return serviceNames(obj, func(r *v1.Route) bool { return r.Retries != nil }, false)
}

// serviceNames are the distinct names of the backends of gw's routes
// that pick, and of their authentication Services with auth.
func serviceNames(obj client.Object, pick func(*v1.Route) bool, auth bool) []string {
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
	for i := range gw.Spec.Routes {
		r := &gw.Spec.Routes[i]
		if !pick(r) {
			continue
		}
		add(r.BackendService.Name)
		for _, b := range r.AdditionalBackends {
			add(b.Name)
		}
		for _, rule := range r.Rules {
			add(rule.BackendService.Name)
		}
		if a := r.ExternalAuth; a != nil && auth {
			add(a.Service)
		}
	}
	return out
}
