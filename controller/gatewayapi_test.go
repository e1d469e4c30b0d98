package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// routesThrough is a Reconciler's httpRoutes for unit tests: c on a cluster
// that serves HTTPRoutes, nil on one that does not.
func routesThrough(c client.Client) func(context.Context) (client.Client, error) {
	return func(context.Context) (client.Client, error) { return c, nil }
}

// httpRouteCRD is the HTTPRoute CRD as Gateway API v1.x ships it, once
// the API server has established it.
func httpRouteCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: HTTPRouteCRD, Annotations: map[string]string{"gateway.networking.k8s.io/bundle-version": "v1.6.0"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "gateway.networking.k8s.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "httproutes", Kind: "HTTPRoute"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{
					OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Description: "a long schema"},
				}},
				{Name: "v1beta1", Served: true},
			},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue},
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
		}},
	}
}

func TestServesHTTPRoutes(t *testing.T) {
	tests := map[string]struct {
		crd  func(*apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition
		want bool
	}{
		"established, v1 served": {want: true},
		"none":                   {crd: func(*apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition { return nil }},
		"not yet established": {crd: func(c *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
			c.Status.Conditions[1].Status = apiextensionsv1.ConditionFalse
			return c
		}},
		"no Established condition": {crd: func(c *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
			c.Status.Conditions = c.Status.Conditions[:1]
			return c
		}},
		"being deleted": {crd: func(c *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
			now := metav1.Now()
			c.DeletionTimestamp = &now
			return c
		}},
		"v1 not served": {crd: func(c *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
			c.Spec.Versions[0].Served = false
			return c
		}},
		"only v1beta1 (Gateway API before v0.6)": {crd: func(c *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
			c.Spec.Versions = c.Spec.Versions[1:]
			return c
		}},
		"another group's": {crd: func(c *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
			c.Spec.Group = "example.com"
			return c
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			crd := httpRouteCRD()
			if tc.crd != nil {
				crd = tc.crd(crd)
			}
			assert.Equal(t, tc.want, servesHTTPRoutes(crd))
		})
	}
}

// TestCRDCacheKeepsWhatServesHTTPRoutesReads: the cached CRD loses its
// schema, annotations and managed fields, and keeps its verdict.
func TestCRDCacheKeepsWhatServesHTTPRoutesReads(t *testing.T) {
	for name, crd := range map[string]*apiextensionsv1.CustomResourceDefinition{
		"served": httpRouteCRD(),
		"being deleted": func() *apiextensionsv1.CustomResourceDefinition {
			c := httpRouteCRD()
			now := metav1.Now()
			c.DeletionTimestamp = &now
			return c
		}(),
		"v1 not served": func() *apiextensionsv1.CustomResourceDefinition {
			c := httpRouteCRD()
			c.Spec.Versions[0].Served = false
			return c
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			want := servesHTTPRoutes(crd)
			crd.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
			out, err := crdCache().Transform(crd.DeepCopy())
			require.NoError(t, err)
			slim := out.(*apiextensionsv1.CustomResourceDefinition)
			assert.Equal(t, want, servesHTTPRoutes(slim))
			assert.Empty(t, slim.ManagedFields)
			assert.Empty(t, slim.Annotations)
			for _, v := range slim.Spec.Versions {
				assert.Nil(t, v.Schema, "version %s", v.Name)
			}
			again, err := crdCache().Transform(slim.DeepCopy())
			require.NoError(t, err)
			assert.Equal(t, slim, again, "the transform must be idempotent")
		})
	}
}
