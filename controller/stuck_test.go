package controller

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStuckContainers: a container waiting for a reason someone must act
// on is named with the kubelet's reason and words, init containers first;
// one on its way (ContainerCreating), running or terminated is not.
func TestStuckContainers(t *testing.T) {
	waiting := func(name, image, reason, message string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: image, Ready: false, RestartCount: 3,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
	}
	running := corev1.ContainerStatus{Name: "gateway", Image: "nginx:1", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	pod := func(name string, init, main []corev1.ContainerStatus) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.PodStatus{InitContainerStatuses: init, ContainerStatuses: main}}
	}
	long := strings.Repeat("x", 1000)
	tests := map[string]struct {
		pods []corev1.Pod
		want []string
	}{
		"running":  {pods: []corev1.Pod{pod("a", nil, []corev1.ContainerStatus{running})}},
		"creating": {pods: []corev1.Pod{pod("a", nil, []corev1.ContainerStatus{waiting("gateway", "nginx:1", "ContainerCreating", "")})}},
		"initialising": {pods: []corev1.Pod{pod("a", []corev1.ContainerStatus{{Name: "reloader", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}},
			[]corev1.ContainerStatus{waiting("gateway", "nginx:1", "PodInitializing", "")})}},
		"an image that cannot be pulled": {
			pods: []corev1.Pod{pod("a", nil, []corev1.ContainerStatus{waiting("gateway", "missing:1", "ImagePullBackOff", `Back-off pulling image "missing:1"`)})},
			want: []string{`pod a, container gateway (image "missing:1"): ImagePullBackOff: Back-off pulling image "missing:1"`}},
		"every reason someone acts on": {
			pods: []corev1.Pod{pod("a", nil, []corev1.ContainerStatus{
				waiting("c1", "i", "ErrImagePull", "m"), waiting("c2", "i", "ErrImageNeverPull", "m"),
				waiting("c3", "i", "InvalidImageName", "m"), waiting("c4", "i", "CreateContainerConfigError", "m"),
				waiting("c5", "i", "CreateContainerError", "m"), waiting("c6", "i", "CrashLoopBackOff", "m"),
			})},
			want: []string{
				`pod a, container c1 (image "i"): ErrImagePull: m`, `pod a, container c2 (image "i"): ErrImageNeverPull: m`,
				`pod a, container c3 (image "i"): InvalidImageName: m`, `pod a, container c4 (image "i"): CreateContainerConfigError: m`,
				`pod a, container c5 (image "i"): CreateContainerError: m`, `pod a, container c6 (image "i"): CrashLoopBackOff: m`,
			}},
		"the init container first, pods in order": {
			pods: []corev1.Pod{
				pod("b", nil, []corev1.ContainerStatus{waiting("gateway", "missing:1", "ErrImagePull", "m")}),
				pod("a", []corev1.ContainerStatus{waiting("reloader", "op:1", "ImagePullBackOff", "m")},
					[]corev1.ContainerStatus{waiting("gateway", "missing:1", "ImagePullBackOff", "m")}),
			},
			want: []string{`pod a, container reloader (image "op:1"): ImagePullBackOff: m`,
				`pod a, container gateway (image "missing:1"): ImagePullBackOff: m`, `pod b, container gateway (image "missing:1"): ErrImagePull: m`}},
		"a long message is cut": {
			pods: []corev1.Pod{pod("a", nil, []corev1.ContainerStatus{waiting("gateway", "i", "ErrImagePull", long)})},
			want: []string{`pod a, container gateway (image "i"): ErrImagePull: ` + long[:liveMessageSize-3] + "..."}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, s := range stuckContainers(tc.pods) {
				got = append(got, s.String())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestSlimPodKeepsStuckContainers: the pod cache keeps, of the container
// statuses, only the waiting state of the stuck ones.
func TestSlimPodKeepsStuckContainers(t *testing.T) {
	p := &corev1.Pod{Status: corev1.PodStatus{
		ContainerStatuses: []corev1.ContainerStatus{
			{Name: "gateway", Image: "missing:1", ImageID: "sha", RestartCount: 2, State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "m"}}},
			{Name: "sidecar", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "reloader", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}},
	}}
	obj, err := slimPod(p)
	assert.NoError(t, err)
	slim := obj.(*corev1.Pod)
	assert.Nil(t, slim.Status.InitContainerStatuses)
	assert.Equal(t, []corev1.ContainerStatus{{Name: "gateway", Image: "missing:1", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "m"}}}}, slim.Status.ContainerStatuses)
}
