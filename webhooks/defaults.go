package webhooks

import (
	"strings"

	v1 "example.com/apigateway-operator/api/v1"
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
		r.Host = NormalizeHost(r.Host)
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
			spec.TLS[i].Hosts[j] = NormalizeHost(spec.TLS[i].Hosts[j])
		}
	}
}

// NormalizeHost lower-cases the ASCII letters of host and removes a single
// trailing dot (the DNS root of a fully qualified name). Only ASCII is
// folded: Unicode case folding maps some non-ASCII letters onto ASCII ones
// (the Kelvin sign K becomes k), and a host that is not ASCII must reach
// validation as the user wrote it and be rejected there. It works on bytes
// so that even invalid UTF-8 passes through unchanged.
func NormalizeHost(host string) string {
	// Only a single trailing dot is the root: "a.com.." is malformed and
	// stays as it is for validation to reject, which also keeps
	// NormalizeHost idempotent.
	if strings.HasSuffix(host, ".") && !strings.HasSuffix(host, "..") {
		host = host[:len(host)-1]
	}
	// Most hosts are already lower case: keep them, without a copy.
	if !strings.ContainsFunc(host, func(r rune) bool { return 'A' <= r && r <= 'Z' }) {
		return host
	}
	b := []byte(host)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}
