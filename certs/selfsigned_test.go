package certs

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/apigateway-operator/test/testenv"
)

func newFlagSet() *flag.FlagSet { return flag.NewFlagSet("test", flag.ContinueOnError) }

// injectedBundles returns the CA bundles of the three targets of o.
func injectedBundles(t *testing.T, o Options) [][]byte {
	t.Helper()
	ctx := context.Background()
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: o.MutatingWebhookConfiguration}, &mwc))
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: o.ValidatingWebhookConfiguration}, &vwc))
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: o.CRD}, &crd))
	return [][]byte{mwc.Webhooks[0].ClientConfig.CABundle, vwc.Webhooks[0].ClientConfig.CABundle, crd.Spec.Conversion.Webhook.ClientConfig.CABundle}
}

func TestSelfSignedServesThroughInjectedBundlesAndRecoversFromAnEmptiedSecret(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, env.Client, "certs-basic")
	o := testOptions(t, ns, "webhook-cert")
	shipSecret(t, o)
	op := startOperator(t, o)
	installWebhooks(t, o, op.port, op.port, op.port, nil)

	op.waitReady(t)
	waitConversionServed(t, ns)
	require.NoError(t, roundTrip(ctx, ns, "gw-first"))
	assert.Positive(t, op.calls.mutate.Load(), "the API server called the mutating webhook")
	assert.Positive(t, op.calls.validate.Load(), "the API server called the validating webhook")
	assert.Positive(t, op.calls.convert.Load(), "the API server called the conversion webhook")
	requireRejectedAsDuplicate(t, ns, "gw-first")
	secret := secretOf(t, o)
	for _, b := range injectedBundles(t, o) {
		assert.Equal(t, secret.Data[KeyCABundle], b, "every target got the Secret's bundle")
	}
	leaf := parseCerts(secret.Data[KeyTLSCert])[0]
	assert.Contains(t, leaf.DNSNames, "apigateway-operator-webhook."+ns+".svc")
	assert.Contains(t, leaf.DNSNames, "apigateway-operator-webhook."+ns+".svc.cluster.local")

	// Emptying the Secret (the README's way to force a new CA) makes a new
	// CA, new bundles, and working webhooks.
	oldBundle := secret.Data[KeyCABundle]
	secret.Data = nil
	require.NoError(t, env.Client.Update(ctx, secret))
	var attempt atomic.Int64
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var s corev1.Secret
		if !assert.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(secret), &s)) ||
			!assert.NotEmpty(c, s.Data[KeyCABundle], "the Secret is still empty") ||
			!assert.NotEqual(c, oldBundle, s.Data[KeyCABundle], "the Secret still holds the old bundle") {
			return
		}
		for _, b := range injectedBundles(t, o) {
			if !assert.Equal(c, s.Data[KeyCABundle], b, "a target does not hold the new bundle yet") {
				return
			}
		}
		if assert.NoError(c, op.p.ReadyCheck(nil)) {
			assert.NoError(c, roundTrip(ctx, ns, fmt.Sprintf("gw-after-%d", attempt.Add(1))))
		}
	}, time.Minute, 100*time.Millisecond, "no recovery after the Secret was emptied")
}

// TestSelfSignedWithoutItsSecretSaysWhyAndPicksItUp: the operator creates
// no Secret (its RBAC cannot allow that for one name only), so a missing
// one leaves it unready with the reason, and the shipped Secret is picked
// up from its watch, without a restart.
func TestSelfSignedWithoutItsSecretSaysWhyAndPicksItUp(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, env.Client, "certs-nosecret")
	o := testOptions(t, ns, "webhook-cert")
	op := startOperator(t, o)
	installWebhooks(t, o, op.port, op.port, op.port, nil)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.ErrorContains(c, op.p.ReadyCheck(nil), "secret "+ns+"/webhook-cert not found: the operator fills it but does not create it")
	}, time.Minute, 50*time.Millisecond)
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "webhook-cert"}, &corev1.Secret{})
	require.True(t, apierrors.IsNotFound(err), "the operator created the Secret: %v", err)

	shipSecret(t, o)
	op.waitReady(t)
	waitConversionServed(t, ns)
}

// requireRejectedAsDuplicate shows the validating webhook at work: a
// gateway claiming existing's host and path is refused, naming existing.
func requireRejectedAsDuplicate(t *testing.T, ns, existing string) {
	t.Helper()
	ctx := context.Background()
	var attempt int
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		attempt++
		dup := newGateway(ns, existing)
		dup.Name = fmt.Sprintf("%s-dup-%d", existing, attempt)
		err := env.Client.Create(ctx, dup)
		if err == nil {
			// The webhook's cache had not seen existing yet.
			assert.NoError(c, env.Client.Delete(ctx, dup))
			assert.Fail(c, "a duplicate host and path was admitted")
			return
		}
		assert.ErrorContains(c, err, existing)
	}, 30*time.Second, 100*time.Millisecond)
}

// TestSelfSignedRotationUnderLoad rotates the serving certificate every few
// seconds and the CA twice while a client keeps creating gateways (through
// both admission webhooks) and reading them through v1alpha1 (through the
// conversion webhook). Two instances share the Secret; the mutating and
// conversion webhooks call one, the validating webhook the other.
func TestSelfSignedRotationUnderLoad(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, env.Client, "certs-rotation")
	o := testOptions(t, ns, "webhook-cert")
	shipSecret(t, o)
	o.CALifetime, o.CARenewBefore = 40*time.Second, 24*time.Second
	o.CertLifetime, o.CertRenewBefore = 12*time.Second, 6*time.Second
	// The API server applies a CRD's new caBundle to its conversion
	// client asynchronously; on a loaded 2-core CI machine that once took
	// more than 2 s, and a conversion failed (production waits a minute).
	o.PropagationDelay, o.CAGracePeriod = 5*time.Second, 4*time.Second
	o.ResyncPeriod = 5 * time.Second
	a, b := startOperator(t, o), startOperator(t, o)
	installWebhooks(t, o, a.port, b.port, a.port, nil)
	a.waitReady(t)
	b.waitReady(t)
	// Ready means every target holds the bundle; the API server applies a
	// CRD's new caBundle to its conversion client a moment later. The load
	// starts once a conversion went through (rotations keep that margin by
	// PropagationDelay; the start has none).
	waitConversionServed(t, ns)

	var requests, failures atomic.Int64
	var firstErr error
	var errOnce sync.Once
	loadCtx, stopLoad := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; loadCtx.Err() == nil; i++ {
			err := roundTrip(ctx, ns, fmt.Sprintf("gw-%d", i))
			requests.Add(2)
			if err != nil {
				failures.Add(1)
				errOnce.Do(func() { firstErr = err })
			}
		}
	}()

	// Watch which CAs and leaves each instance serves until both have
	// served certificates of three CAs: two CA rotations.
	cas := map[*operator]map[string]bool{a: {}, b: {}}
	leaves := map[string]bool{}
	require.Eventually(t, func() bool {
		for _, op := range []*operator{a, b} {
			chain := tlsChain(op.p.current())
			cas[op][chain[0].Issuer.CommonName+string(chain[0].AuthorityKeyId)] = true
			leaves[string(chain[0].Raw)] = true
		}
		return len(cas[a]) >= 3 && len(cas[b]) >= 3
	}, 3*time.Minute, 20*time.Millisecond, "the CA did not rotate twice")
	stopLoad()
	<-done

	t.Logf("rotation under load: %d API requests (%d calls to the mutating, %d to the validating, %d to the conversion webhook), %d failed; %d serving certificates, %d CAs",
		requests.Load(), a.calls.mutate.Load(), b.calls.validate.Load(), a.calls.convert.Load(), failures.Load(), len(leaves), len(cas[a]))
	require.Zero(t, failures.Load(), "first failure: %v", firstErr)
	assert.Greater(t, requests.Load(), int64(100))
	assert.GreaterOrEqual(t, len(leaves), 5, "the serving certificate rotated several times")
	assert.Positive(t, b.calls.validate.Load())
	assert.Positive(t, a.calls.convert.Load())
}

func TestSelfSignedInstancesSharingASecretSettle(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, env.Client, "certs-pair")
	o := testOptions(t, ns, "webhook-cert")
	shipSecret(t, o)
	a, b := startOperator(t, o), startOperator(t, o)
	installWebhooks(t, o, a.port, b.port, a.port, nil)
	a.waitReady(t)
	b.waitReady(t)

	// Both serve the Secret's certificate and the injection is recorded.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s := secretOf(t, o)
		_, injected := injectedSince(s.Annotations, s.Data[KeyCABundle])
		assert.True(c, injected, "injection not recorded: %v", s.Annotations)
		assert.Equal(c, s.Data[KeyTLSCert], a.p.served.Load().pem, "instance a does not serve the Secret's certificate")
		assert.Equal(c, s.Data[KeyTLSCert], b.p.served.Load().pem, "instance b does not serve the Secret's certificate")
		// installWebhooks rewrote the objects after the instances started:
		// converged means every bundle is back to the Secret's.
		for i, bundle := range injectedBundles(t, o) {
			assert.Equal(c, string(s.Data[KeyCABundle]), string(bundle), "the bundle of target %d", i)
		}
	}, time.Minute, 50*time.Millisecond, "the instances never converged")

	// From here on neither instance writes: any number of further passes,
	// interleaved, leave every resourceVersion as it is.
	before := resourceVersions(t, o)
	for range 5 {
		for _, op := range []*operator{a, b} {
			_, err := op.p.rotator.sync(ctx)
			require.NoError(t, err)
		}
	}
	assert.Equal(t, before, resourceVersions(t, o))
}

// waitConversionServed waits until a round trip through all three webhooks
// works. Readiness means the CA is in every object's bundle; the API server
// rebuilds a CRD's conversion client from its caBundle asynchronously, a few
// milliseconds after the update, so the very first conversion may still race
// it. Each attempt uses a new object, so a failed one leaves nothing behind
// that the next would trip over.
func waitConversionServed(t *testing.T, ns string) {
	t.Helper()
	var attempt int
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		attempt++
		assert.NoError(c, roundTrip(context.Background(), ns, fmt.Sprintf("probe-%d", attempt)))
	}, 30*time.Second, 100*time.Millisecond, "the API server never converted through the injected bundle")
}

// resourceVersions are those of the Secret and the two webhook
// configurations, and the CRD's generation: the API server updates a CRD's
// status by itself (conditions, stored versions), which moves its
// resourceVersion but not its generation; only a spec write does that.
func resourceVersions(t *testing.T, o Options) []string {
	t.Helper()
	ctx := context.Background()
	objs := []client.Object{
		&corev1.Secret{}, &admissionregistrationv1.MutatingWebhookConfiguration{},
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, &apiextensionsv1.CustomResourceDefinition{},
	}
	keys := []client.ObjectKey{
		{Namespace: o.SecretNamespace, Name: o.SecretName}, {Name: o.MutatingWebhookConfiguration},
		{Name: o.ValidatingWebhookConfiguration}, {Name: o.CRD},
	}
	var out []string
	for i, obj := range objs {
		require.NoError(t, env.Client.Get(ctx, keys[i], obj))
		if _, isCRD := obj.(*apiextensionsv1.CustomResourceDefinition); isCRD {
			out = append(out, fmt.Sprintf("generation %d", obj.GetGeneration()))
			continue
		}
		out = append(out, obj.GetResourceVersion())
	}
	return out
}
