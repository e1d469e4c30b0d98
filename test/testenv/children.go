package testenv

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Children are a gateway's four children as the API server has them.
type Children struct {
	ConfigMap  corev1.ConfigMap
	Deployment appsv1.Deployment
	Service    corev1.Service
	Ingress    networkingv1.Ingress
}

// GetChildren reads the four children of the gateway key through c: the
// ConfigMap named after it with "-config" and the Deployment, Service and
// Ingress of its name. The error names the first child it could not read.
func GetChildren(ctx context.Context, c client.Reader, key client.ObjectKey) (*Children, error) {
	ch := &Children{}
	for _, child := range []struct {
		kind, name string
		obj        client.Object
	}{
		{"ConfigMap", key.Name + "-config", &ch.ConfigMap},
		{"Deployment", key.Name, &ch.Deployment},
		{"Service", key.Name, &ch.Service},
		{"Ingress", key.Name, &ch.Ingress},
	} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: child.name}, child.obj); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", key, child.kind, err)
		}
	}
	return ch, nil
}
