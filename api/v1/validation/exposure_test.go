package validation

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// parent is a reference to Gateway name, in the gateway's own namespace
// unless namespace is set.
func parent(name string, opts ...func(*v1.ParentGatewayReference)) v1.ParentGatewayReference {
	p := v1.ParentGatewayReference{Name: name}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func inNamespace(ns string) func(*v1.ParentGatewayReference) {
	return func(p *v1.ParentGatewayReference) { p.Namespace = ptr.To(ns) }
}

func listener(name string) func(*v1.ParentGatewayReference) {
	return func(p *v1.ParentGatewayReference) { p.SectionName = ptr.To(name) }
}

// exposedBy turns gw into one exposed through HTTPRoutes attached to refs:
// without spec.tls, which that exposure refuses.
func exposedBy(gw *v1.APIGateway, refs ...v1.ParentGatewayReference) {
	gw.Spec.TLS = nil
	gw.Spec.Exposure = &v1.Exposure{Type: v1.ExposureHTTPRoute, HTTPRoute: &v1.HTTPRouteExposure{ParentRefs: refs}}
}

func TestValidateExposure(t *testing.T) {
	const (
		invalid   = field.ErrorTypeInvalid
		required  = field.ErrorTypeRequired
		forbidden = field.ErrorTypeForbidden
	)
	const refs = "spec.exposure.httpRoute.parentRefs"
	tests := map[string]struct {
		mutate func(*v1.APIGateway)
		want   []wantErr
	}{
		"Ingress, with tls and a class": {mutate: func(gw *v1.APIGateway) {
			gw.Spec.IngressClassName = ptr.To("nginx")
			gw.Spec.Exposure = &v1.Exposure{Type: v1.ExposureIngress}
		}},
		"HTTPRoute to one Gateway":                    {mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("public")) }},
		"HTTPRoute to two Gateways":                   {mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("public"), parent("internal")) }},
		"HTTPRoute to a Gateway of another namespace": {mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("public", inNamespace("infra"))) }},
		"two listeners of one Gateway, by sectionName": {mutate: func(gw *v1.APIGateway) {
			exposedBy(gw, parent("public", listener("http")), parent("public", listener("https")))
		}},
		"every field of a reference set": {mutate: func(gw *v1.APIGateway) {
			exposedBy(gw, parent("public", inNamespace("infra"), listener("https")))
		}},
		// Gateway API compares references as written, and so does the
		// schema: the Gateway's own namespace spelt out is another
		// reference, and HTTPRoutes with both are accepted.
		"one Gateway with and without its namespace": {mutate: func(gw *v1.APIGateway) {
			exposedBy(gw, parent("public"), parent("public", inNamespace("default")))
		}},
		"32 parentRefs": {mutate: func(gw *v1.APIGateway) { exposedBy(gw, manyParents(32)...) }},

		"type unknown": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Exposure = &v1.Exposure{Type: "LoadBalancer"} },
			want:   []wantErr{{"spec.exposure.type", field.ErrorTypeNotSupported, `supported values: "Ingress", "HTTPRoute"`, RuleExposure}},
		},
		"type unset": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Exposure = &v1.Exposure{} },
			want:   []wantErr{{"spec.exposure.type", required, `"Ingress" or "HTTPRoute"`, RuleExposure}},
		},
		"httpRoute with type Ingress": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Exposure = &v1.Exposure{Type: v1.ExposureIngress, HTTPRoute: &v1.HTTPRouteExposure{ParentRefs: []v1.ParentGatewayReference{parent("public")}}}
			},
			want: []wantErr{{"spec.exposure.httpRoute", forbidden, "allowed only with type HTTPRoute", RuleExposure}},
		},
		"HTTPRoute without httpRoute": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS, gw.Spec.Exposure = nil, &v1.Exposure{Type: v1.ExposureHTTPRoute} },
			want:   []wantErr{{"spec.exposure.httpRoute", required, "the Gateways to attach to", RuleParentRefs}},
		},
		"HTTPRoute with no parentRefs": {
			mutate: func(gw *v1.APIGateway) { exposedBy(gw) },
			want:   []wantErr{{refs, required, "at least one Gateway", RuleParentRefs}},
		},
		"namespace upper case": {
			mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("public", inNamespace("Infra"))) },
			want:   []wantErr{{refs + "[0].namespace", invalid, "must be the name of a Namespace", RuleParentRefs}},
		},
		"namespace with a dot": {
			mutate: func(gw *v1.APIGateway) {
				exposedBy(gw, parent("public"), parent("public", inNamespace("infra.example")))
			},
			want: []wantErr{{refs + "[1].namespace", invalid, "a lower-case DNS label", RuleParentRefs}},
		},
		"namespace empty": {
			mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("public", inNamespace(""))) },
			want:   []wantErr{{refs + "[0].namespace", invalid, "must be the name of a Namespace", RuleParentRefs}},
		},
		"name missing": {
			mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("")) },
			want:   []wantErr{{refs + "[0].name", required, "the Gateway's name", RuleParentRefs}},
		},
		"name not a DNS subdomain": {
			mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("Public_GW")) },
			want:   []wantErr{{refs + "[0].name", invalid, "must be the name of a Gateway", RuleParentRefs}},
		},
		"sectionName not a DNS subdomain": {
			mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("public", listener("HTTPS"))) },
			want:   []wantErr{{refs + "[0].sectionName", invalid, "must be the name of a listener", RuleParentRefs}},
		},
		"every field of a reference wrong": {
			mutate: func(gw *v1.APIGateway) {
				exposedBy(gw, parent("Public", inNamespace("Infra"), listener("HTTPS")))
			},
			want: []wantErr{
				{refs + "[0].namespace", invalid, "", RuleParentRefs},
				{refs + "[0].name", invalid, "", RuleParentRefs},
				{refs + "[0].sectionName", invalid, "", RuleParentRefs},
			},
		},
		"one Gateway twice": {
			mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("public"), parent("internal"), parent("public")) },
			want:   []wantErr{{refs + "[2]", field.ErrorTypeDuplicate, "same Gateway and listener as parentRefs[0]", RuleParentRefs}},
		},
		"one listener twice": {
			mutate: func(gw *v1.APIGateway) {
				exposedBy(gw, parent("public", inNamespace("infra"), listener("https")), parent("public", inNamespace("infra"), listener("https")))
			},
			want: []wantErr{{refs + "[1]", field.ErrorTypeDuplicate, "same Gateway and listener as parentRefs[0]", RuleParentRefs}},
		},
		"a Gateway and one of its listeners": {
			mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("public"), parent("public", listener("https"))) },
			want: []wantErr{{refs + "[1]", invalid,
				"parentRefs[0] names the same Gateway: references to one Gateway must each name a listener (sectionName)", RuleParentRefs}},
		},
		"a listener of a Gateway, then the Gateway": {
			mutate: func(gw *v1.APIGateway) {
				exposedBy(gw, parent("public", inNamespace("infra"), listener("https")), parent("other"), parent("public", inNamespace("infra")))
			},
			want: []wantErr{{refs + "[2]", invalid, "parentRefs[0] names the same Gateway", RuleParentRefs}},
		},
		"tls with HTTPRoute": {
			mutate: func(gw *v1.APIGateway) {
				exposedBy(gw, parent("public"))
				gw.Spec.TLS = validGateway().Spec.TLS
			},
			want: []wantErr{{"spec.tls", forbidden, "TLS is terminated by the parent Gateway's listeners", RuleExposure}},
		},
		"ingressClassName with HTTPRoute": {
			mutate: func(gw *v1.APIGateway) {
				exposedBy(gw, parent("public"))
				gw.Spec.IngressClassName = ptr.To("nginx")
			},
			want: []wantErr{{"spec.ingressClassName", forbidden, "which exposure type HTTPRoute does not create", RuleExposure}},
		},
		// Nothing else of a list too long is checked, not even the
		// references it repeats.
		"33 parentRefs": {
			mutate: func(gw *v1.APIGateway) {
				exposedBy(gw, append(manyParents(32), parent("g0"))...)
				gw.Spec.IngressClassName = ptr.To("nginx")
			},
			want: []wantErr{{refs, field.ErrorTypeTooMany, "must have at most 32 items", RuleParentRefs}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			checkErrors(t, tc.want, Validate(nil, gatewayWith(tc.mutate)))
		})
	}
}

// manyParents references n distinct Gateways.
func manyParents(n int) []v1.ParentGatewayReference {
	refs := make([]v1.ParentGatewayReference, n)
	for i := range refs {
		refs[i] = parent(fmt.Sprintf("g%d", i))
	}
	return refs
}
