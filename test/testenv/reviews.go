package testenv

import (
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	v1 "example.com/apigateway-operator/api/v1"
)

// AdmissionReview is the body the API server sends the admission webhooks
// for a create of gw (which is not changed).
func AdmissionReview(uid string, gw *v1.APIGateway) ([]byte, error) {
	gw = gw.DeepCopy()
	gw.APIVersion, gw.Kind = v1.GroupVersion.String(), "APIGateway"
	raw, err := json.Marshal(gw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID(uid),
			Kind:      metav1.GroupVersionKind{Group: v1.GroupVersion.Group, Version: v1.GroupVersion.Version, Kind: "APIGateway"},
			Resource:  metav1.GroupVersionResource{Group: v1.GroupVersion.Group, Version: v1.GroupVersion.Version, Resource: "apigateways"},
			Name:      gw.Name,
			Namespace: gw.Namespace,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		},
	})
}

// ConversionReview is the body the API server sends the conversion webhook
// to convert objects (each one JSON object) to the desired apiVersion.
func ConversionReview(uid, desired string, objects ...[]byte) ([]byte, error) {
	raw := make([]runtime.RawExtension, len(objects))
	for i, o := range objects {
		raw[i] = runtime.RawExtension{Raw: o}
	}
	return json.Marshal(apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: types.UID(uid), DesiredAPIVersion: desired, Objects: raw},
	})
}
