package certs

import (
	"context"
	"testing"
	"time"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"example.com/apigateway-operator/test/testenv"
)

// certManagerScheme knows the built-in types, CRDs and cert-manager's types.
func certManagerScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(cmscheme.AddToScheme(scheme))
	return scheme
}

// startCAInjector runs cert-manager's own cainjector controllers for webhook
// configurations and CRDs in this process, as its Deployment would.
func startCAInjector(t *testing.T) {
	t.Helper()
	scheme := certManagerScheme()
	cfg := rest.CopyConfig(env.Config)
	// cainjector names its server-side apply field manager after this.
	cfg.UserAgent = "cainjector-test"
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		// As cainjector's own main: Secret data is read live, only
		// Secret metadata is cached.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	require.NoError(t, err)
	require.NoError(t, cainjector.RegisterAllInjectors(context.Background(), mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	}))
	env.StartManager(t, mgr)
}

// TestCertManagerModeWithCAInjector plays cert-manager's part: a
// Certificate, its Secret written as the CA issuer writes it (tls.crt,
// tls.key, ca.crt and the certificate-name annotation) and mounted at the
// cert directory, and cainjector filling the bundles from the
// inject-ca-from annotations. The API server then calls our webhooks.
func TestCertManagerModeWithCAInjector(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, env.Client, "certs-cm")
	env.InstallCertManagerCRDs(t)
	startCAInjector(t)

	cm, err := client.New(env.Config, client.Options{Scheme: certManagerScheme()})
	require.NoError(t, err)
	const name = "apigateway-operator-serving-cert"
	ca, leaf := issue(t)
	crt := &certmanagerv1.Certificate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: certmanagerv1.CertificateSpec{
			SecretName:  name,
			DNSNames:    leaf.cert.DNSNames,
			IPAddresses: []string{"127.0.0.1"},
			IssuerRef:   cmmeta.IssuerReference{Name: "selfsigned-ca", Kind: "Issuer"},
		},
	}
	require.NoError(t, cm.Create(ctx, crt))
	key, err := encodeKey(leaf.key)
	require.NoError(t, err)
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{
			certmanagerv1.CertificateNameKey:      name,
			certmanagerv1.IssuerNameAnnotationKey: "selfsigned-ca",
			certmanagerv1.IssuerKindAnnotationKey: "Issuer",
		}},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{KeyTLSCert: encodeCerts(leaf.cert), KeyTLSKey: key, KeyCABundle: encodeCerts(ca.cert)},
	}))
	dir := t.TempDir()
	writeCertFiles(t, dir, leaf)

	o := testOptions(t, ns, name)
	o.Mode, o.CertDir, o.Certificate = ModeCertManager, dir, ns+"/"+name
	op := startOperator(t, o)
	installWebhooks(t, o, op.port, op.port, op.port, map[string]string{injectCAFrom: ns + "/" + name})

	// Not ready while the Certificate is not Ready, whatever the bundles.
	require.ErrorContains(t, op.p.ReadyCheck(nil), "has no Ready condition yet")
	assert.Equal(t, 0.0, scraped(t)["apigateway_cert_manager_certificate_ready"])
	crt.Status.Conditions = []certmanagerv1.CertificateCondition{{
		Type: certmanagerv1.CertificateConditionReady, Status: cmmeta.ConditionTrue,
		Reason: "Ready", Message: "Certificate is up to date and has not expired",
		LastTransitionTime: ptr.To(metav1.Now()), ObservedGeneration: crt.Generation,
	}}
	require.NoError(t, cm.Status().Update(ctx, crt))

	op.waitReady(t)
	assert.Equal(t, 1.0, scraped(t)["apigateway_cert_manager_certificate_ready"])
	// Ready means every bundle the operator's cache shows trusts the
	// served chain; a cache that still shows the CRD without webhook
	// conversion (as the test before left it) has no CRD bundle to check
	// yet, so the injection is awaited, not assumed.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, b := range injectedBundles(t, o) {
			assert.Equal(c, encodeCerts(ca.cert), b, "cainjector injected the Secret's ca.crt")
		}
	}, time.Minute, 50*time.Millisecond)
	require.NoError(t, roundTrip(ctx, ns, "gw-cert-manager"))
	assert.Positive(t, op.calls.mutate.Load())
	assert.Positive(t, op.calls.validate.Load())
	assert.Positive(t, op.calls.convert.Load())

	// The injected bundles are cainjector's work, not ours: the provider
	// in this mode patches nothing.
	objs := map[string]client.Object{
		o.MutatingWebhookConfiguration:   &admissionregistrationv1.MutatingWebhookConfiguration{},
		o.ValidatingWebhookConfiguration: &admissionregistrationv1.ValidatingWebhookConfiguration{},
		o.CRD:                            &apiextensionsv1.CustomResourceDefinition{},
	}
	for name, obj := range objs {
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: name}, obj))
		for _, f := range obj.GetManagedFields() {
			assert.NotEqual(t, fieldOwner, f.Manager, "%s was patched by the provider", name)
		}
	}
}
