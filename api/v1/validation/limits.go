package validation

import (
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "example.com/apigateway-operator/api/v1"
)

// WithinSizeLimits reports whether every list and every string of spec is
// within the length the v1 schema allows it (maxItems, maxLength), and
// every route's pathType and the exposure type one of the schema's values. The API
// server enforces these on every v1 write, but data can reach a v1 object
// without meeting the v1 schema: a write through v1alpha1 brings the
// v1-only fields back from the conversion annotation, which the v1alpha1
// schema never looks inside. Conversion restores nothing beyond these
// limits, and the route index computes no keys for such an object: with
// them, a few kilobytes of annotation became 200,000 index keys.
//
// It checks sizes only, never content: an object within them may still be
// invalid, which is Validate's to say.
func WithinSizeLimits(spec *v1.APIGatewaySpec) bool {
	if len(ValidateCounts(spec, nil)) > 0 || len(spec.Image) > maxImageLength {
		return false
	}
	for i := range spec.Routes {
		r := &spec.Routes[i]
		if len(r.Host) > maxHostLength || len(r.Path) > maxPathLength ||
			len(r.BackendService.Name) > validation.DNS1035LabelMaxLength || !knownPathType(r.PathType) {
			return false
		}
	}
	for _, t := range spec.TLS {
		if len(t.SecretName) > validation.DNS1123SubdomainMaxLength {
			return false
		}
		for _, h := range t.Hosts {
			if len(h) > maxHostLength {
				return false
			}
		}
	}
	if c := spec.IngressClassName; c != nil && len(*c) > maxIngressClassName {
		return false
	}
	if e := spec.Exposure; e != nil && e.Type != v1.ExposureIngress && e.Type != v1.ExposureHTTPRoute {
		return false
	}
	if e := spec.Exposure; e != nil && e.HTTPRoute != nil {
		for _, p := range e.HTTPRoute.ParentRefs {
			if !parentRefWithinSizeLimits(&p) {
				return false
			}
		}
	}
	return true
}

func parentRefWithinSizeLimits(p *v1.ParentGatewayReference) bool {
	return len(p.Name) <= validation.DNS1123SubdomainMaxLength &&
		(p.Namespace == nil || len(*p.Namespace) <= validation.DNS1123LabelMaxLength) &&
		(p.SectionName == nil || len(*p.SectionName) <= validation.DNS1123SubdomainMaxLength)
}

// knownPathType reports whether pt is a pathType the schema admits, or
// unset (the schema's default).
func knownPathType(pt v1.PathType) bool {
	return pt == "" || pt == v1.PathTypePrefix || pt == v1.PathTypeExact
}
