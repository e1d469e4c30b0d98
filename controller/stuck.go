package controller

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"example.com/apigateway-operator/reloader"
)

// stuckReasons are the kubelet's reasons for a container that waits and
// will not start until someone acts: the image cannot be pulled (a wrong
// name or tag, a private registry without a pull secret), the container
// cannot be created, or it exits as it starts. Ready takes the reason as
// its own, so `kubectl get agw` shows it (readyCondition). Other waiting
// reasons (ContainerCreating, PodInitializing) pass by themselves.
var stuckReasons = map[string]bool{
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"ErrImageNeverPull":          true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"CrashLoopBackOff":           true,
}

// stuckContainer is a container of a gateway pod the kubelet cannot
// start, and why, in its words.
type stuckContainer struct {
	pod, container, image, reason, message string
}

func (s stuckContainer) String() string {
	return fmt.Sprintf("pod %s, container %s (image %q): %s: %s",
		s.pod, s.container, s.image, s.reason, reloader.Bound(s.message, liveMessageSize))
}

// stuckStatuses keeps, of a pod's container statuses, those waiting for
// one of stuckReasons: their name, image and waiting state. The pod cache
// keeps no others (slimPod).
func stuckStatuses(statuses []corev1.ContainerStatus) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, s := range statuses {
		if w := s.State.Waiting; w != nil && stuckReasons[w.Reason] {
			out = append(out, corev1.ContainerStatus{Name: s.Name, Image: s.Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}})
		}
	}
	return out
}

// stuckContainers are the containers of the gateway's own pods (ownPods)
// that wait for one of stuckReasons, init containers first (the others
// wait for them), sorted by pod.
func stuckContainers(pods []corev1.Pod) []stuckContainer {
	var out []stuckContainer
	for i := range pods {
		p := &pods[i]
		for _, s := range stuckStatuses(append(append([]corev1.ContainerStatus(nil),
			p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)) {
			out = append(out, stuckContainer{pod: p.Name, container: s.Name, image: s.Image,
				reason: s.State.Waiting.Reason, message: s.State.Waiting.Message})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].pod < out[j].pod })
	return out
}
