package certs

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/inflight"
	"example.com/apigateway-operator/test/ports"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

var env *testenv.Env

// The kube-apiserver of this suite presents a client certificate signed by
// the CA in apiServerClientCA to every admission webhook (see
// presentClientCert); servers that ask for none are not affected.
func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{APIServer: presentClientCert}) }

const (
	crdName = "apigateways.example.com"
	// injectCAFrom is cert-manager's cainjector annotation.
	injectCAFrom = "cert-manager.io/inject-ca-from"
	// webhookTimeout is generous: the tests share two loaded cores, and a
	// slow answer is not what they test (a TLS failure fails at once).
	webhookTimeout = 15
)

// webhookCalls counts the API server's calls into one operator instance.
type webhookCalls struct {
	mutate, validate, convert atomic.Int64
}

// operator is one running operator instance under test.
type operator struct {
	p     *Provider
	port  int
	calls *webhookCalls
}

// testOptions are self-signed options for a test: its own Secret and
// webhook configuration names, 127.0.0.1 in the certificate, and the
// default lifetimes.
func testOptions(t *testing.T, ns, secret string) Options {
	t.Helper()
	var o Options
	o.BindFlags(newFlagSet())
	o.SecretName, o.SecretNamespace = secret, ns
	o.ServiceNamespace = ns
	o.ExtraHosts = []string{"127.0.0.1", "localhost"}
	o.MutatingWebhookConfiguration = "mutating-" + ns
	o.ValidatingWebhookConfiguration = "validating-" + ns
	o.CRD = crdName
	return o
}

// Paths of the real webhooks, as webhooks.SetupWithManager serves them.
const (
	mutatePath   = webhooks.MutatePath
	validatePath = webhooks.ValidatePath
	convertPath  = webhooks.ConvertPath
)

// countingServer counts the requests each registered webhook serves.
type countingServer struct {
	webhook.Server
	calls *webhookCalls
}

func (s countingServer) Register(path string, hook http.Handler) {
	n := map[string]*atomic.Int64{mutatePath: &s.calls.mutate, validatePath: &s.calls.validate, convertPath: &s.calls.convert}[path]
	if n == nil {
		s.Server.Register(path, hook)
		return
	}
	s.Server.Register(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		hook.ServeHTTP(w, r)
	}))
}

// startOperator runs a manager with the provider and the project's real
// admission and conversion webhooks on a free local port until the test
// ends.
func startOperator(t *testing.T, o Options) *operator {
	t.Helper()
	return startInstance(t, o, instance{})
}

// instance is how an operator under test runs, beyond its certificate
// options.
type instance struct {
	// clientCA, when set, turns on client authentication with this CA
	// file, as --webhook-client-ca does.
	clientCA string
	// config reaches the API server; env.Config when nil.
	config *rest.Config
}

// startInstance is startOperator with in's settings. The webhook counters
// count only the calls that got through client authentication.
func startInstance(t *testing.T, o Options, in instance) *operator {
	t.Helper()
	p, err := New(o)
	require.NoError(t, err)
	op := &operator{p: p, port: ports.For(t), calls: &webhookCalls{}}

	tlsOpts := []func(*tls.Config){p.TLSConfig}
	var auth *ClientAuth
	if in.clientCA != "" {
		auth, err = NewClientAuth(in.clientCA, convertPath)
		require.NoError(t, err)
		tlsOpts = append(tlsOpts, auth.TLSConfig)
	}
	var srv webhook.Server = inflight.NewServer(webhook.Options{Host: "127.0.0.1", Port: op.port, TLSOpts: tlsOpts}, inflight.Limits{})
	if auth != nil {
		srv = auth.Server(srv)
	}
	opts := env.ManagerOptions()
	opts.WebhookServer = countingServer{Server: srv, calls: op.calls}
	cfg := env.Config
	if in.config != nil {
		cfg = in.config
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "certs-test"
	mgr, err := ctrl.NewManager(cfg, opts)
	require.NoError(t, err)
	require.NoError(t, webhooks.SetupWithManager(mgr, webhooks.Options{DefaultReplicas: 1}))
	require.NoError(t, p.SetupWithManager(mgr))
	if auth != nil {
		require.NoError(t, mgr.Add(auth))
	}
	env.StartManager(t, mgr)
	return op
}

// shipSecret creates the empty Secret of o, as the manifests ship it
// (manifests/rbac/webhook_cert_secret.yaml): no type, no data.
func shipSecret(t *testing.T, o Options) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.SecretNamespace, Name: o.SecretName}}
	require.NoError(t, env.Client.Create(context.Background(), s))
}

// waitReady waits until the provider's readiness check passes.
func (op *operator) waitReady(t *testing.T) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, op.p.ReadyCheck(nil))
	}, time.Minute, 50*time.Millisecond, "never ready")
}

// installWebhooks creates the webhook configurations named in o, calling
// mutatePort and validatePort, and switches the CRD's conversion to a
// webhook on convertPort, all with no CA bundle: injecting one is the code
// under test. annotations go on all three. Everything is undone when the
// test ends.
func installWebhooks(t *testing.T, o Options, mutatePort, validatePort, convertPort int, annotations map[string]string) {
	t.Helper()
	ctx := context.Background()
	url := func(port int, path string) *string { return ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", port, path)) }
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"apigateways"}},
	}}
	// Only this test's namespace, so tests never see each other's webhooks.
	nsSelector := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": o.SecretNamespace}}
	common := func() (*admissionregistrationv1.SideEffectClass, *admissionregistrationv1.FailurePolicyType, *admissionregistrationv1.MatchPolicyType) {
		return ptr.To(admissionregistrationv1.SideEffectClassNone), ptr.To(admissionregistrationv1.Fail), ptr.To(admissionregistrationv1.Equivalent)
	}
	se, fp, mp := common()
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: o.MutatingWebhookConfiguration, Annotations: annotations},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mapigateway-v1.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url(mutatePort, mutatePath)},
			Rules: rules, SideEffects: se, FailurePolicy: fp, MatchPolicy: mp, NamespaceSelector: nsSelector,
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](webhookTimeout),
		}},
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: o.ValidatingWebhookConfiguration, Annotations: annotations},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "vapigateway-v1.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url(validatePort, validatePath)},
			Rules: rules, SideEffects: se, FailurePolicy: fp, MatchPolicy: mp, NamespaceSelector: nsSelector,
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](webhookTimeout),
		}},
	}
	require.NoError(t, env.Client.Create(ctx, mwc))
	require.NoError(t, env.Client.Create(ctx, vwc))
	setConversion(t, annotations, &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: url(convertPort, convertPath)},
			ConversionReviewVersions: []string{"v1"},
		},
	})
	t.Cleanup(func() {
		setConversion(t, nil, &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter})
		require.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, mwc)))
		require.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, vwc)))
	})
}

// setConversion replaces the CRD's conversion settings and annotations.
func setConversion(t *testing.T, annotations map[string]string, conv *apiextensionsv1.CustomResourceConversion) {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := env.Client.Get(ctx, client.ObjectKey{Name: crdName}, &crd); err != nil {
			return false
		}
		crd.Spec.Conversion = conv
		if annotations == nil {
			delete(crd.Annotations, injectCAFrom)
		}
		for k, v := range annotations {
			metav1.SetMetaDataAnnotation(&crd.ObjectMeta, k, v)
		}
		err := env.Client.Update(ctx, &crd)
		if err != nil && !apierrors.IsConflict(err) {
			t.Logf("updating the CRD's conversion: %v", err)
		}
		return err == nil
	}, 30*time.Second, 50*time.Millisecond)
}

// hostOf is the host of gateway ns/name: the namespace is in it because a
// host belongs to the namespace that claimed it first, and a repeated run
// (-count) makes the same names in a new namespace.
func hostOf(ns, name string) string { return name + "." + ns + ".example.com" }

// newGateway is a v1 APIGateway that only the mutating webhook makes
// whole: no replicas, an upper-case host, no path.
func newGateway(ns, name string) *v1.APIGateway {
	return &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.APIGatewaySpec{
			Image: "nginx:1.27",
			Routes: []v1.Route{{Host: v1.Hostname(strings.ToUpper(hostOf(ns, name))),
				BackendService: v1.BackendService{Name: "user-service", Port: 8080}}},
		},
	}
}

// roundTrip creates a gateway through v1 (both admission webhooks) and reads
// it back through v1alpha1 (the conversion webhook), checking each webhook's
// mark: defaults and a lower-cased host from the mutating webhook, the
// route mapped to v1alpha1's prefix by the conversion webhook.
func roundTrip(ctx context.Context, ns, name string) error {
	gw := newGateway(ns, name)
	if err := env.Client.Create(ctx, gw); err != nil {
		return fmt.Errorf("creating %s: %w", name, err)
	}
	if gw.Spec.Replicas == nil || *gw.Spec.Replicas != 1 || string(gw.Spec.Routes[0].Host) != hostOf(ns, name) {
		return fmt.Errorf("creating %s: not defaulted by the mutating webhook: %+v", name, gw.Spec)
	}
	var old v1alpha1.APIGateway
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &old); err != nil {
		return fmt.Errorf("reading %s as v1alpha1: %w", name, err)
	}
	if len(old.Spec.Routes) != 1 || old.Spec.Routes[0].Prefix != "/" || old.Spec.Routes[0].ServiceName != "user-service" {
		return fmt.Errorf("reading %s as v1alpha1: unexpected routes %+v", name, old.Spec.Routes)
	}
	return nil
}

// secretOf reads the operator's Secret.
func secretOf(t *testing.T, o Options) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: o.SecretNamespace, Name: o.SecretName}, &s))
	return &s
}
