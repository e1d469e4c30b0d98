package controller

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/reloader"
	"example.com/apigateway-operator/render"
)

// podReport is what the operator learned of one of the gateway's own pods
// (ownPods): whether it is ready, and what its reloader reports on
// StatusPort, or why that could not be read; unread while the prober has
// not read it yet (for this configuration).
type podReport struct {
	name   string
	ready  bool
	status reloader.Status
	err    error
	unread bool
}

// liveState is the Live condition with status.liveReplicas, and whether
// the pods must be asked again: nothing announces that a pod has
// reloaded, so while some ready pod has yet to report the current
// configuration the reconciler polls (pollAfter). stuck are the pods'
// containers the kubelet cannot start, which Ready names.
type liveState struct {
	replicas  int32
	condition metav1.Condition
	pending   bool
	stuck     []stuckContainer
}

// Bounds of the Live condition's message: it names at most this many
// pods, each pod's nginx message cut to so many bytes.
const (
	livePodsListed  = 3
	liveMessageSize = 256
)

// liveStatus says which ready pods serve the configuration hash (empty
// when the ConfigMap does not hold the spec's configuration, because the
// routes or a child failed: failures says why), given the Deployment and
// the pods' reports.
func liveStatus(gw *v1.APIGateway, dep *appsv1.Deployment, failures []failure, hash string, reports []podReport) liveState {
	cond := func(status metav1.ConditionStatus, reason, format string, args ...any) metav1.Condition {
		return metav1.Condition{Type: v1.ConditionLive, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case hash == "":
		return liveState{condition: cond(metav1.ConditionFalse, failureReason(failures),
			"the spec's configuration is not in ConfigMap %s (see the Degraded condition); the pods keep serving the one before it", configMapName(gw))}
	case dep == nil:
		return liveState{condition: cond(metav1.ConditionFalse, ReasonDeploymentMissing, "the gateway's Deployment does not exist yet")}
	case !hasReloader(dep):
		return legacyLive(gw, dep, hash)
	case render.Replicas(gw) == 0:
		return liveState{condition: cond(metav1.ConditionFalse, ReasonScaledToZero, "spec.replicas is 0: no pod serves the routes")}
	}
	short := hash[:12]
	var (
		ready, live, waiting int32
		refused              []podRefusal
		unreachable          []podError
		unread               []podName
	)
	for _, r := range reports {
		if r.unread {
			if r.ready {
				ready++
				unread = append(unread, podName(r.name))
			}
			continue
		}
		refusedIt := r.err == nil && r.status.Loaded != hash && r.status.Refused != nil && r.status.Refused.Hash == hash
		switch {
		case r.err != nil && r.ready:
			unreachable = append(unreachable, podError{r.name, r.err})
		case refusedIt:
			refused = append(refused, podRefusal{r.name, *r.status.Refused})
		}
		// A pod that is not ready serves nothing, and may not answer yet.
		if !r.ready {
			continue
		}
		ready++
		switch {
		case r.err == nil && r.status.Loaded == hash:
			live++
		case r.err == nil && !refusedIt:
			// Still loading: ask again. A pod that does not answer is
			// not asked again before the next event or resync: that is
			// most often a NetworkPolicy, which polling does not lift.
			waiting++
		}
	}
	serving := fmt.Sprintf("%d of %d ready replicas serve configuration %s", live, ready, short)
	st := liveState{replicas: live, pending: waiting > 0}
	switch {
	case len(refused) > 0:
		sort.Slice(refused, func(i, j int) bool { return refused[i].pod < refused[j].pod })
		st.condition = cond(metav1.ConditionFalse, v1.ReasonConfigurationRefused, "%s; %s", serving, joinBounded(refused, livePodsListed))
	case ready == 0 && dep.Status.ReadyReplicas > 0:
		// The operator's cache has not seen them ready yet.
		st.condition = cond(metav1.ConditionUnknown, v1.ReasonStatusUnreachable,
			"the Deployment counts %d ready replicas, but the pods of its ReplicaSets the operator sees list none ready yet: it cannot ask them",
			dep.Status.ReadyReplicas)
	case ready == 0:
		st.condition = cond(metav1.ConditionFalse, v1.ReasonNoReadyReplicas, "no gateway pod is ready (see the Ready condition)")
	case len(unreachable) > 0:
		sort.Slice(unreachable, func(i, j int) bool { return unreachable[i].pod < unreachable[j].pod })
		st.condition = cond(metav1.ConditionUnknown, v1.ReasonStatusUnreachable,
			"%s; could not read the reloader's status (port %d) of %s: a NetworkPolicy must let the operator's namespace reach it",
			serving, StatusPort, joinBounded(unreachable, livePodsListed))
	case waiting > 0 && strategy(gw) == v1.ConfigUpdateRollout:
		st.condition = cond(metav1.ConditionFalse, ReasonRollingOut, "%s; the Rollout strategy replaces the others", serving)
	case waiting > 0:
		st.condition = cond(metav1.ConditionFalse, v1.ReasonReloading,
			"%s; the kubelet projects a changed ConfigMap into the pods within its sync period, then each reloads", serving)
	case len(unread) > 0:
		// The prober reconciles the gateway again once it has read them.
		sort.Slice(unread, func(i, j int) bool { return unread[i] < unread[j] })
		st.condition = cond(metav1.ConditionUnknown, v1.ReasonStatusUnreachable,
			"%s; the reloader's status (port %d) of %s is being read", serving, StatusPort, joinBounded(unread, livePodsListed))
	default:
		st.condition = cond(metav1.ConditionTrue, v1.ReasonLive, "all %d ready replicas serve configuration %s", ready, short)
	}
	return st
}

// legacyLive is the Live condition of pods from before the reloader,
// whose template carries the configuration's hash (keepRunningTemplate):
// they serve it once the Deployment has rolled out.
func legacyLive(gw *v1.APIGateway, dep *appsv1.Deployment, hash string) liveState {
	c := metav1.Condition{Type: v1.ConditionLive, Status: metav1.ConditionFalse, Reason: ReasonRollingOut,
		Message: "the pods, from before the reloader, are being replaced to serve the current configuration"}
	if dep.Spec.Template.Annotations[ConfigHashAnnotation] == hash && rolledOut(gw, dep) && dep.Status.ReadyReplicas > 0 {
		c.Status, c.Reason = metav1.ConditionTrue, v1.ReasonLive
		c.Message = fmt.Sprintf("all %d ready replicas serve configuration %s (pods from before the reloader: "+
			"the next change of the configuration, image or resources rolls them onto it)", dep.Status.ReadyReplicas, hash[:12])
		return liveState{replicas: dep.Status.ReadyReplicas, condition: c}
	}
	return liveState{condition: c}
}

// podName is a pod named in a condition's message.
type podName string

func (p podName) String() string { return "pod " + string(p) }

type podRefusal struct {
	pod string
	r   reloader.Refusal
}

func (p podRefusal) String() string {
	return fmt.Sprintf("pod %s refused it (%s) and serves its previous one: %s",
		p.pod, reloader.Bound(p.r.Reason, 64), reloader.Bound(p.r.Message, liveMessageSize))
}

type podError struct {
	pod string
	err error
}

func (p podError) String() string {
	return "pod " + p.pod + ": " + reloader.Bound(p.err.Error(), liveMessageSize)
}

// pollAfter is how long the reconciler waits before asking the pods again
// when their reports are pending, given how long they have been (the Live
// condition's age): at first every half second, since the reload itself
// takes milliseconds once the kubelet has projected the file, then less
// often while the kubelet's sync period (about a minute) runs, never more
// than 15 s apart.
func pollAfter(waiting time.Duration) time.Duration {
	return min(max(waiting/8, 500*time.Millisecond), 15*time.Second)
}
