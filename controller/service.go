package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	v1 "example.com/apigateway-operator/api/v1"
)

// servicePort is the port of the gateway's Service; the Ingress sends to it.
const servicePort = 80

// desiredService is the ClusterIP Service N in front of gw's pods, port 80
// to the pods' named http port.
func desiredService(gw *v1.APIGateway) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(gw.Name, gw.Namespace).
		WithLabels(childLabels(gw)).
		WithOwnerReferences(ownerReference(gw)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(selectorLabels(gw)).
			WithPorts(corev1ac.ServicePort().
				WithName("http").
				WithProtocol(corev1.ProtocolTCP).
				WithPort(servicePort).
				WithTargetPort(intstr.FromString("http"))))
}
