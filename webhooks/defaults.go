package webhooks

import (
	"strings"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// DefaultImage is the gateway image the operator fills in when neither the
// APIGateway nor its namespace names one. It is nginx's unprivileged build:
// it runs as a non-root user and listens on 8080, so gateway pods pass the
// restricted Pod Security Standard. The tag is pinned so every gateway the
// operator creates runs the same nginx until the operator is upgraded.
const DefaultImage = "nginxinc/nginx-unprivileged:1.29-alpine"

// DefaultReplicas is the number of gateway pods when neither the APIGateway
// nor the operator's configuration says otherwise.
const DefaultReplicas int32 = 1

// Defaults are the values the mutating webhook fills in.
type Defaults struct {
	// Image is the gateway image for an APIGateway without spec.image.
	Image string
	// Replicas is spec.replicas for an APIGateway without one.
	Replicas int32
}

// ForNamespace returns d with Image replaced by the namespace's
// example.com/default-gateway-image annotation when it sets one, so a
// namespace owner can choose the image for the gateways in it.
func (d Defaults) ForNamespace(annotations map[string]string) Defaults {
	if image := strings.TrimSpace(annotations[v1.DefaultImageAnnotation]); image != "" {
		d.Image = image
	}
	return d
}

// Default fills in what gw leaves unset and normalizes its host names. It
// only ever sets empty fields or rewrites a host into its canonical form, so
// applying it twice gives the same object as applying it once.
func Default(gw *v1.APIGateway, d Defaults) {
	spec := &gw.Spec
	if spec.Image == "" {
		spec.Image = d.Image
	}
	if spec.Replicas == nil {
		replicas := d.Replicas
		spec.Replicas = &replicas
	}
	for i := range spec.Routes {
		r := &spec.Routes[i]
		r.Host = validation.NormalizeHost(r.Host)
		if r.Path == "" {
			r.Path = "/"
		}
		if r.PathType == "" {
			r.PathType = v1.PathTypePrefix
		}
	}
	// TLS hosts are normalized the same way so that they keep matching the
	// route hosts they name.
	for i := range spec.TLS {
		for j := range spec.TLS[i].Hosts {
			spec.TLS[i].Hosts[j] = validation.NormalizeHost(spec.TLS[i].Hosts[j])
		}
	}
}
