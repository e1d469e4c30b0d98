package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The operator reads its own Pod, for its image (reloaderImage).
// +kubebuilder:rbac:groups="",namespace=apigateway-operator-system,resources=pods,verbs=get

// fallbackReloaderImage is the reloader image of an operator that runs
// outside a pod (make run) without --reloader-image: the image name the
// manifests install.
const fallbackReloaderImage = "apigateway-operator:latest"

// managerContainer names the operator's container in manifests/manager.
const managerContainer = "manager"

// reloaderImage is the image whose binary the gateway pods run: flag when
// set, else the image of the operator's own container, read from its Pod
// (POD_NAMESPACE and POD_NAME, which the manifests set from the downward
// API), so that an upgrade of the operator's image is one of the
// reloader's too and no second image name can fall out of step.
func reloaderImage(ctx context.Context, reader client.Reader, flag string, getenv func(string) string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	ns, name := getenv("POD_NAMESPACE"), getenv("POD_NAME")
	if ns == "" || name == "" {
		return fallbackReloaderImage, nil
	}
	var pod corev1.Pod
	if err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
		return "", fmt.Errorf("reading the operator's own Pod %s/%s for its image (or set --reloader-image): %w", ns, name, err)
	}
	return podImage(&pod)
}

// podImage is the image of the operator's container in pod.
func podImage(pod *corev1.Pod) (string, error) {
	for _, c := range pod.Spec.Containers {
		if c.Name == managerContainer || len(pod.Spec.Containers) == 1 {
			return c.Image, nil
		}
	}
	return "", fmt.Errorf("pod %s/%s has no container %q: set --reloader-image", pod.Namespace, pod.Name, managerContainer)
}
