package conversion

import (
	"encoding/json"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/api/v1alpha1"
)

// V1ToV1alpha1 converts the v1 object src into dst, keeping whatever v1alpha1
// cannot express in the DataAnnotation of dst so that V1alpha1ToV1 can give
// src back. It never modifies src, leaves dst's TypeMeta alone (the caller
// owns the apiVersion and kind) and changes no metadata but that annotation.
// The error is only for a JSON encoder failure, which cannot happen for
// objects that came from JSON.
func V1ToV1alpha1(src *v1.APIGateway, dst *v1alpha1.APIGateway) error {
	meta := src.ObjectMeta.DeepCopy()
	value, ok, err := annotationFor(&src.Spec, meta.Annotations)
	if err != nil {
		return err
	}
	if ok {
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations[DataAnnotation] = value
	}
	dst.ObjectMeta = *meta
	dst.Spec = specToV1alpha1(&src.Spec)
	dst.Status = *src.Status.DeepCopy()
	return nil
}

// V1alpha1ToV1 converts the v1alpha1 object src into dst. When src carries a
// DataAnnotation written by V1ToV1alpha1, the v1-only data in it is restored
// (see restoreSpec for routes a v1alpha1 client edited) and the annotation is
// removed; a value of that annotation in any other form is left in place
// untouched, as user data. It never modifies src, never fails, leaves dst's
// TypeMeta alone and changes no metadata but that annotation.
func V1alpha1ToV1(src *v1alpha1.APIGateway, dst *v1.APIGateway) {
	meta := src.ObjectMeta.DeepCopy()
	spec := specToV1(&src.Spec)
	if value, found := meta.Annotations[DataAnnotation]; found {
		if data, ours := decodeAnnotation(value); ours {
			spec = restoreSpec(&src.Spec, data.Spec)
			meta.Annotations = restoreAnnotation(meta.Annotations, data.Annotation)
		}
	}
	dst.ObjectMeta = *meta
	dst.Spec = spec
	dst.Status = *src.Status.DeepCopy()
}

// specToV1alpha1 is the plain field mapping from v1 to v1alpha1; it drops
// what v1alpha1 has no field for.
func specToV1alpha1(in *v1.APIGatewaySpec) v1alpha1.APIGatewaySpec {
	out := v1alpha1.APIGatewaySpec{Image: in.Image, Replicas: copyInt32(in.Replicas)}
	if in.Routes != nil {
		out.Routes = make([]v1alpha1.Route, len(in.Routes))
		for i := range in.Routes {
			out.Routes[i] = routeToV1alpha1(&in.Routes[i])
		}
	}
	return out
}

// specToV1 is the plain field mapping from v1alpha1 to v1: every route gets
// pathType Prefix, which is what a v1alpha1 prefix means.
func specToV1(in *v1alpha1.APIGatewaySpec) v1.APIGatewaySpec {
	out := v1.APIGatewaySpec{Image: in.Image, Replicas: copyInt32(in.Replicas)}
	if in.Routes != nil {
		out.Routes = make([]v1.Route, len(in.Routes))
		for i := range in.Routes {
			out.Routes[i] = routeToV1(&in.Routes[i])
		}
	}
	return out
}

func routeToV1alpha1(in *v1.Route) v1alpha1.Route {
	return v1alpha1.Route{
		Host:        in.Host,
		Prefix:      in.Path,
		ServiceName: in.BackendService.Name,
		ServicePort: in.BackendService.Port,
	}
}

func routeToV1(in *v1alpha1.Route) v1.Route {
	out := *routeDefaults.DeepCopy()
	out.Host = in.Host
	out.Path = in.Prefix
	out.PathType = v1.PathTypePrefix
	out.BackendService = v1.BackendService{Name: in.ServiceName, Port: in.ServicePort}
	return out
}

// routeDefaults is a v1 route with every field the v1 schema defaults
// (defaults.SchemaDefaults, from the Table) at its default and nothing
// else: what a v1alpha1 route, which has none of those fields, means in v1.
// The API server fills the same defaults into every v1 route it stores, so
// a route at its defaults stays plain (no DataAnnotation), and a v1 route
// field that gains a default needs no change here: without this, every
// stored gateway read through v1alpha1 would carry the annotation.
var routeDefaults = func() v1.Route {
	fields := map[string]any{}
	for _, d := range defaults.SchemaDefaults() {
		if slices.Equal(d.Lists, []string{"routes"}) {
			fields[d.Field] = d.Value
		}
	}
	var r v1.Route
	raw, err := json.Marshal(fields)
	if err == nil {
		err = json.Unmarshal(raw, &r)
	}
	if err != nil {
		// The Table is compiled in: a binary whose defaults do not fit
		// its own type must not start.
		panic("conversion: the route defaults of api/v1/defaults.Table do not fit v1.Route: " + err.Error())
	}
	return r
}()

// specIsPlain reports whether v1alpha1 can carry all of spec, that is whether
// the plain mapping there and back gives spec again. It compares whole
// specs, so a field v1 gains later counts as v1-only without a code change.
func specIsPlain(spec *v1.APIGatewaySpec) bool {
	alpha := specToV1alpha1(spec)
	back := specToV1(&alpha)
	return apiequality.Semantic.DeepEqual(&back, spec)
}

// routeIsPlain is specIsPlain for one route.
func routeIsPlain(route *v1.Route) bool {
	alpha := routeToV1alpha1(route)
	back := routeToV1(&alpha)
	return apiequality.Semantic.DeepEqual(&back, route)
}

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
