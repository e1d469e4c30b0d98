package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestOwnPods: the pods asked (podTargets of ownPods) are those the
// gateway's Deployment made, through a ReplicaSet it controls, whatever
// else carries the gateway's labels; the ready ones first, at most the
// limit.
func TestOwnPods(t *testing.T) {
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "gw", UID: "dep"}}
	other := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "gw", UID: "other-dep"}}
	rs := func(uid types.UID, owner *appsv1.Deployment) metav1.PartialObjectMetadata {
		s := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "gw-" + string(uid), UID: uid}}
		if owner != nil {
			s.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
		}
		return s
	}
	sets := []metav1.PartialObjectMetadata{rs("old", dep), rs("new", dep), rs("foreign", other), rs("orphan", nil)}
	pod := func(name string, set types.UID, ready bool, tweak ...func(*corev1.Pod)) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}}
		if ready {
			p.Status.Conditions[0].Status = corev1.ConditionTrue
		}
		if set != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "gw-" + string(set), UID: set, Controller: ptr.To(true)}}
		}
		for _, f := range tweak {
			f(&p)
		}
		return p
	}
	notController := func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }
	tests := map[string]struct {
		pods  []corev1.Pod
		limit int
		want  []string // name, and "+" when ready
	}{
		"the Deployment's pods, ready first": {limit: 5,
			pods: []corev1.Pod{pod("b", "new", false), pod("c", "old", true), pod("a", "new", true)},
			want: []string{"a+", "c+", "b"}},
		"a labelled pod of no ReplicaSet": {limit: 5, pods: []corev1.Pod{pod("a", "new", true), pod("impostor", "", true)},
			want: []string{"a+"}},
		"a ReplicaSet of another Deployment": {limit: 5, pods: []corev1.Pod{pod("f", "foreign", true)}},
		"a ReplicaSet of no Deployment":      {limit: 5, pods: []corev1.Pod{pod("o", "orphan", true)}},
		"an owner that is not the controller": {limit: 5,
			pods: []corev1.Pod{pod("n", "new", true, notController)}},
		"terminating, finished, or without an IP": {limit: 5, pods: []corev1.Pod{
			pod("d", "new", true, func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }),
			pod("s", "new", false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
			pod("f", "new", false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
			pod("i", "new", false, func(p *corev1.Pod) { p.Status.PodIP = "" }),
			pod("a", "new", false)},
			want: []string{"a"}},
		"at most the limit, ready ones kept": {limit: 2,
			pods: []corev1.Pod{pod("a", "new", false), pod("b", "new", true), pod("c", "old", true), pod("d", "old", false)},
			want: []string{"b+", "c+"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, p := range podTargets(ownPods(dep, sets, tc.pods), tc.limit) {
				s := p.name
				if p.ready {
					s += "+"
				}
				got = append(got, s)
				assert.Equal(t, "10.0.0.1", p.ip)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestMaxPodReports(t *testing.T) {
	for replicas, want := range map[int32]int{1: 2, 2: 3, 4: 5, 5: 7, 100: 125} {
		gw := gateway("gw")
		gw.Spec.Replicas = ptr.To(replicas)
		assert.Equal(t, want, maxPodReports(gw), "%d replicas", replicas)
	}
	assert.Equal(t, 2, maxPodReports(&v1.APIGateway{}), "the default of 1")
}
