package certs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/testenv"
)

// The operator's identity in a cluster (testenv.AsOperator).
const operatorNamespace = testenv.OperatorNamespace

func asOperator() *rest.Config { return env.AsOperator() }

func applyRBAC(t *testing.T) { env.ApplyRBAC(t) }

// TestSelfSignedWorksUnderTheGeneratedRBACAndTouchesNothingElse runs the
// operator as its ServiceAccount under manifests/rbac, with the flags'
// default names: it fills the shipped Secret, injects every bundle and
// serves all three webhooks (so its informers list and watch by name, which
// resourceNames allow), and may not touch any other webhook configuration,
// CRD or Secret, nor create, list or delete Secrets.
func TestSelfSignedWorksUnderTheGeneratedRBACAndTouchesNothingElse(t *testing.T) {
	ctx := context.Background()
	applyRBAC(t)
	var o Options
	o.BindFlags(newFlagSet())
	o.ExtraHosts = []string{"127.0.0.1", "localhost"}
	require.Equal(t, operatorNamespace, o.SecretNamespace)
	op := startInstance(t, o, instance{config: asOperator()})
	installWebhooks(t, o, op.port, op.port, op.port, nil)
	op.waitReady(t)
	waitConversionServed(t, operatorNamespace)
	require.NotEmpty(t, secretOf(t, o).Data[KeyCABundle], "the operator filled the shipped Secret")

	others := []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "rbac-test-other"}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "rbac-test-other"}},
		otherCRD(),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "rbac-test-other"}},
	}
	for _, obj := range others {
		require.NoError(t, env.Client.Create(ctx, obj))
		t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(env.Client.Delete(context.Background(), obj))) })
	}

	c, err := client.New(asOperator(), client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"rbac-test":"x"}}}`))
	// The Secret is left out: RBAC lets the reconciler patch any Secret
	// (a gateway's N-basic-auth, whose name it cannot know), and the
	// operator policy, which this test does not install, refuses the
	// others (manifests TestOperatorPolicies).
	for _, obj := range others[:3] {
		assert.True(t, apierrors.IsForbidden(c.Patch(ctx, obj, patch)), "patching %T %s is not forbidden", obj, obj.GetName())
	}
	secret := others[3].(*corev1.Secret)
	assert.True(t, apierrors.IsForbidden(c.Update(ctx, secret)), "updating another Secret")
	// The reconciler may get a Secret by name (the htpasswd a route's
	// basicAuth names) and create and patch one (a gateway's
	// N-basic-auth), in any namespace: RBAC cannot name them in advance.
	// It may still not list, update or delete one
	// (controller/basicauth.go, docs/security.md).
	assert.True(t, apierrors.IsForbidden(c.List(ctx, &corev1.SecretList{}, client.InNamespace(operatorNamespace))), "listing every Secret")
	assert.True(t, apierrors.IsForbidden(c.List(ctx, &admissionregistrationv1.MutatingWebhookConfigurationList{})), "listing every MutatingWebhookConfiguration")
	assert.True(t, apierrors.IsForbidden(c.List(ctx, &apiextensionsv1.CustomResourceDefinitionList{})), "listing every CRD")
	own := secretOf(t, o)
	assert.True(t, apierrors.IsForbidden(c.Delete(ctx, own)), "deleting its own Secret")

	// What the informers do: list by name.
	var secrets corev1.SecretList
	require.NoError(t, c.List(ctx, &secrets, client.InNamespace(operatorNamespace), client.MatchingFields{"metadata.name": o.SecretName}))
	assert.Len(t, secrets.Items, 1)
	var crds apiextensionsv1.CustomResourceDefinitionList
	require.NoError(t, c.List(ctx, &crds, client.MatchingFields{"metadata.name": o.CRD}))
	assert.Len(t, crds.Items, 1)
}

// otherCRD is a CRD that is not the operator's.
func otherCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.rbac-test.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "rbac-test.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}},
			}},
		},
	}
}

// TestRBACNamesTheFlagDefaults keeps the resourceNames of the rbac markers
// (provider.go) and the defaults of the --cert-* flags in step: the
// generated Role and ClusterRole name exactly the objects the operator
// touches when run with its defaults.
func TestRBACNamesTheFlagDefaults(t *testing.T) {
	var o Options
	o.BindFlags(newFlagSet())
	certNS, certName, err := o.certificateKey()
	require.NoError(t, err)
	webhookConfigs := []string{o.MutatingWebhookConfiguration, o.ValidatingWebhookConfiguration}
	want := map[string][]string{
		// The reconciler keeps its push key in one more Secret.
		"secrets":                         {o.SecretName, controller.DefaultPushKeySecret},
		"mutatingwebhookconfigurations":   webhookConfigs,
		"validatingwebhookconfigurations": webhookConfigs,
		// The reconciler reads one more CRD, by name too: Gateway API's
		// HTTPRoute CRD, which says whether HTTPRoutes are served.
		"customresourcedefinitions": {o.CRD, controller.HTTPRouteCRD},
		"certificates":              {certName},
	}
	namespaced := map[string]string{"secrets": o.SecretNamespace, "certificates": certNS}

	data, err := os.ReadFile(filepath.Join("..", "manifests", "rbac", "role.yaml"))
	require.NoError(t, err)
	got := map[string][]string{}
	gotNS := map[string]string{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var role rbacv1.Role // a ClusterRole decodes the same, with no namespace
		if err := dec.Decode(&role); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		for _, r := range role.Rules {
			for _, res := range r.Resources {
				if _, ok := want[res]; ok {
					got[res] = append(got[res], r.ResourceNames...)
					gotNS[res] = role.Namespace
				}
			}
		}
	}
	for res, names := range want {
		slices.Sort(names)
		slices.Sort(got[res])
		assert.Equal(t, names, got[res], "resourceNames of %s", res)
		assert.Equal(t, namespaced[res], gotNS[res], "namespace of the rule on %s", res)
	}
}
