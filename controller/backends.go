package controller

import (
	"context"
	"fmt"
	"slices"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/render"
	"example.com/apigateway-operator/services"
)

// backendServices are the tenants' Services the gateways route to, as far
// as the renderer needs them: their ClusterIPs, to which the gateways pool
// connections (render.ServiceAddresses). They are the cache the webhooks'
// port warning reads too (package services).
type backendServices struct {
	cache *services.Cache
}

// newBackendServices indexes the gateways by the Services they route to
// and returns mgr's Service cache, which the manager runs.
func newBackendServices(mgr ctrl.Manager, namespaces []string) (*backendServices, error) {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1.APIGateway{}, backendServiceIndex, backendServiceNames); err != nil {
		return nil, fmt.Errorf("indexing APIGateways by backend Service: %w", err)
	}
	c, err := services.For(mgr, namespaces)
	if err != nil {
		return nil, err
	}
	return &backendServices{cache: c}, nil
}

// addresses reads the cache for the renderer; without a cache (a
// reconciler built by hand, in unit tests) every backend is by name.
func (s *backendServices) addresses() render.ServiceAddresses {
	if s == nil {
		return nil
	}
	return s.cache.Address
}

// watch is the reconciler's source of Service changes: a Service that
// appears, goes or changes its address or ports re-renders the gateways
// of its namespace that route to it.
func (s *backendServices) watch(gateways client.Reader) source.Source {
	return s.cache.Watch(func(ctx context.Context, svc *services.Service) []reconcile.Request {
		return gatewaysRoutingTo(ctx, gateways, svc)
	})
}

// gatewaysRoutingTo are the gateways of svc's namespace with a route to
// it, as backendService or an additional backend: backendServiceIndex's
// entries, not a list of the namespace's gateways per Service event (a
// namespace of 1,000 gateways creates 1,000 Services of its own).
func gatewaysRoutingTo(ctx context.Context, gateways client.Reader, svc *services.Service) []reconcile.Request {
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
// names of gw's backends, backendService, additional ones, the rules',
// and the authentication Services of externalAuth (pooled alike).
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
		if a := r.ExternalAuth; a != nil {
			add(a.Service)
		}
	}
	return out
}
