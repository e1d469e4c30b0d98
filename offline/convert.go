package offline

import (
	"fmt"

	"github.com/go-json-experiment/json"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/conversion"
)

// The conversion webhook's JSON options: objects are read and written here
// as the webhook reads and writes them, so a converted object is byte for
// byte the one the API server would get back.
var decodeOptions, encodeOptions = conversion.JSONOptions()

// Versions are the APIGateway versions the commands read and write.
var Versions = []string{v1.GroupVersion.Version, v1alpha1.GroupVersion.Version}

// toV1 decodes an APIGateway of either version into its v1 form, through
// conversion.V1alpha1ToV1 for v1alpha1, as the API server hands it to the
// webhooks.
func toV1(u *unstructured.Unstructured) (*v1.APIGateway, error) {
	raw, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	gw := &v1.APIGateway{}
	switch u.GetAPIVersion() {
	case v1.GroupVersion.String():
		err = json.Unmarshal(raw, gw, decodeOptions)
	case v1alpha1.GroupVersion.String():
		alpha := &v1alpha1.APIGateway{}
		if err = json.Unmarshal(raw, alpha, decodeOptions); err == nil {
			conversion.V1alpha1ToV1(alpha, gw)
		}
	default:
		return nil, fmt.Errorf("not an APIGateway version this operator serves: %s", u.GetAPIVersion())
	}
	if err != nil {
		return nil, fmt.Errorf("decoding the APIGateway: %w", err)
	}
	gw.APIVersion, gw.Kind = v1.GroupVersion.String(), kindAPIGateway
	return gw, nil
}

// fromV1 encodes gw in version (v1 or v1alpha1), through
// conversion.V1ToV1alpha1 for v1alpha1.
func fromV1(gw *v1.APIGateway, version string) (*unstructured.Unstructured, error) {
	var out any
	switch version {
	case v1.GroupVersion.Version:
		c := gw.DeepCopy()
		c.TypeMeta = metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: kindAPIGateway}
		out = c
	case v1alpha1.GroupVersion.Version:
		alpha := &v1alpha1.APIGateway{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: kindAPIGateway}}
		if err := conversion.V1ToV1alpha1(gw, alpha); err != nil {
			return nil, err
		}
		out = alpha
	default:
		return nil, fmt.Errorf("unknown version %q: want one of %v", version, Versions)
	}
	raw, err := json.Marshal(out, encodeOptions)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return u, nil
}

const kindAPIGateway = "APIGateway"

// Convert rewrites an APIGateway to version ("v1" or "v1alpha1") with the
// conversion webhook's own functions; an object already in that version is
// returned as it is, as the API server never converts those. What the
// encoding adds and the API server never stores (a null
// creationTimestamp, an empty status) is left out.
func Convert(u *unstructured.Unstructured, version string) (*unstructured.Unstructured, error) {
	if !IsAPIGateway(u) {
		return nil, fmt.Errorf("%s %s is not an APIGateway", u.GetAPIVersion(), u.GetKind())
	}
	if u.GroupVersionKind().Version == version {
		return u.DeepCopy(), nil
	}
	gw, err := toV1(u)
	if err != nil {
		return nil, err
	}
	out, err := fromV1(gw, version)
	if err != nil {
		return nil, err
	}
	tidy(out)
	return out, nil
}

// tidy drops the members the typed round trip adds to an object that had
// none: a null creationTimestamp and an empty status.
func tidy(u *unstructured.Unstructured) {
	if ts, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "creationTimestamp"); found && ts == nil {
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	}
	if status, ok := u.Object["status"].(map[string]any); ok && len(status) == 0 {
		delete(u.Object, "status")
	}
	if status, found := u.Object["status"]; found && status == nil {
		delete(u.Object, "status")
	}
}

// IsAPIGateway reports whether u is an APIGateway, of any version.
func IsAPIGateway(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == v1.GroupVersion.Group && gvk.Kind == kindAPIGateway
}
