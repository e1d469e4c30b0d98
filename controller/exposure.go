package controller

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// errGatewayAPIMissing is the failure of a gateway that asks for
// HTTPRoutes on a cluster that has none.
var errGatewayAPIMissing = errors.New("the cluster does not serve gateway.networking.k8s.io/v1 HTTPRoutes: " +
	"install Gateway API's CRDs (the operator picks them up, no restart needed), or set spec.exposure.type to Ingress")

// The parent conditions the Exposed condition reflects, in the order
// checked: a Gateway first accepts a route, then resolves its backends.
var parentConditions = []string{string(gatewayv1.RouteConditionAccepted), string(gatewayv1.RouteConditionResolvedRefs)}

// maxVerdictsShown bounds the Exposed condition's message, as
// maxConflictsShown does the Accepted one's; maxParentMessage bounds each
// Gateway message quoted in it.
const (
	maxVerdictsShown = 3
	maxParentMessage = 256
)

// exposedCondition is gw's Exposed condition, or nil when gw is exposed
// through an Ingress, which reports no verdict (computeStatus then
// removes the condition). routes are gw's HTTPRoutes as applied, wanted
// how many it should have (fewer were applied when some failed).
func exposedCondition(gw *v1.APIGateway, routes []*gatewayv1.HTTPRoute, wanted int, failures []failure) *metav1.Condition {
	if !exposedByHTTPRoute(gw) {
		return nil
	}
	c := &metav1.Condition{Type: v1.ConditionExposed, Status: metav1.ConditionUnknown, Reason: v1.ReasonPending}
	switch {
	case hasFailure(failures, v1.ReasonGatewayAPIMissing):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1.ReasonGatewayAPIMissing, errGatewayAPIMissing.Error()
	case wanted == 0:
		c.Status, c.Reason = metav1.ConditionFalse, v1.ReasonRouteConflict
		c.Message = "other APIGateways serve every route of this one, so it has no HTTPRoute; see the Accepted condition"
	case len(routes) < wanted:
		c.Message = fmt.Sprintf("%d of %d HTTPRoutes applied; see the Degraded condition", len(routes), wanted)
	default:
		*c = verdictsCondition(gw, routes)
	}
	return c
}

// verdict is what one parent Gateway says of one HTTPRoute.
type verdict struct {
	route  *gatewayv1.HTTPRoute
	parent *v1.ParentGatewayReference
	// cond is the parent's first condition that is not True, nil when
	// all are; missing (no status yet) when the parent said nothing.
	cond    *metav1.Condition
	missing bool
}

func (v verdict) String() string {
	s := fmt.Sprintf("HTTPRoute %s (%s) at %s: ", v.route.Name, hostOf(v.route), validation.ParentString(v.parent, v.route.Namespace))
	if v.missing {
		return s + "no status yet"
	}
	return s + fmt.Sprintf("%s=%s %s: %s", v.cond.Type, v.cond.Status, v.cond.Reason, shorten(v.cond.Message, maxParentMessage))
}

// verdictsCondition reads each parent's verdict on each route: False with
// the first refusal's reason when a Gateway refused a route (its reason,
// such as NotAllowedByListeners, says why), Unknown while one has not
// answered, True when every one accepted every route and resolved its
// backend.
func verdictsCondition(gw *v1.APIGateway, routes []*gatewayv1.HTTPRoute) metav1.Condition {
	var refused, pending []verdict
	for _, r := range routes {
		for i := range gw.Spec.Exposure.HTTPRoute.ParentRefs {
			v := parentVerdict(r, &gw.Spec.Exposure.HTTPRoute.ParentRefs[i])
			switch {
			case v.missing || (v.cond != nil && v.cond.Status != metav1.ConditionFalse):
				pending = append(pending, v)
			case v.cond != nil:
				refused = append(refused, v)
			}
		}
	}
	c := metav1.Condition{Type: v1.ConditionExposed}
	switch {
	case len(refused) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, refused[0].cond.Reason, verdictsMessage(refused)
	case len(pending) > 0:
		c.Status, c.Reason = metav1.ConditionUnknown, v1.ReasonPending
		c.Message = "waiting for the parent Gateways' controller: " + verdictsMessage(pending)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, v1.ReasonExposed
		c.Message = fmt.Sprintf("every parent Gateway accepted the %d HTTPRoutes and resolved their backend", len(routes))
	}
	return c
}

// parentVerdict is p's verdict on r: its status entry's Accepted and
// ResolvedRefs conditions, a condition that describes an older generation
// of r counting as not yet given.
func parentVerdict(r *gatewayv1.HTTPRoute, p *v1.ParentGatewayReference) verdict {
	v := verdict{route: r, parent: p}
	s := findParentStatus(r, p)
	if s == nil {
		v.missing = true
		return v
	}
	for _, t := range parentConditions {
		c := meta.FindStatusCondition(s.Conditions, t)
		switch {
		case c == nil || c.ObservedGeneration < r.Generation:
			v.missing = true
			return v
		case c.Status != metav1.ConditionTrue:
			v.cond = c
			return v
		}
	}
	return v
}

// findParentStatus is r's status entry for the Gateway and listener p
// names, or nil.
func findParentStatus(r *gatewayv1.HTTPRoute, p *v1.ParentGatewayReference) *gatewayv1.RouteParentStatus {
	want := validation.ParentGateway(r.Namespace, p)
	for i := range r.Status.Parents {
		s := &r.Status.Parents[i]
		ref := s.ParentRef
		if ref.Kind != nil && *ref.Kind != "Gateway" || ref.Group != nil && *ref.Group != gatewayv1.GroupName {
			continue
		}
		ns := r.Namespace
		if ref.Namespace != nil {
			ns = string(*ref.Namespace)
		}
		if ns+"/"+string(ref.Name) == want && ptr.Deref(ref.SectionName, "") == gatewayv1.SectionName(ptr.Deref(p.SectionName, "")) {
			return s
		}
	}
	return nil
}

func verdictsMessage(vs []verdict) string { return joinBounded(vs, maxVerdictsShown) }

func hostOf(r *gatewayv1.HTTPRoute) string {
	if len(r.Spec.Hostnames) == 0 {
		return "no hostname"
	}
	return string(r.Spec.Hostnames[0])
}

// shorten shortens s to at most n bytes, on a rune boundary.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

func hasFailure(failures []failure, reason string) bool {
	for _, f := range failures {
		if f.reason == reason {
			return true
		}
	}
	return false
}
