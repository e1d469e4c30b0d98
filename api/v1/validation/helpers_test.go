package validation

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// validGateway is a defaulted gateway that passes validation; each test
// changes what it is about.
func validGateway() *v1.APIGateway {
	return &v1.APIGateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "APIGateway"},
		ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "default"},
		Spec: v1.APIGatewaySpec{
			Image:    "nginx:1.27",
			Replicas: ptr.To[int32](2),
			Routes: []v1.Route{
				route("/users/", "user-service", 8080),
				route("/products/", "product-service", 8081),
			},
			TLS: []v1.GatewayTLS{{Hosts: []string{"api.example.com"}, SecretName: "api-tls"}},
		},
	}
}

// route is a Prefix route on api.example.com.
func route(path, svc string, port int32) v1.Route {
	return v1.Route{Host: "api.example.com", Path: path, PathType: v1.PathTypePrefix, BackendService: v1.BackendService{Name: svc, Port: port}}
}

// gatewayWith returns validGateway changed by mutate.
func gatewayWith(mutate func(*v1.APIGateway)) *v1.APIGateway {
	gw := validGateway()
	if mutate != nil {
		mutate(gw)
	}
	return gw
}
