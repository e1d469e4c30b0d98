package controller

import (
	"sort"

	networkingv1 "k8s.io/api/networking/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	v1 "example.com/apigateway-operator/api/v1"
)

// desiredIngress is the Ingress N: one rule per route host (sorted), each
// sending every path to Service N, which routes by path itself; tls and
// ingressClassName come from the spec.
func desiredIngress(gw *v1.APIGateway) *networkingv1ac.IngressApplyConfiguration {
	spec := networkingv1ac.IngressSpec()
	if gw.Spec.IngressClassName != nil {
		spec.WithIngressClassName(*gw.Spec.IngressClassName)
	}
	for _, h := range routeHosts(gw) {
		spec.WithRules(networkingv1ac.IngressRule().
			WithHost(h).
			WithHTTP(networkingv1ac.HTTPIngressRuleValue().
				WithPaths(networkingv1ac.HTTPIngressPath().
					WithPath("/").
					WithPathType(networkingv1.PathTypePrefix).
					WithBackend(networkingv1ac.IngressBackend().
						WithService(networkingv1ac.IngressServiceBackend().
							WithName(gw.Name).
							WithPort(networkingv1ac.ServiceBackendPort().WithName("http")))))))
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

// routeHosts are gw's distinct route hosts, sorted.
func routeHosts(gw *v1.APIGateway) []string {
	seen := map[string]bool{}
	var hosts []string
	for _, r := range gw.Spec.Routes {
		if !seen[r.Host] {
			seen[r.Host] = true
			hosts = append(hosts, r.Host)
		}
	}
	sort.Strings(hosts)
	return hosts
}
