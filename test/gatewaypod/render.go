package gatewaypod

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
)

// FromGateway renders gw as the operator does (controller.Children) and
// returns what each of its pods gets: the Deployment's pod spec and the
// ConfigMap's data.
func FromGateway(gw *v1.APIGateway, opts controller.ChildOptions) (corev1.PodSpec, map[string]string, error) {
	d, err := controller.Children(gw, opts)
	if err != nil {
		return corev1.PodSpec{}, nil, err
	}
	var dep appsv1.Deployment
	if err := convert(d.Deployment, &dep); err != nil {
		return corev1.PodSpec{}, nil, err
	}
	var cm corev1.ConfigMap
	if err := convert(d.ConfigMap, &cm); err != nil {
		return corev1.PodSpec{}, nil, err
	}
	return dep.Spec.Template.Spec, cm.Data, nil
}

func convert(from, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
}
