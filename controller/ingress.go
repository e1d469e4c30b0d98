package controller

import (
	"sort"

	networkingv1 "k8s.io/api/networking/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/render"
	"example.com/apigateway-operator/routepath"
)

// desiredIngress is the Ingress N: one rule per route host (sorted) with
// one path per route of that host, all to Service N. Each path is the one
// nginx matches (routepath.MatchPath) with the route's pathType, so
// gateways sharing a host split it by path at the Ingress controller
// instead of each claiming all of it. tls and ingressClassName come from
// the spec.
func desiredIngress(gw *v1.APIGateway) *networkingv1ac.IngressApplyConfiguration {
	spec := networkingv1ac.IngressSpec()
	if gw.Spec.IngressClassName != nil {
		spec.WithIngressClassName(*gw.Spec.IngressClassName)
	}
	byHost := ingressPaths(gw)
	hosts := make([]string, 0, len(byHost))
	for h := range byHost {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		value := networkingv1ac.HTTPIngressRuleValue()
		for _, p := range byHost[h] {
			value.WithPaths(networkingv1ac.HTTPIngressPath().
				WithPath(p.path).
				WithPathType(p.pathType).
				WithBackend(networkingv1ac.IngressBackend().
					WithService(networkingv1ac.IngressServiceBackend().
						WithName(gw.Name).
						WithPort(networkingv1ac.ServiceBackendPort().WithName("http")))))
		}
		spec.WithRules(networkingv1ac.IngressRule().WithHost(h).WithHTTP(value))
	}
	for _, t := range gw.Spec.TLS {
		spec.WithTLS(networkingv1ac.IngressTLS().
			WithHosts(t.Hosts...).
			WithSecretName(t.SecretName))
	}
	return networkingv1ac.Ingress(gw.Name, gw.Namespace).
		WithLabels(childLabels(gw)).
		WithOwnerReferences(ownerReference(gw)).
		WithSpec(spec)
}

// ingressPath is one path of an Ingress rule.
type ingressPath struct {
	path     string
	pathType networkingv1.PathType
	// route is the route nginx serves the path from, resolved: of routes
	// that match alike, the first in the renderer's order
	// (render.Gateway.Sorted), which the HTTPRoutes take its timeouts from.
	route render.Route
}

// pathKey is what makes an ingressPath distinct.
type pathKey struct {
	path     string
	pathType networkingv1.PathType
}

// ingressPaths are each host's distinct paths, sorted by path and then
// pathType. A route whose path MatchPath refuses, or whose pathType is
// unknown, is left out: the renderer refuses the whole gateway for it and
// the reconciler reports that, so the Ingress never names a path nginx
// would not serve.
func ingressPaths(gw *v1.APIGateway) map[string][]ingressPath {
	// In the renderer's order, so that the first route of a path is the
	// one nginx serves it from.
	routes := render.Resolve(gw, render.Options{}).Sorted()
	seen := map[string]map[pathKey]render.Route{}
	for _, r := range routes {
		pathType, ok := ingressPathType(r.PathType)
		if !ok {
			continue
		}
		path, err := routepath.MatchPath(string(r.Path), pathType == networkingv1.PathTypePrefix)
		if err != nil {
			continue
		}
		if seen[string(r.Host)] == nil {
			seen[string(r.Host)] = map[pathKey]render.Route{}
		}
		key := pathKey{path: path, pathType: pathType}
		if _, dup := seen[string(r.Host)][key]; !dup {
			seen[string(r.Host)][key] = r
		}
	}
	out := make(map[string][]ingressPath, len(seen))
	for host, set := range seen {
		paths := make([]ingressPath, 0, len(set))
		for k, route := range set {
			paths = append(paths, ingressPath{path: k.path, pathType: k.pathType, route: route})
		}
		sort.Slice(paths, func(i, j int) bool {
			if paths[i].path != paths[j].path {
				return paths[i].path < paths[j].path
			}
			return paths[i].pathType < paths[j].pathType
		})
		out[host] = paths
	}
	return out
}

// ingressPathType maps a route's pathType (empty is the schema's default,
// Prefix) to the Ingress one.
func ingressPathType(pt v1.PathType) (networkingv1.PathType, bool) {
	switch pt {
	case "", v1.PathTypePrefix:
		return networkingv1.PathTypePrefix, true
	case v1.PathTypeExact:
		return networkingv1.PathTypeExact, true
	}
	return "", false
}
