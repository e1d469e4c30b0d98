package conversion

import (
	"encoding/json"
	"reflect"
	"sync"

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
// field, a list item, a map entry) gets elementBytes for its punctuation
// and key name (the longest key name of the API is under 40 bytes) or its
// number.
const escBytes, elementBytes = 6, 64

// V1alpha1AnnotationBytesBound is an upper bound of V1alpha1AnnotationBytes
// that encodes nothing: every string counted as if each byte took six
// (JSON's longest escape), plus a generous allowance for each element. It
// counts the whole spec, v1alpha1's fields too, and walks it by
// reflection, so a new field is counted without a change here. Admission
// checks the exact size only when the bound exceeds the limit, so the
// common gateway, kilobytes below it, pays a walk of its spec.
func V1alpha1AnnotationBytesBound(gw *v1.APIGateway) int {
	total := len(DataAnnotation) + elementBytes
	for k, v := range gw.Annotations {
		// Our own value may be nested as the "annotation" key: count it
		// escaped too.
		total += len(k) + escBytes*len(v) + elementBytes
	}
	return total + bound(reflect.ValueOf(&gw.Spec).Elem())
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// A sizer bounds the JSON encoding of a value of one type, escaped once
// more; sizers are built once per type (the walk of a 100-route spec
// then costs microseconds, not the reflection of every field's type).
type sizer func(reflect.Value) int

var sizers sync.Map // reflect.Type -> sizer

func bound(v reflect.Value) int { return sizerOf(v.Type())(v) }

func sizerOf(t reflect.Type) sizer {
	if s, ok := sizers.Load(t); ok {
		return s.(sizer)
	}
	// A recursive type finds its own entry while it is being built.
	var built sizer
	sizers.Store(t, sizer(func(v reflect.Value) int { return built(v) }))
	built = newSizer(t)
	sizers.Store(t, built)
	return built
}

func newSizer(t reflect.Type) sizer {
	if t.Kind() == reflect.Struct && t.Implements(marshalerType) {
		// A type that encodes itself, such as resource.Quantity.
		return func(v reflect.Value) int {
			data, err := json.Marshal(v.Interface())
			if err != nil {
				return elementBytes
			}
			return escBytes*len(data) + elementBytes
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		elem := sizerOf(t.Elem())
		return func(v reflect.Value) int {
			if v.IsNil() {
				return 0
			}
			return elem(v.Elem())
		}
	case reflect.Interface:
		return func(v reflect.Value) int {
			if v.IsNil() {
				return 0
			}
			return bound(v.Elem())
		}
	case reflect.String:
		return func(v reflect.Value) int { return escBytes*v.Len() + elementBytes }
	case reflect.Slice, reflect.Array:
		elem := sizerOf(t.Elem())
		return func(v reflect.Value) int {
			n := elementBytes
			for i := range v.Len() {
				n += elem(v.Index(i))
			}
			return n
		}
	case reflect.Map:
		key, elem := sizerOf(t.Key()), sizerOf(t.Elem())
		return func(v reflect.Value) int {
			n := elementBytes
			for it := v.MapRange(); it.Next(); {
				n += key(it.Key()) + elem(it.Value())
			}
			return n
		}
	case reflect.Struct:
		var fields []int
		var fieldSizers []sizer
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				fields = append(fields, i)
				fieldSizers = append(fieldSizers, sizerOf(f.Type))
			}
		}
		return func(v reflect.Value) int {
			n := elementBytes
			for j, i := range fields {
				n += fieldSizers[j](v.Field(i))
			}
			return n
		}
	default: // booleans and numbers
		return func(reflect.Value) int { return elementBytes }
	}
}
