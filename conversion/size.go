package conversion

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	v1 "example.com/apigateway-operator/api/v1"
)

// MaxV1alpha1AnnotationBytes is how large the annotations of an object's
// v1alpha1 form may be, counted as the API server counts them (the bytes of
// every key and value). The API server refuses a converted object whose
// annotations exceed apivalidation.TotalAnnotationSizeLimitB (256 KiB), and
// with it the whole GET, LIST or WATCH through v1alpha1; the 16 KiB below
// that are the margin for annotations added later by writers that bypass
// the validating webhook while it is down.
const MaxV1alpha1AnnotationBytes = apivalidation.TotalAnnotationSizeLimitB - 16<<10

// V1alpha1AnnotationBytes is the size of the annotations of gw's v1alpha1
// form, DataAnnotation included, as MaxV1alpha1AnnotationBytes counts it.
// It encodes only the annotation, not the whole object.
func V1alpha1AnnotationBytes(gw *v1.APIGateway) (int, error) {
	value, ok, err := annotationFor(&gw.Spec, gw.Annotations)
	if err != nil {
		return 0, err
	}
	total := 0
	for k, v := range gw.Annotations {
		if k != DataAnnotation {
			total += len(k) + len(v)
		}
	}
	if ok {
		total += len(DataAnnotation) + len(value)
	}
	return total, nil
}

// The terms of V1alpha1AnnotationBytesBound: each byte of a string counts
// as escBytes, JSON's longest escape, and each element of the encoding (a
// route, a TLS host, a parentRef...) gets elementBytes for its punctuation
// and key names.
const escBytes, elementBytes = 6, 64

// V1alpha1AnnotationBytesBound is an upper bound of V1alpha1AnnotationBytes
// that encodes nothing: every string counted as if each byte took six
// (JSON's longest escape) plus a generous allowance for each element's
// punctuation and key names. Admission checks the exact size only when the
// bound exceeds the limit, so the common gateway, kilobytes below it, pays
// a few additions.
func V1alpha1AnnotationBytesBound(gw *v1.APIGateway) int {
	total := len(DataAnnotation) + elementBytes
	for k, v := range gw.Annotations {
		// Our own value may be nested as the "annotation" key: count it
		// escaped too.
		total += len(k) + escBytes*len(v) + elementBytes
	}
	spec := &gw.Spec
	for i := range spec.Routes {
		r := &spec.Routes[i]
		total += escBytes*(len(r.Host)+len(r.Path)+len(r.PathType)) + elementBytes
	}
	for _, t := range spec.TLS {
		total += escBytes*len(t.SecretName) + elementBytes
		for _, h := range t.Hosts {
			total += escBytes*len(h) + elementBytes
		}
	}
	if spec.IngressClassName != nil {
		total += escBytes*len(*spec.IngressClassName) + elementBytes
	}
	if r := spec.Resources; r != nil {
		total += resourceListBound(r.Limits) + resourceListBound(r.Requests) + elementBytes
		for _, c := range r.Claims {
			total += escBytes*(len(c.Name)+len(c.Request)) + elementBytes
		}
	}
	for _, d := range spec.Delegations {
		total += escBytes*(len(d.Host)+len(d.Namespace)) + 2*elementBytes
		for _, p := range d.PathPrefixes {
			total += escBytes*len(p) + elementBytes
		}
	}
	if e := spec.Exposure; e != nil {
		total += escBytes*len(e.Type) + elementBytes
		if h := e.HTTPRoute; h != nil {
			total += elementBytes
			for i := range h.ParentRefs {
				total += parentRefBound(&h.ParentRefs[i])
			}
		}
	}
	return total
}

// parentRefBound bounds the encoding of a parentRef: its strings escaped,
// and two elements for the punctuation and the key names (all three
// fields set take 45 bytes besides the strings, the comma that follows
// included).
func parentRefBound(p *v1.ParentGatewayReference) int {
	n := escBytes*len(p.Name) + 2*elementBytes
	if p.Namespace != nil {
		n += escBytes * len(*p.Namespace)
	}
	if p.SectionName != nil {
		n += escBytes * len(*p.SectionName)
	}
	return n
}

func resourceListBound(l corev1.ResourceList) int {
	n := 0
	for name, q := range l {
		n += escBytes*(len(name)+len(q.String())) + elementBytes
	}
	return n
}
