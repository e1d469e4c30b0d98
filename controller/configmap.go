package controller

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/render"
)

// Where the gateway pods listen and what they read are the renderer's:
// the Deployment declares the ports and mounts the key the configuration
// is written for.
const (
	// HTTPPort is the unprivileged port the gateway pods serve routes on.
	HTTPPort = render.HTTPPort
	// HealthPort serves HealthPath only (render.HealthPort).
	HealthPort = render.HealthPort
	// HealthPath answers 200 while nginx runs.
	HealthPath = render.HealthPath

	configKey        = render.ConfigKey
	resolverVariable = render.ResolverVariable
)

// desiredConfigMap is the ConfigMap N-config holding gw's rendered nginx
// configuration template under configKey.
func desiredConfigMap(gw *v1.APIGateway, config string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(configMapName(gw), gw.Namespace).
		WithLabels(childLabels(gw)).
		WithOwnerReferences(ownerReference(gw)).
		WithData(map[string]string{configKey: config})
}
