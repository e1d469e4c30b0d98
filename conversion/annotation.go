package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/api/v1alpha1"
)

// DataAnnotation is the annotation on a v1alpha1 APIGateway that carries the
// v1 data v1alpha1 has no field for, so that a v1 object read and written
// back through v1alpha1 loses nothing. It exists only on v1alpha1 objects:
// converting to v1 restores its data and removes it. Objects with no
// v1-only data do not get it.
//
// Its value is one line of JSON, an object with up to two keys:
//
//   - "spec": the v1 spec without what v1alpha1 carries itself (image,
//     replicas, each route's backendService). Routes are listed, with host,
//     path and pathType, only when one of them is not a plain Prefix route,
//     and then all of them, in order, so they can be matched again.
//   - "annotation": the value this annotation had on the v1 object itself,
//     in the unlikely case it had one, so that it too comes back.
//
// For example, for an Exact route beside a Prefix one, and a TLS block:
//
//	{"spec":{"routes":[{"host":"api.example.com","path":"/users/","pathType":"Exact"},{"host":"api.example.com","path":"/products/","pathType":"Prefix"}],"tls":[{"hosts":["api.example.com"],"secretName":"api-tls"}]}}
//
// A value that is not exactly what this package would write (hand-written or
// reformatted JSON, other text, or data beyond the v1 schema's size limits,
// which no stored v1 object has) is not ours: it is kept on the object as it
// is, in both directions, and nothing is restored from it. Conversion must
// not fail (a failing conversion makes the object unreadable in every
// version, and breaks lists), and guessing at foreign text could turn a
// user's note into gateway configuration.
const DataAnnotation = "conversion.example.com/v1-spec"

// payload is the decoded value of DataAnnotation.
type payload struct {
	// Spec holds the v1-only data: a v1 spec whose image, replicas and
	// route backends are unset. Nil when the spec had no v1-only data.
	Spec *v1.APIGatewaySpec `json:"spec,omitempty"`
	// Annotation is the value DataAnnotation had on the v1 object, if any.
	Annotation *string `json:"annotation,omitempty"`
}

// annotationFor returns the DataAnnotation value that lets a v1alpha1
// object carry spec and the v1 object's annotations, and false when none is
// needed.
func annotationFor(spec *v1.APIGatewaySpec, annotations map[string]string) (string, bool, error) {
	var own *string
	if value, found := annotations[DataAnnotation]; found {
		if _, ours := decodeAnnotation(value); !ours && specIsPlain(spec) {
			// Foreign text with nothing to add: pass it through unchanged,
			// as V1alpha1ToV1 will.
			return value, true, nil
		}
		own = &value
	}
	return encodeAnnotation(payload{Spec: spec, Annotation: own})
}

// encodeAnnotation writes p in its one canonical form, and false when it
// holds nothing worth keeping.
func encodeAnnotation(p payload) (string, bool, error) {
	var out struct {
		Spec       json.RawMessage `json:"spec,omitempty"`
		Annotation *string         `json:"annotation,omitempty"`
	}
	out.Annotation = p.Annotation
	if p.Spec != nil && !specIsPlain(p.Spec) {
		spec, err := v1OnlyJSON(p.Spec)
		if err != nil {
			return "", false, err
		}
		out.Spec = spec
	}
	if out.Spec == nil && out.Annotation == nil {
		return "", false, nil
	}
	data, err := marshalPlain(out)
	if err != nil {
		return "", false, fmt.Errorf("encoding the %s annotation: %w", DataAnnotation, err)
	}
	return string(data), true, nil
}

// v1OnlyJSON encodes spec without the fields v1alpha1 carries itself: the
// full encoding decoded into maps, without image, replicas and either the
// routes (when all are plain) or each route's backendService, and encoded
// again, which sorts the keys of every object: one canonical form. It
// removes known keys instead of listing the v1-only fields, so a field v1
// gains later is kept without a change here.
func v1OnlyJSON(spec *v1.APIGatewaySpec) (json.RawMessage, error) {
	full, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the v1 spec: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(full))
	dec.UseNumber() // keep integers exact
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		return nil, fmt.Errorf("re-reading the v1 spec: %w", err)
	}
	delete(fields, "image")
	delete(fields, "replicas")
	if routesArePlain(spec.Routes) {
		delete(fields, "routes")
	} else if routes, ok := fields["routes"].([]any); ok {
		for _, r := range routes {
			if route, ok := r.(map[string]any); ok {
				delete(route, "backendService")
			}
		}
	}
	return marshalPlain(fields)
}

// marshalPlain is json.Marshal without HTML escaping: the annotation is
// never embedded in HTML, and the API server limits all annotations of an
// object together to 256 KiB, against which escaping each '&' of a path as
// six bytes (\u0026) counted five times over.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// htmlEscaped is s as encoding/json wrote it with HTML escaping, its
// default: '<', '>' and '&' as \u003c, \u003e and \u0026 (U+2028 and
// U+2029 it escapes either way).
func htmlEscaped(s string) string {
	var buf bytes.Buffer
	json.HTMLEscape(&buf, []byte(s))
	return buf.String()
}

func routesArePlain(routes []v1.Route) bool {
	for i := range routes {
		if !routeIsPlain(&routes[i]) {
			return false
		}
	}
	return true
}

// decodeAnnotation reads a DataAnnotation value, and reports whether it is
// ours: exactly what annotationFor writes for the v1 object it decodes to,
// or what it wrote before it stopped escaping HTML (the same bytes through
// json.HTMLEscape), which clients that read a v1alpha1 object then may
// still send back. Anything else, even valid JSON in a similar shape, is a
// user's text that conversion must neither interpret nor lose.
func decodeAnnotation(value string) (payload, bool) {
	var p payload
	if err := json.Unmarshal([]byte(value), &p); err != nil {
		return payload{}, false
	}
	if p.Spec != nil && !validation.WithinSizeLimits(p.Spec) {
		// Never what annotationFor wrote: the API server holds every v1
		// object to these limits. Restored, such data would meet no
		// schema on the way in (a write through v1alpha1 is checked
		// against v1alpha1's), and the route index would make a key per
		// route and parent Gateway of it.
		return payload{}, false
	}
	spec := p.Spec
	if spec == nil {
		spec = &v1.APIGatewaySpec{}
	}
	var annotations map[string]string
	if p.Annotation != nil {
		// Terminates: the inner value is shorter than value.
		annotations = map[string]string{DataAnnotation: *p.Annotation}
	}
	again, ok, err := annotationFor(spec, annotations)
	if err != nil || !ok {
		return payload{}, false
	}
	if again != value && htmlEscaped(again) != value {
		return payload{}, false
	}
	return p, true
}

// restoreSpec rebuilds a v1 spec from a v1alpha1 spec and the v1-only data
// kept for it (nil when there was none). Spec-level v1-only fields (tls,
// ingressClassName, resources, and any v1 gains later) are restored as they
// were. Routes are matched by host and path: each v1alpha1 route takes the
// v1-only fields (pathType, ...) of the first not yet taken kept route with
// the same host and path, in list order; a route without such a partner
// (one a v1alpha1 client added, or whose host or prefix it changed) gets the
// v1alpha1 meaning, pathType Prefix. Kept routes left without a partner are
// dropped. Backends are not part of the match: a v1alpha1 client may change a
// route's Service and keep its pathType.
func restoreSpec(in *v1alpha1.APIGatewaySpec, kept *v1.APIGatewaySpec) v1.APIGatewaySpec {
	plain := specToV1(in)
	if kept == nil {
		return plain
	}
	out := *kept.DeepCopy()
	out.Image = plain.Image
	out.Replicas = plain.Replicas
	out.Routes = restoreRoutes(plain.Routes, kept.Routes)
	return out
}

// restoreRoutes applies restoreSpec's route rule to routes, the plain
// mapping of the v1alpha1 routes, and returns the result.
func restoreRoutes(routes, kept []v1.Route) []v1.Route {
	taken := make([]bool, len(kept))
	for i := range routes {
		for j := range kept {
			if taken[j] || kept[j].Host != routes[i].Host || kept[j].Path != routes[i].Path {
				continue
			}
			taken[j] = true
			restored := *kept[j].DeepCopy()
			restored.BackendService = routes[i].BackendService
			routes[i] = restored
			break
		}
	}
	return routes
}

// restoreAnnotation returns annotations, a copy owned by the caller, without
// DataAnnotation, or with the value the v1 object had for it.
func restoreAnnotation(annotations map[string]string, own *string) map[string]string {
	if own != nil {
		annotations[DataAnnotation] = *own
		return annotations
	}
	delete(annotations, DataAnnotation)
	if len(annotations) == 0 {
		// An empty map and none encode alike (omitempty); none is what the
		// v1 object most likely had.
		return nil
	}
	return annotations
}
