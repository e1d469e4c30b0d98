package controller

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/ownership"
)

// liveOK is what every ready pod serving the current configuration gives.
var liveOK = liveState{replicas: 2, condition: metav1.Condition{Type: v1.ConditionLive, Status: metav1.ConditionTrue, Reason: v1.ReasonLive, Message: "all 2 ready replicas serve configuration 0123456789ab"}}

func deploymentWith(generation int64, s appsv1.DeploymentStatus) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: generation}, Status: s}
}

func TestComputeStatus(t *testing.T) {
	ready := appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	tests := map[string]struct {
		replicas  int32
		dep       *appsv1.Deployment
		failures  []failure
		ready     metav1.ConditionStatus
		readyWhy  string
		progWhy   string
		degraded  metav1.ConditionStatus
		degradWhy string
		stalled   string // Stalled's reason; empty: False, NotStalled
	}{
		"no deployment yet": {replicas: 2, ready: "False", readyWhy: ReasonDeploymentMissing, progWhy: ReasonRollingOut,
			degraded: "False", degradWhy: ReasonChildrenApplied},
		"pods not ready": {replicas: 2, dep: deploymentWith(4, appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1}),
			ready: "False", readyWhy: ReasonReplicasNotReady, progWhy: ReasonRollingOut, degraded: "False", degradWhy: ReasonChildrenApplied},
		"all ready": {replicas: 2, dep: deploymentWith(4, ready),
			ready: "True", readyWhy: ReasonAllReplicasReady, progWhy: ReasonRolloutComplete, degraded: "False", degradWhy: ReasonChildrenApplied},
		"deployment controller has not seen the new spec": {replicas: 2, dep: deploymentWith(5, ready),
			ready: "False", readyWhy: ReasonReplicasNotReady, progWhy: ReasonRollingOut, degraded: "False", degradWhy: ReasonChildrenApplied},
		"old pods still running": {replicas: 2, dep: deploymentWith(4, appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 3, UpdatedReplicas: 2, ReadyReplicas: 3, AvailableReplicas: 3}),
			ready: "False", readyWhy: ReasonReplicasNotReady, progWhy: ReasonRollingOut, degraded: "False", degradWhy: ReasonChildrenApplied},
		"scaled to zero": {replicas: 0, dep: deploymentWith(4, appsv1.DeploymentStatus{ObservedGeneration: 4}),
			ready: "False", readyWhy: ReasonScaledToZero, progWhy: ReasonRolloutComplete, degraded: "False", degradWhy: ReasonChildrenApplied},
		"a child failed": {replicas: 2, dep: deploymentWith(4, ready),
			failures: []failure{{kind: "Service", name: "gw", reason: ReasonApplyFailed, err: errors.New("boom")}},
			ready:    "False", readyWhy: ReasonApplyFailed, progWhy: ReasonRolloutComplete, degraded: "True", degradWhy: ReasonApplyFailed},
		"routes refused": {replicas: 2,
			failures: []failure{{kind: "ConfigMap", name: "gw-config", reason: ReasonInvalidRoutes, err: errors.New("bad path")}},
			ready:    "False", readyWhy: ReasonInvalidRoutes, progWhy: ReasonChildrenNotApplied, degraded: "True", degradWhy: ReasonInvalidRoutes,
			stalled: ReasonInvalidRoutes},
		"config name taken": {replicas: 2, failures: []failure{
			{kind: "ConfigMap", name: "gw-config", reason: ReasonChildNameTaken, err: &nameTakenError{}},
			*notApplied("Deployment", "gw", "its pods would mount ConfigMap gw-config"),
		},
			ready: "False", readyWhy: ReasonChildNameTaken, progWhy: ReasonChildrenNotApplied, degraded: "True", degradWhy: ReasonChildNameTaken,
			stalled: ReasonChildNameTaken},
		"service name taken while another child failed": {replicas: 2, dep: deploymentWith(4, ready), failures: []failure{
			{kind: "Deployment", name: "gw", reason: ReasonApplyFailed, err: errors.New("boom")},
			{kind: "Service", name: "gw", reason: ReasonChildNameTaken, err: &nameTakenError{}},
			*notApplied("Ingress", "gw", "it would send the gateway's hosts to Service gw"),
		},
			ready: "False", readyWhy: ReasonChildNameTaken, progWhy: ReasonRolloutComplete, degraded: "True", degradWhy: ReasonChildNameTaken,
			stalled: ReasonChildNameTaken},
		"routes refused and a name taken": {replicas: 2, failures: []failure{
			{kind: "ConfigMap", name: "gw-config", reason: ReasonInvalidRoutes, err: errors.New("bad path")},
			{kind: "Service", name: "gw", reason: ReasonChildNameTaken, err: &nameTakenError{}},
		},
			ready: "False", readyWhy: ReasonInvalidRoutes, progWhy: ReasonChildrenNotApplied, degraded: "True", degradWhy: ReasonInvalidRoutes,
			stalled: ReasonInvalidRoutes},
		"routes refused after the gateway ran": {replicas: 2, dep: deploymentWith(4, ready),
			failures: []failure{{kind: "ConfigMap", name: "gw-config", reason: ReasonInvalidRoutes, err: errors.New("bad path")}},
			ready:    "False", readyWhy: ReasonInvalidRoutes, progWhy: ReasonRolloutComplete, degraded: "True", degradWhy: ReasonInvalidRoutes,
			stalled: ReasonInvalidRoutes},
		"rollout stuck": {replicas: 2, dep: deploymentWith(4, appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 2, UpdatedReplicas: 2,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "timed out"}}}),
			ready: "False", readyWhy: ReasonReplicasNotReady, progWhy: ReasonRollingOut, degraded: "True", degradWhy: ReasonRolloutStuck,
			stalled: ReasonRolloutStuck},
	}
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
			gw.Spec.Replicas = ptr.To(tc.replicas)
			st := computeStatus(gw, tc.dep, tc.failures, nil, nil, liveOK, now)
			assert.Equal(t, gw.Generation, st.ObservedGeneration)
			assert.Equal(t, "app.kubernetes.io/instance=gw,app.kubernetes.io/name=apigateway", st.Selector)
			assertCondition(t, st.Conditions, v1.ConditionReady, tc.ready, tc.readyWhy)
			assertCondition(t, st.Conditions, v1.ConditionProgressing, "", tc.progWhy)
			assertCondition(t, st.Conditions, v1.ConditionDegraded, tc.degraded, tc.degradWhy)
			if tc.stalled == "" {
				assertCondition(t, st.Conditions, v1.ConditionStalled, metav1.ConditionFalse, v1.ReasonNotStalled)
			} else {
				assertCondition(t, st.Conditions, v1.ConditionStalled, metav1.ConditionTrue, tc.stalled)
			}
			for _, f := range tc.failures {
				assert.Contains(t, meta.FindStatusCondition(st.Conditions, v1.ConditionDegraded).Message, f.kind+" "+f.name,
					"Degraded does not name the failed child")
			}
		})
	}
}

func TestComputeStatusKeepsTransitionTimes(t *testing.T) {
	gw := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
	dep := deploymentWith(1, appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1})
	t1 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	gw.Status = computeStatus(gw, dep, nil, nil, nil, liveOK, t1)
	again := computeStatus(gw, dep, nil, nil, nil, liveOK, metav1.NewTime(t1.Add(time.Hour)))
	assert.Equal(t, gw.Status, again, "an unchanged status must compare equal, or every reconcile writes it")

	dep.Status.ReadyReplicas = 0
	later := metav1.NewTime(t1.Add(2 * time.Hour))
	changed := computeStatus(gw, dep, nil, nil, nil, liveOK, later)
	assert.Equal(t, later, meta.FindStatusCondition(changed.Conditions, v1.ConditionReady).LastTransitionTime)
	assert.Equal(t, t1, meta.FindStatusCondition(changed.Conditions, v1.ConditionDegraded).LastTransitionTime)
}

// TestAcceptedCondition: Accepted reports the routes other gateways win,
// and leaves Ready, Progressing and Degraded as they were: those describe
// the routes the gateway serves.
func TestAcceptedCondition(t *testing.T) {
	gw := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80), route("a.example.com", "/x", v1.PathTypePrefix, "web", 80))
	dep := deploymentWith(1, appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1})
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

	st := computeStatus(gw, dep, nil, nil, nil, liveOK, now)
	assertCondition(t, st.Conditions, v1.ConditionAccepted, "True", v1.ReasonAccepted)

	lost := []routeConflict{{of: gw, Loss: ownership.Loss{Index: 1, Route: gw.Spec.Routes[1], Holder: competing("team-a", "shop", 1),
		Reason: v1.ReasonRouteConflict, Scope: "default"}}}
	conflicted := computeStatus(gw, dep, nil, lost, nil, liveOK, now)
	assertCondition(t, conflicted.Conditions, v1.ConditionAccepted, "False", v1.ReasonRouteConflict)
	assert.Contains(t, meta.FindStatusCondition(conflicted.Conditions, v1.ConditionAccepted).Message,
		"spec.routes[1] (a.example.com Prefix /x) is served by an APIGateway of another namespace, which claimed it first (default)")
	for _, typ := range []string{v1.ConditionReady, v1.ConditionProgressing, v1.ConditionDegraded} {
		assert.Equal(t, meta.FindStatusCondition(st.Conditions, typ), meta.FindStatusCondition(conflicted.Conditions, typ), typ)
	}
}

func assertCondition(t *testing.T, conds []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(conds, typ)
	if !assert.NotNil(t, c, "no %s condition", typ) {
		return
	}
	if status != "" {
		assert.Equal(t, status, c.Status, "%s status", typ)
	}
	assert.Equal(t, reason, c.Reason, "%s reason", typ)
	assert.NotEmpty(t, c.Message, "%s message", typ)
}

// TestReadyNamesStuckContainers: while replicas are missing, Ready takes
// the kubelet's reason of a container that cannot start, and its message
// names the pod, container and image; once every replica is ready (a
// stuck pod of an earlier rollout left behind) it does not.
func TestReadyNamesStuckContainers(t *testing.T) {
	stuck := liveOK
	stuck.stuck = []stuckContainer{
		{pod: "gw-1", container: "gateway", image: "missing:1", reason: "ImagePullBackOff", message: `Back-off pulling image "missing:1"`},
		{pod: "gw-2", container: "gateway", image: "missing:1", reason: "ErrImagePull", message: "not found"},
	}
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	gw := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Spec.Replicas = ptr.To(int32(2))

	rolling := deploymentWith(4, appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2})
	st := computeStatus(gw, rolling, nil, nil, nil, stuck, now)
	assertCondition(t, st.Conditions, v1.ConditionReady, metav1.ConditionFalse, "ImagePullBackOff")
	assert.Equal(t, `2 of 2 replicas ready; the kubelet cannot start pod gw-1, container gateway (image "missing:1"): ImagePullBackOff: `+
		`Back-off pulling image "missing:1"; pod gw-2, container gateway (image "missing:1"): ErrImagePull: not found`,
		meta.FindStatusCondition(st.Conditions, v1.ConditionReady).Message)

	ready := deploymentWith(4, appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2})
	st = computeStatus(gw, ready, nil, nil, nil, stuck, now)
	assertCondition(t, st.Conditions, v1.ConditionReady, metav1.ConditionTrue, ReasonAllReplicasReady)

	failed := []failure{{kind: "Service", name: "gw", reason: ReasonApplyFailed, err: errors.New("boom")}}
	st = computeStatus(gw, rolling, failed, nil, nil, stuck, now)
	assertCondition(t, st.Conditions, v1.ConditionReady, metav1.ConditionFalse, ReasonApplyFailed)
}

// TestReadyWaitsForLive: Ready means the pods serve the current
// configuration, so a reload still on its way or refused keeps it False,
// and Progressing says a reload is on its way; a pod whose report cannot
// be read (Unknown) leaves Ready to the Deployment.
func TestReadyWaitsForLive(t *testing.T) {
	ready := appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	live := func(status metav1.ConditionStatus, reason string) liveState {
		return liveState{condition: metav1.Condition{Type: v1.ConditionLive, Status: status, Reason: reason, Message: "m"}}
	}
	tests := map[string]struct {
		live               liveState
		ready, progressing metav1.ConditionStatus
		readyWhy, progWhy  string
	}{
		"live":      {live: liveOK, ready: "True", readyWhy: ReasonAllReplicasReady, progressing: "False", progWhy: ReasonRolloutComplete},
		"reloading": {live: live("False", v1.ReasonReloading), ready: "False", readyWhy: v1.ReasonReloading, progressing: "True", progWhy: v1.ReasonReloading},
		"refused": {live: live("False", v1.ReasonConfigurationRefused), ready: "False", readyWhy: v1.ReasonConfigurationRefused,
			progressing: "False", progWhy: ReasonRolloutComplete},
		"unreachable": {live: live("Unknown", v1.ReasonStatusUnreachable), ready: "True", readyWhy: ReasonAllReplicasReady,
			progressing: "False", progWhy: ReasonRolloutComplete},
	}
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
			gw.Spec.Replicas = ptr.To(int32(2))
			st := computeStatus(gw, deploymentWith(4, ready), nil, nil, nil, tc.live, now)
			assertCondition(t, st.Conditions, v1.ConditionReady, tc.ready, tc.readyWhy)
			assertCondition(t, st.Conditions, v1.ConditionProgressing, tc.progressing, tc.progWhy)
			assertCondition(t, st.Conditions, v1.ConditionLive, tc.live.condition.Status, tc.live.condition.Reason)
			assert.Equal(t, tc.live.replicas, st.LiveReplicas)
		})
	}
}

// TestStalledCondition: Stalled takes the first of Degraded, Ready and
// Accepted that fails for a reason no retry clears, and nothing else.
func TestStalledCondition(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: "m"}
	}
	fine := []metav1.Condition{cond(v1.ConditionDegraded, "False", ReasonChildrenApplied), cond(v1.ConditionReady, "True", ReasonAllReplicasReady),
		cond(v1.ConditionAccepted, "True", v1.ReasonAccepted)}
	with := func(i int, c metav1.Condition) []metav1.Condition {
		out := append([]metav1.Condition(nil), fine...)
		out[i] = c
		return out
	}
	tests := map[string]struct {
		conds  []metav1.Condition
		reason string // empty: not stalled
	}{
		"all fine":         {conds: fine},
		"rolling out":      {conds: with(1, cond(v1.ConditionReady, "False", ReasonReplicasNotReady))},
		"reloading":        {conds: with(1, cond(v1.ConditionReady, "False", v1.ReasonReloading))},
		"apply retried":    {conds: with(0, cond(v1.ConditionDegraded, "True", ReasonApplyFailed))},
		"image not pulled": {conds: with(1, cond(v1.ConditionReady, "False", "ImagePullBackOff")), reason: "ImagePullBackOff"},
		"nginx refused":    {conds: with(1, cond(v1.ConditionReady, "False", v1.ReasonConfigurationRefused)), reason: v1.ReasonConfigurationRefused},
		"host owned":       {conds: with(2, cond(v1.ConditionAccepted, "False", v1.ReasonHostOwned)), reason: v1.ReasonHostOwned},
		"degraded names it first": {conds: []metav1.Condition{cond(v1.ConditionDegraded, "True", ReasonRolloutStuck),
			cond(v1.ConditionReady, "False", "CrashLoopBackOff"), fine[2]}, reason: ReasonRolloutStuck},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := stalledCondition(tc.conds...)
			if tc.reason == "" {
				assert.Equal(t, metav1.ConditionFalse, c.Status)
				assert.Equal(t, v1.ReasonNotStalled, c.Reason)
				return
			}
			assert.Equal(t, metav1.ConditionTrue, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Contains(t, c.Message, ": m")
		})
	}
}
