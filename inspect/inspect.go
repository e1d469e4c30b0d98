// Package inspect reports one gateway as `kubectl apigateway status` shows
// it: its conditions and claims, each child the operator built and how
// ready it is, each pod and the configuration its reloader serves, and
// the verdicts of the parent Gateways on its HTTPRoutes.
//
// Report is a pure function of what Read fetches, so the tests judge it
// from fixtures and through a real API server alike. It shows only what
// the gateway's own namespace holds: the conditions name a host's owner
// or a rival gateway exactly as the operator wrote them for this tenant,
// and nothing is read of other namespaces.
package inspect

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/reloader"
	"example.com/apigateway-operator/render"
)

// Inputs are what Read fetches for one gateway: its children as listed
// by controller.ChildSelector (Report keeps those the gateway controls),
// its pods, and what each pod's reloader answered.
type Inputs struct {
	Gateway         *v1.APIGateway
	ConfigMaps      []corev1.ConfigMap
	Deployments     []appsv1.Deployment
	Services        []corev1.Service
	Ingresses       []networkingv1.Ingress
	HTTPRoutes      []gatewayv1.HTTPRoute
	Budgets         []policyv1.PodDisruptionBudget
	NetworkPolicies []networkingv1.NetworkPolicy
	Pods            []corev1.Pod
	// Reports are the pods' reloader answers by pod name; a pod without
	// one has its reason in ReportErrors.
	Reports      map[string]reloader.Status
	ReportErrors map[string]string
}

// Report is one gateway's status.
type Report struct {
	Namespace          string      `json:"namespace"`
	Name               string      `json:"name"`
	Generation         int64       `json:"generation"`
	ObservedGeneration int64       `json:"observedGeneration"`
	Conditions         []Condition `json:"conditions"`
	// Configuration is the hash of the configuration in the gateway's
	// ConfigMap, which each pod should serve; empty without one.
	Configuration string          `json:"configuration,omitempty"`
	Children      []Child         `json:"children"`
	Pods          []Pod           `json:"pods"`
	Parents       []Parent        `json:"parents,omitempty"`
	Claims        []Claim         `json:"claims,omitempty"`
	Scopes        []v1.ScopeClaim `json:"scopes,omitempty"`
}

// Condition is one of the gateway's conditions.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Child is one object the operator built for the gateway.
type Child struct {
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
	// Detail says what makes it ready or not, in a few words.
	Detail string `json:"detail"`
}

// Pod is one gateway pod and what its reloader serves.
type Pod struct {
	Name     string `json:"name"`
	Phase    string `json:"phase"`
	Ready    bool   `json:"ready"`
	Restarts int32  `json:"restarts"`
	// Serving is the hash of the configuration nginx serves in the pod,
	// and Current whether it is the ConfigMap's.
	Serving string `json:"serving,omitempty"`
	Current bool   `json:"current"`
	// Refused is the newest configuration the pod's nginx did not take.
	Refused *reloader.Refusal `json:"refused,omitempty"`
	// Unread says why the pod's reloader could not be asked.
	Unread string `json:"unread,omitempty"`
}

// Parent is a parent Gateway's verdict on one of the gateway's HTTPRoutes.
type Parent struct {
	HTTPRoute string `json:"httpRoute"`
	// Gateway is the parent, namespace/name.
	Gateway    string      `json:"gateway"`
	Conditions []Condition `json:"conditions"`
}

// Claim is one of the gateway's routes with when it claimed it, and
// whether another gateway holds it (the Accepted condition says which,
// as far as the operator tells this tenant).
type Claim struct {
	Route string      `json:"route"`
	Since metav1.Time `json:"since"`
	Lost  bool        `json:"lost"`
}

// Build is the report of in.Gateway.
func Build(in Inputs) Report {
	gw := in.Gateway
	r := Report{
		Namespace: gw.Namespace, Name: gw.Name,
		Generation: gw.Generation, ObservedGeneration: gw.Status.ObservedGeneration,
		Conditions: conditions(gw.Status.Conditions),
		Children:   []Child{},
		Pods:       []Pod{},
	}
	if c := gw.Status.Claims; c != nil {
		for _, rc := range c.Routes {
			r.Claims = append(r.Claims, Claim{Route: rc.Route, Since: metav1.NewTime(rc.Since.Time), Lost: rc.Lost})
		}
		r.Scopes = c.Scopes
	}
	for i := range in.ConfigMaps {
		if cm := &in.ConfigMaps[i]; controlled(gw, cm.OwnerReferences) {
			r.Children = append(r.Children, configMapChild(cm))
			if tpl, ok := cm.Data[render.ConfigKey]; ok {
				r.Configuration = reloader.Hash([]byte(tpl))
			}
		}
	}
	r.Children = appendControlled(r.Children, gw, in.Deployments, deploymentChild)
	r.Children = appendControlled(r.Children, gw, in.Services, serviceChild)
	r.Children = appendControlled(r.Children, gw, in.Ingresses, ingressChild)
	r.Children = appendControlled(r.Children, gw, in.HTTPRoutes, httpRouteChild)
	r.Children = appendControlled(r.Children, gw, in.Budgets, budgetChild)
	r.Children = appendControlled(r.Children, gw, in.NetworkPolicies, networkPolicyChild)
	for i := range in.HTTPRoutes {
		if hr := &in.HTTPRoutes[i]; controlled(gw, hr.OwnerReferences) {
			r.Parents = append(r.Parents, parents(hr)...)
		}
	}
	for i := range in.Pods {
		r.Pods = append(r.Pods, pod(&in.Pods[i], r.Configuration, in))
	}
	slices.SortFunc(r.Pods, func(a, b Pod) int { return strings.Compare(a.Name, b.Name) })
	return r
}

// object is what appendControlled needs of a child.
type object interface {
	GetOwnerReferences() []metav1.OwnerReference
}

// appendControlled appends describe's Child for each of objs gw controls.
func appendControlled[T any, P interface {
	*T
	object
}](out []Child, gw *v1.APIGateway, objs []T, describe func(P) Child) []Child {
	for i := range objs {
		if o := P(&objs[i]); controlled(gw, o.GetOwnerReferences()) {
			out = append(out, describe(o))
		}
	}
	return out
}

// controlled reports whether refs make gw the object's controller: an
// object that only carries the gateway's labels is someone else's.
func controlled(gw *v1.APIGateway, refs []metav1.OwnerReference) bool {
	ref := metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: refs})
	return ref != nil && ref.UID == gw.UID && ref.Kind == "APIGateway"
}

func conditions(cs []metav1.Condition) []Condition {
	out := make([]Condition, 0, len(cs))
	for _, c := range cs {
		out = append(out, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

func configMapChild(cm *corev1.ConfigMap) Child {
	tpl, ok := cm.Data[render.ConfigKey]
	if !ok {
		return Child{Kind: "ConfigMap", Name: cm.Name, Detail: "no " + render.ConfigKey}
	}
	return Child{Kind: "ConfigMap", Name: cm.Name, Ready: true, Detail: "configuration " + short(reloader.Hash([]byte(tpl)))}
}

func deploymentChild(d *appsv1.Deployment) Child {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	rolled := s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want
	detail := fmt.Sprintf("%d/%d ready, %d updated", s.ReadyReplicas, want, s.UpdatedReplicas)
	if !rolled {
		detail += ", rolling out"
	}
	return Child{Kind: "Deployment", Name: d.Name, Ready: rolled && s.ReadyReplicas == want, Detail: detail}
}

func serviceChild(s *corev1.Service) Child {
	return Child{Kind: "Service", Name: s.Name, Ready: s.Spec.ClusterIP != "",
		Detail: fmt.Sprintf("%s %s", s.Spec.Type, s.Spec.ClusterIP)}
}

func ingressChild(ing *networkingv1.Ingress) Child {
	var addrs []string
	for _, a := range ing.Status.LoadBalancer.Ingress {
		addrs = append(addrs, a.IP+a.Hostname)
	}
	if len(addrs) == 0 {
		return Child{Kind: "Ingress", Name: ing.Name, Detail: "no address yet (the ingress controller sets one)"}
	}
	return Child{Kind: "Ingress", Name: ing.Name, Ready: true, Detail: "address " + strings.Join(addrs, ",")}
}

func httpRouteChild(hr *gatewayv1.HTTPRoute) Child {
	accepted, total := 0, len(hr.Status.Parents)
	for _, p := range hr.Status.Parents {
		if meta.IsStatusConditionTrue(p.Conditions, string(gatewayv1.RouteConditionAccepted)) {
			accepted++
		}
	}
	return Child{Kind: "HTTPRoute", Name: hr.Name, Ready: total > 0 && accepted == total,
		Detail: fmt.Sprintf("accepted by %d of %d parents", accepted, total)}
}

func budgetChild(b *policyv1.PodDisruptionBudget) Child {
	s := b.Status
	return Child{Kind: "PodDisruptionBudget", Name: b.Name, Ready: s.ObservedGeneration >= b.Generation,
		Detail: fmt.Sprintf("%d disruptions allowed, %d/%d healthy", s.DisruptionsAllowed, s.CurrentHealthy, s.DesiredHealthy)}
}

func networkPolicyChild(np *networkingv1.NetworkPolicy) Child {
	return Child{Kind: "NetworkPolicy", Name: np.Name, Ready: true, Detail: "status port from the operator's namespace only"}
}

// parents are hr's parents' verdicts.
func parents(hr *gatewayv1.HTTPRoute) []Parent {
	var out []Parent
	for _, p := range hr.Status.Parents {
		ns := hr.Namespace
		if p.ParentRef.Namespace != nil {
			ns = string(*p.ParentRef.Namespace)
		}
		out = append(out, Parent{HTTPRoute: hr.Name, Gateway: ns + "/" + string(p.ParentRef.Name), Conditions: conditions(p.Conditions)})
	}
	return out
}

// pod is p's line: its state and its reloader's answer.
func pod(p *corev1.Pod, current string, in Inputs) Pod {
	out := Pod{Name: p.Name, Phase: string(p.Status.Phase)}
	if c := podCondition(p, corev1.PodReady); c != nil {
		out.Ready = c.Status == corev1.ConditionTrue
	}
	for _, cs := range p.Status.ContainerStatuses {
		out.Restarts += cs.RestartCount
	}
	st, ok := in.Reports[p.Name]
	if !ok {
		out.Unread = in.ReportErrors[p.Name]
		return out
	}
	out.Serving = st.Loaded
	out.Current = current != "" && st.Loaded == current
	out.Refused = st.Refused
	return out
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// short is a hash as the operator's conditions print it.
func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
