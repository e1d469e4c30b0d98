package controller

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	v1 "example.com/apigateway-operator/api/v1"
)

// desiredConfigMap is the ConfigMap N-config holding gw's rendered nginx
// configuration template under configKey.
func desiredConfigMap(gw *v1.APIGateway, config string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(configMapName(gw), gw.Namespace).
		WithLabels(childLabels(gw)).
		WithOwnerReferences(ownerReference(gw)).
		WithData(map[string]string{configKey: config})
}
