package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/reloader"
)

func TestLiveStatus(t *testing.T) {
	current, old := strings.Repeat("c", 64), strings.Repeat("0", 64)
	rolled := appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	withReloader := deploymentWith(1, rolled)
	withReloader.Spec.Template.Annotations = map[string]string{PodInputsAnnotation: "d"}
	notReady := deploymentWith(1, appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2})
	notReady.Spec.Template.Annotations = withReloader.Spec.Template.Annotations
	legacy := func(hash string) *appsv1.Deployment {
		d := deploymentWith(1, rolled)
		d.Spec.Template.Annotations = map[string]string{ConfigHashAnnotation: hash}
		return d
	}
	serves := func(name, hash string) podReport {
		return podReport{name: name, ready: true, status: reloader.Status{Loaded: hash}}
	}
	refuses := func(name string, ready bool, msg string) podReport {
		return podReport{name: name, ready: ready, status: reloader.Status{Loaded: old,
			Refused: &reloader.Refusal{Hash: current, Reason: reloader.ReasonNginxTestFailed, Message: msg}}}
	}
	tests := map[string]struct {
		strategy v1.ConfigUpdateStrategy
		zero     bool // spec.replicas 0 (else 2)
		hash     string
		dep      *appsv1.Deployment
		failures []failure
		reports  []podReport
		status   metav1.ConditionStatus
		reason   string
		live     int32
		pending  bool
		message  []string // each in the message
	}{
		"every ready pod serves it": {hash: current, dep: withReloader, reports: []podReport{serves("a", current), serves("b", current)},
			status: "True", reason: v1.ReasonLive, live: 2, message: []string{"all 2 ready replicas serve configuration cccccccccccc"}},
		"a pod that is not ready does not count": {hash: current, dep: withReloader,
			reports: []podReport{serves("a", current), {name: "b", status: reloader.Status{Loaded: old}}},
			status:  "True", reason: v1.ReasonLive, live: 1},
		"a pod still on the previous one": {hash: current, dep: withReloader, reports: []podReport{serves("a", current), serves("b", old)},
			status: "False", reason: v1.ReasonReloading, live: 1, pending: true, message: []string{"1 of 2 ready replicas serve configuration cccccccccccc"}},
		"the Rollout strategy replaces the others": {strategy: v1.ConfigUpdateRollout, hash: current, dep: withReloader,
			reports: []podReport{serves("a", current), serves("b", old)}, status: "False", reason: ReasonRollingOut, live: 1, pending: true},
		"a ready pod refused it": {hash: current, dep: withReloader,
			reports: []podReport{serves("a", current), refuses("b", true, "nginx: [emerg] no name servers defined")},
			status:  "False", reason: v1.ReasonConfigurationRefused, live: 1,
			message: []string{"1 of 2 ready replicas serve configuration cccccccccccc", "pod b refused it (NginxTestFailed)", "no name servers defined"}},
		"a refusal and a pod still reloading": {hash: current, dep: withReloader,
			reports: []podReport{serves("a", old), refuses("b", true, "x")},
			status:  "False", reason: v1.ReasonConfigurationRefused, pending: true},
		"a pod that is not ready refused it": {hash: current, dep: withReloader,
			reports: []podReport{serves("a", current), refuses("b", false, "x")},
			status:  "False", reason: v1.ReasonConfigurationRefused, live: 1},
		"a refusal of an earlier configuration is history": {hash: current, dep: withReloader,
			reports: []podReport{serves("a", current), {name: "b", ready: true, status: reloader.Status{Loaded: current,
				Refused: &reloader.Refusal{Hash: old, Reason: reloader.ReasonNginxTestFailed}}}},
			status: "True", reason: v1.ReasonLive, live: 2},
		"a pod's status cannot be read": {hash: current, dep: withReloader,
			reports: []podReport{serves("a", current), {name: "b", ready: true, err: errors.New("connection refused")}},
			status:  "Unknown", reason: v1.ReasonStatusUnreachable, live: 1,
			message: []string{"pod b: connection refused", "NetworkPolicy"}},
		"a ready pod not read yet": {hash: current, dep: withReloader,
			reports: []podReport{serves("a", current), {name: "b", ready: true, unread: true}},
			status:  "Unknown", reason: v1.ReasonStatusUnreachable, live: 1,
			message: []string{"1 of 2 ready replicas serve", "of pod b is being read"}},
		"a pod not read yet and one still loading": {hash: current, dep: withReloader,
			reports: []podReport{serves("a", old), {name: "b", ready: true, unread: true}},
			status:  "False", reason: v1.ReasonReloading, pending: true},
		"a pod not ready and not read yet": {hash: current, dep: withReloader,
			reports: []podReport{serves("a", current), {name: "b", unread: true}},
			status:  "True", reason: v1.ReasonLive, live: 1},
		"no ready pod": {hash: current, dep: notReady, reports: []podReport{{name: "a", err: errors.New("refused")}},
			status: "False", reason: v1.ReasonNoReadyReplicas},
		"ready pods the cache does not list yet": {hash: current, dep: withReloader,
			status: "Unknown", reason: v1.ReasonStatusUnreachable, message: []string{"list none ready yet"}},
		"scaled to zero": {zero: true, hash: current, dep: withReloader, status: "False", reason: ReasonScaledToZero},
		"no Deployment":  {hash: current, status: "False", reason: ReasonDeploymentMissing},
		"routes refused by the renderer": {failures: []failure{{kind: "ConfigMap", reason: ReasonInvalidRoutes, err: errors.New("bad")}},
			dep: withReloader, status: "False", reason: ReasonInvalidRoutes, message: []string{"ConfigMap gw-config"}},
		"pods from before the reloader, rolled out": {hash: current, dep: legacy(current), status: "True", reason: v1.ReasonLive, live: 2,
			message: []string{"from before the reloader"}},
		"pods from before the reloader, another configuration": {hash: current, dep: legacy(old), status: "False", reason: ReasonRollingOut},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
			gw.Spec.Replicas = ptr.To(int32(2))
			if tc.zero {
				gw.Spec.Replicas = ptr.To(int32(0))
			}
			gw.Spec.ConfigUpdateStrategy = tc.strategy
			got := liveStatus(gw, tc.dep, tc.failures, tc.hash, tc.reports)
			assert.Equal(t, v1.ConditionLive, got.condition.Type)
			assert.Equal(t, tc.status, got.condition.Status, got.condition.Message)
			assert.Equal(t, tc.reason, got.condition.Reason, got.condition.Message)
			assert.Equal(t, tc.live, got.replicas, "liveReplicas")
			assert.Equal(t, tc.pending, got.pending, "pending")
			assert.NotEmpty(t, got.condition.Message)
			for _, m := range tc.message {
				assert.Contains(t, got.condition.Message, m)
			}
		})
	}
}

// TestLiveStatusBoundsWhatPodsSay: a pod's words reach the condition
// bounded, however many pods refuse and whatever they send.
func TestLiveStatusBoundsWhatPodsSay(t *testing.T) {
	current := strings.Repeat("c", 64)
	dep := deploymentWith(1, appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 100, UpdatedReplicas: 100, ReadyReplicas: 100, AvailableReplicas: 100})
	dep.Spec.Template.Annotations = map[string]string{PodInputsAnnotation: "d"}
	var reports []podReport
	for i := range 100 {
		reports = append(reports, podReport{name: strings.Repeat("p", 60) + string(rune('a'+i%26)), ready: true,
			status: reloader.Status{Refused: &reloader.Refusal{Hash: current, Reason: strings.Repeat("R", 500), Message: strings.Repeat("\x1b[31m", 5000)}}})
	}
	gw := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Spec.Replicas = ptr.To(int32(100))
	got := liveStatus(gw, dep, nil, current, reports)
	assert.Equal(t, v1.ReasonConfigurationRefused, got.condition.Reason)
	assert.Less(t, len(got.condition.Message), 2000, got.condition.Message)
	assert.Contains(t, got.condition.Message, "and 97 more")
	assert.NotContains(t, got.condition.Message, "\x1b")
}

func TestPollAfter(t *testing.T) {
	for waiting, want := range map[time.Duration]time.Duration{
		0:                500 * time.Millisecond,
		2 * time.Second:  500 * time.Millisecond,
		40 * time.Second: 5 * time.Second,
		10 * time.Minute: 15 * time.Second,
	} {
		assert.Equal(t, want, pollAfter(waiting), "after %s", waiting)
	}
}

func TestPollPods(t *testing.T) {
	gw := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
	now := time.Date(2026, 1, 1, 0, 1, 20, 0, time.UTC)
	gw.Status.Conditions = []metav1.Condition{{Type: v1.ConditionLive, Status: metav1.ConditionFalse,
		LastTransitionTime: metav1.NewTime(now.Add(-80 * time.Second))}}
	pending := liveState{pending: true}
	assert.Equal(t, 10*time.Second, pollPods(ctrl.Result{}, nil, gw, pending, now).RequeueAfter)
	assert.Equal(t, time.Second, pollPods(ctrl.Result{RequeueAfter: time.Second}, nil, gw, pending, now).RequeueAfter, "an earlier requeue stays")
	assert.Zero(t, pollPods(ctrl.Result{}, errors.New("x"), gw, pending, now).RequeueAfter, "an error is retried anyway")
	assert.Zero(t, pollPods(ctrl.Result{}, nil, gw, liveState{}, now).RequeueAfter)
}
