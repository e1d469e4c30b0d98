package controller

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/render"
)

// Condition reasons. Each says what a person can do about it.
const (
	ReasonAllReplicasReady   = "AllReplicasReady"
	ReasonReplicasNotReady   = "ReplicasNotReady"
	ReasonScaledToZero       = "ScaledToZero"
	ReasonDeploymentMissing  = "DeploymentMissing"
	ReasonRollingOut         = "RollingOut"
	ReasonRolloutComplete    = "RolloutComplete"
	ReasonRolloutStuck       = "RolloutStuck"
	ReasonChildrenApplied    = "ChildrenApplied"
	ReasonApplyFailed        = "ApplyFailed"
	ReasonInvalidRoutes      = "InvalidRoutes"
	ReasonChildrenNotApplied = "ChildrenNotApplied"
	// ReasonChildNameTaken: an object the gateway does not control holds
	// a child's name; the user deletes or renames it, or renames the
	// gateway.
	ReasonChildNameTaken = "ChildNameTaken"
)

// failure is a child that could not be built or applied.
type failure struct {
	kind, name string
	reason     string // ReasonApplyFailed, ReasonInvalidRoutes, ReasonChildNameTaken or v1.ReasonGatewayAPIMissing
	err        error
}

func (f failure) String() string { return fmt.Sprintf("%s %s: %v", f.kind, f.name, f.err) }

// computeStatus is gw's status given its Deployment as the API server has it
// (nil when it does not exist), the children that failed and the routes
// other gateways serve, the Exposed condition (exposedCondition; nil
// removes it) and what the pods serve (liveStatus). Conditions keep their
// lastTransitionTime unless their status changes (then it is now).
func computeStatus(gw *v1.APIGateway, dep *appsv1.Deployment, failures []failure, lost []routeConflict, exposed *metav1.Condition, live liveState, now metav1.Time) v1.APIGatewayStatus {
	st := v1.APIGatewayStatus{
		ObservedGeneration: gw.Generation,
		Selector:           labels.SelectorFromSet(selectorLabels(gw)).String(),
		Conditions:         append([]metav1.Condition(nil), gw.Status.Conditions...),
	}
	if dep != nil {
		st.Replicas = dep.Status.Replicas
		st.ReadyReplicas = dep.Status.ReadyReplicas
	}
	st.LiveReplicas = live.replicas
	set := func(c metav1.Condition) {
		c.ObservedGeneration = gw.Generation
		c.LastTransitionTime = now
		meta.SetStatusCondition(&st.Conditions, c)
	}
	degraded, ready, accepted := degradedCondition(gw, dep, failures), readyCondition(gw, dep, failures, live), acceptedCondition(lost)
	set(degraded)
	set(progressingCondition(gw, dep, failures, live.condition))
	set(ready)
	// Last: gateways stored before the condition existed get it appended,
	// so every gateway lists its conditions in one order.
	set(accepted)
	if exposed != nil {
		set(*exposed)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1.ConditionExposed)
	}
	set(live.condition)
	set(stalledCondition(degraded, ready, accepted))
	return st
}

// terminalReasons are the reasons of Degraded, Ready and Accepted that no
// retry clears: someone must change the routes, the cluster or the image
// (with stuckReasons, the kubelet's). ApplyFailed is not among them: the
// API server may accept the child the next time.
var terminalReasons = map[string]bool{
	ReasonInvalidRoutes:           true,
	ReasonChildNameTaken:          true,
	v1.ReasonGatewayAPIMissing:    true,
	ReasonRolloutStuck:            true,
	v1.ReasonConfigurationRefused: true,
	v1.ReasonRouteConflict:        true,
	v1.ReasonHostOwned:            true,
	v1.ReasonDomainBound:          true,
}

// healthyStatus is the status of each condition Stalled reads when it
// reports nothing wrong.
var healthyStatus = map[string]metav1.ConditionStatus{
	v1.ConditionDegraded: metav1.ConditionFalse,
	v1.ConditionReady:    metav1.ConditionTrue,
	v1.ConditionAccepted: metav1.ConditionTrue,
}

// stalledCondition is True, with the first of conds that is not healthy for
// a terminal reason, when the gateway will not reach its spec without a
// change: kstatus (Flux) reads it as Failed and stops waiting. Degraded
// comes first: its message names the child.
func stalledCondition(conds ...metav1.Condition) metav1.Condition {
	for _, c := range conds {
		if c.Status != healthyStatus[c.Type] && (terminalReasons[c.Reason] || stuckReasons[c.Reason]) {
			return metav1.Condition{Type: v1.ConditionStalled, Status: metav1.ConditionTrue, Reason: c.Reason,
				Message: c.Type + ": " + c.Message}
		}
	}
	return metav1.Condition{Type: v1.ConditionStalled, Status: metav1.ConditionFalse, Reason: v1.ReasonNotStalled,
		Message: "nothing that needs a change keeps the gateway from its spec; see the Ready condition"}
}

// acceptedCondition says whether gw serves every route it asks for. It is
// apart from Ready, Progressing and Degraded: those describe the routes
// the gateway does serve.
func acceptedCondition(lost []routeConflict) metav1.Condition {
	if len(lost) > 0 {
		return metav1.Condition{Type: v1.ConditionAccepted, Status: metav1.ConditionFalse, Reason: conflictsReason(lost),
			Message: conflictsMessage(lost)}
	}
	return metav1.Condition{Type: v1.ConditionAccepted, Status: metav1.ConditionTrue, Reason: v1.ReasonAccepted,
		Message: "every route is served by this gateway"}
}

func degradedCondition(gw *v1.APIGateway, dep *appsv1.Deployment, failures []failure) metav1.Condition {
	if len(failures) > 0 {
		msgs := make([]string, len(failures))
		for i, f := range failures {
			msgs[i] = f.String()
		}
		return metav1.Condition{Type: v1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: failureReason(failures),
			Message: strings.Join(msgs, "; ")}
	}
	if c := deploymentCondition(dep, appsv1.DeploymentProgressing); c != nil && c.Reason == "ProgressDeadlineExceeded" {
		return metav1.Condition{Type: v1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: ReasonRolloutStuck,
			Message: "the gateway pods are not becoming ready (check their events, image and resources): " + c.Message}
	}
	return metav1.Condition{Type: v1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: ReasonChildrenApplied,
		Message: "the ConfigMap, Deployment, Service and " + exposureKind(gw) + " match the spec"}
}

func progressingCondition(gw *v1.APIGateway, dep *appsv1.Deployment, failures []failure, live metav1.Condition) metav1.Condition {
	c := metav1.Condition{Type: v1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: ReasonRollingOut}
	switch {
	case dep == nil && len(failures) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonChildrenNotApplied
		c.Message = "the Deployment could not be applied; see the Degraded condition"
	case dep == nil:
		c.Message = "creating the Deployment"
	case !rolledOut(gw, dep):
		c.Message = fmt.Sprintf("%d of %d pods run the current pod template", dep.Status.UpdatedReplicas, render.Replicas(gw))
	case live.Reason == v1.ReasonReloading:
		c.Reason, c.Message = live.Reason, live.Message
	default:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonRolloutComplete
		c.Message = fmt.Sprintf("all %d pods run the current pod template", render.Replicas(gw))
	}
	return c
}

func readyCondition(gw *v1.APIGateway, dep *appsv1.Deployment, failures []failure, pods liveState) metav1.Condition {
	live := pods.condition
	c := metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionFalse}
	want := render.Replicas(gw)
	switch {
	case len(failures) > 0:
		// First: it says what keeps the Deployment from existing or
		// changing, and what to do about it.
		c.Reason, c.Message = failureReason(failures), "some children do not match the spec; see the Degraded condition"
	case dep == nil:
		c.Reason, c.Message = ReasonDeploymentMissing, "the gateway's Deployment does not exist yet"
	case want == 0:
		c.Reason, c.Message = ReasonScaledToZero, "spec.replicas is 0: no pod serves the routes"
	case (!rolledOut(gw, dep) || dep.Status.ReadyReplicas < want) && len(pods.stuck) > 0:
		// The kubelet's reason (ImagePullBackOff, ...): what to fix.
		c.Reason = pods.stuck[0].reason
		c.Message = fmt.Sprintf("%d of %d replicas ready; the kubelet cannot start %s",
			dep.Status.ReadyReplicas, want, joinBounded(pods.stuck, livePodsListed))
	case !rolledOut(gw, dep) || dep.Status.ReadyReplicas < want:
		c.Reason = ReasonReplicasNotReady
		c.Message = fmt.Sprintf("%d of %d replicas ready", dep.Status.ReadyReplicas, want)
	case live.Status == metav1.ConditionFalse:
		// Ready means serving the current configuration; a pod's report
		// that cannot be read (Unknown) does not make the gateway unready.
		c.Reason, c.Message = live.Reason, live.Message
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonAllReplicasReady
		c.Message = fmt.Sprintf("%d of %d replicas ready", dep.Status.ReadyReplicas, want)
	}
	return c
}

// failureReason is the reason of the failure the user must act on first:
// InvalidRoutes (fix the spec), then GatewayAPIMissing (install it), then
// ChildNameTaken (free the name), then ApplyFailed (the API server refused
// a child; retried).
func failureReason(failures []failure) string {
	for _, reason := range []string{ReasonInvalidRoutes, v1.ReasonGatewayAPIMissing, ReasonChildNameTaken} {
		for _, f := range failures {
			if f.reason == reason {
				return reason
			}
		}
	}
	return ReasonApplyFailed
}

// joinBounded joins the first limit of items for a condition's message,
// saying how many it left out: a message stays bounded whatever the
// number of routes.
func joinBounded[T fmt.Stringer](items []T, limit int) string {
	shown := items[:min(len(items), limit)]
	parts := make([]string, len(shown))
	for i, item := range shown {
		parts[i] = item.String()
	}
	msg := strings.Join(parts, "; ")
	if more := len(items) - len(shown); more > 0 {
		msg += fmt.Sprintf("; and %d more", more)
	}
	return msg
}

// exposureKind names the children that expose gw, for messages.
func exposureKind(gw *v1.APIGateway) string {
	if exposedByHTTPRoute(gw) {
		return "HTTPRoutes"
	}
	return "Ingress"
}

// rolledOut reports whether the Deployment controller has seen the current
// Deployment spec and every pod it keeps is of the current template.
func rolledOut(gw *v1.APIGateway, dep *appsv1.Deployment) bool {
	want := render.Replicas(gw)
	s := dep.Status
	return s.ObservedGeneration >= dep.Generation &&
		s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas >= want
}

func deploymentCondition(dep *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	if dep == nil {
		return nil
	}
	for i := range dep.Status.Conditions {
		if c := &dep.Status.Conditions[i]; c.Type == t && c.Status != corev1.ConditionUnknown {
			return c
		}
	}
	return nil
}
