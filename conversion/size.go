package conversion

import (
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
