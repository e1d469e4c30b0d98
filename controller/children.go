package controller

import (
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/render"
)

// ChildOptions are the operator's settings that shape a gateway's
// children; Options carries them for the reconciler.
type ChildOptions struct {
	// DefaultImage is the Deployment's image when spec.image is empty.
	DefaultImage string
	// Resolvers are the DNS servers nginx resolves backends with; empty
	// means the cluster DNS from the pod's /etc/resolv.conf.
	Resolvers []string
	// ClusterDomain is the Services' DNS suffix; empty means cluster.local.
	ClusterDomain string
	// TrustedProxies are the front proxies (IP addresses or CIDRs, such as
	// the ingress controller's pods) whose X-Forwarded-For the gateway
	// believes. Empty: the backend sees the connecting address in
	// X-Forwarded-For and X-Real-IP, and the client's header is dropped.
	TrustedProxies []string
	// ReloaderImage is the operator's image, whose binary runs nginx in
	// the gateway pods (package reloader).
	ReloaderImage string
	// StatusFrom, when set, is the namespace whose pods (the operator's)
	// may reach the gateway pods' status port: each gateway then gets a
	// NetworkPolicy (desiredNetworkPolicy). Empty: none.
	StatusFrom string
	// MetricsFrom, when set with StatusFrom, is the namespace whose pods
	// (Prometheus's) may reach the gateway pods' metrics port through that
	// NetworkPolicy. Empty: the policy keeps the port closed.
	MetricsFrom string
	// NoDisruptionBudget turns off the PodDisruptionBudget of the
	// gateways of two replicas or more (desiredDisruptionBudget), which
	// the operator builds by default: the zero options build what the
	// operator does.
	NoDisruptionBudget bool
	// ServiceAddresses, when set, gives the backend Services' ClusterIPs,
	// to which the gateway pools connections (render.Options). The
	// reconciler sets it from its cache; nil renders every backend by
	// name, as the offline commands do.
	ServiceAddresses render.ServiceAddresses
	// ServiceEndpoints, when set, gives the backend Services' ready
	// endpoints, to which routes with retries are proxied, and which
	// Services have none (render.Options). The reconciler sets it from
	// its cache; nil renders as without endpoints.
	ServiceEndpoints render.ServiceEndpoints
}

// renderOptions are the options the renderer reads.
func (o ChildOptions) renderOptions() render.Options {
	return render.Options{Resolvers: o.Resolvers, ClusterDomain: o.ClusterDomain, TrustedProxies: o.TrustedProxies,
		ServiceAddresses: o.ServiceAddresses, ServiceEndpoints: o.ServiceEndpoints}
}

// Desired are the children the operator applies for one gateway.
type Desired struct {
	// ConfigHash identifies the configuration in ConfigMap (configHash);
	// empty when there is none.
	ConfigHash string
	ConfigMap  *corev1ac.ConfigMapApplyConfiguration
	Deployment *appsv1ac.DeploymentApplyConfiguration
	Service    *corev1ac.ServiceApplyConfiguration
	// Ingress is nil for a gateway without routes, or exposed through
	// HTTPRoutes: the reconciler then deletes the gateway's Ingress.
	Ingress *networkingv1ac.IngressApplyConfiguration
	// HTTPRoutes, one per route host, are the gateway's with exposure type
	// HTTPRoute (desiredHTTPRoutes); the reconciler deletes every other
	// HTTPRoute the gateway controls.
	HTTPRoutes []*gatewayv1ac.HTTPRouteApplyConfiguration
	// NetworkPolicy is nil unless ChildOptions.StatusFrom is set.
	NetworkPolicy *networkingv1ac.NetworkPolicyApplyConfiguration
	// DisruptionBudget is nil for a gateway of fewer than two replicas,
	// or with ChildOptions.NoDisruptionBudget: the reconciler then
	// deletes the gateway's.
	DisruptionBudget *policyv1ac.PodDisruptionBudgetApplyConfiguration
}

// Children builds gw's children exactly as the reconciler applies them;
// the reconciler calls it, and so does the render command, so a preview
// cannot differ from what the operator writes. It is pure: no client, no
// I/O, gw left unchanged.
//
// The error is the renderer's refusal of gw's routes (or of
// opts.Resolvers). ConfigMap and Deployment are then nil, since there is
// no configuration to serve, while Service, Ingress and HTTPRoutes, which
// do not depend on it, are still built: the reconciler applies them
// regardless.
//
// A gateway without routes has no Ingress (nor HTTPRoutes): the API server refuses one
// with neither rules nor a default backend, and a default backend would
// take every request of the ingress class. The API requires a route, so
// only the reconciler builds such a gateway, when other gateways win
// every route of this one (servedGateway); its pods and Service stay, to
// take the routes back when those gateways let them go.
func Children(gw *v1.APIGateway, opts ChildOptions) (Desired, error) {
	d := Desired{
		Service:          desiredService(gw),
		NetworkPolicy:    desiredNetworkPolicy(gw, opts.StatusFrom, opts.MetricsFrom),
		DisruptionBudget: desiredDisruptionBudget(gw, opts.NoDisruptionBudget),
	}
	switch {
	case exposedByHTTPRoute(gw):
		d.HTTPRoutes = desiredHTTPRoutes(gw)
	case len(gw.Spec.Routes) > 0:
		d.Ingress = desiredIngress(gw)
	}
	config, err := render.Config(gw, opts.renderOptions())
	if err != nil {
		return d, err
	}
	d.ConfigHash = configHash(config)
	d.ConfigMap = desiredConfigMap(gw, config)
	d.Deployment = desiredDeployment(gw, deploymentParams{
		Image:         opts.DefaultImage,
		ConfigHash:    d.ConfigHash,
		ReloaderImage: opts.ReloaderImage,
	})
	return d, nil
}

// Objects are d's children in the order the reconciler applies them,
// nils left out.
func (d Desired) Objects() []runtime.ApplyConfiguration {
	var out []runtime.ApplyConfiguration
	if d.ConfigMap != nil {
		out = append(out, d.ConfigMap)
	}
	if d.Deployment != nil {
		out = append(out, d.Deployment)
	}
	out = append(out, d.Service)
	if d.Ingress != nil {
		out = append(out, d.Ingress)
	}
	for _, r := range d.HTTPRoutes {
		out = append(out, r)
	}
	if d.NetworkPolicy != nil {
		out = append(out, d.NetworkPolicy)
	}
	if d.DisruptionBudget != nil {
		out = append(out, d.DisruptionBudget)
	}
	return out
}
