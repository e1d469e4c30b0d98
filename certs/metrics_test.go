package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"example.com/apigateway-operator/test/testenv"
)

// scraped returns the certificate metrics as a scrape shows them, keyed by
// name and label pair ("apigateway_ca_bundle_trusted{object=...}").
func scraped(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		switch f.GetName() {
		case "apigateway_certificate_expiration_timestamp_seconds", "apigateway_ca_bundle_trusted", "apigateway_cert_manager_certificate_ready":
		default:
			continue
		}
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += fmt.Sprintf("{%s=%s}", l.GetName(), l.GetValue())
			}
			out[key] = m.GetGauge().GetValue()
		}
	}
	return out
}

func trustedKey(kind string) string { return "apigateway_ca_bundle_trusted{object=" + kind + "}" }

const caExpiryKey = "apigateway_certificate_expiration_timestamp_seconds{certificate=ca}"

// TestTrustMetrics puts bundles into real webhook configurations and the
// CRD and checks what the trust check reports for each object, and which
// CA's expiry it exports.
func TestTrustMetrics(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, env.Client, "certs-metrics")
	o := testOptions(t, ns, "unused")
	installWebhooks(t, o, 1, 1, 1, nil)
	all := targets{mutating: o.MutatingWebhookConfiguration, validating: o.ValidatingWebhookConfiguration, crd: o.CRD}

	oldCA, leaf := issue(t)
	newCA, _ := issue(t)
	other, _ := issue(t)
	now := time.Now()
	tests := map[string]struct {
		targets targets
		bundle  []byte
		// validating, when set, replaces the validating configuration's bundle.
		validating []byte
		now        time.Time
		want       map[string]bool
		wantCA     *x509.Certificate
	}{
		"every bundle holds the CA": {
			targets: all, bundle: encodeCerts(oldCA.cert), now: now,
			want:   map[string]bool{kindMutating: true, kindValidating: true, kindCRD: true},
			wantCA: oldCA.cert,
		},
		"old and new CA during a rotation": {
			targets: all, bundle: encodeCerts(newCA.cert, oldCA.cert), now: now,
			want:   map[string]bool{kindMutating: true, kindValidating: true, kindCRD: true},
			wantCA: oldCA.cert,
		},
		"the validating configuration holds another CA": {
			targets: all, bundle: encodeCerts(oldCA.cert), validating: encodeCerts(other.cert), now: now,
			want:   map[string]bool{kindMutating: true, kindValidating: false, kindCRD: true},
			wantCA: oldCA.cert,
		},
		"the CRD does not exist": {
			targets: targets{mutating: all.mutating, validating: all.validating, crd: "missing.example.com"},
			bundle:  encodeCerts(oldCA.cert), now: now,
			want:   map[string]bool{kindMutating: true, kindValidating: true, kindCRD: false},
			wantCA: oldCA.cert,
		},
		"the served certificate has expired": {
			targets: all, bundle: encodeCerts(oldCA.cert), now: leaf.cert.NotAfter.Add(time.Second),
			want: map[string]bool{kindMutating: false, kindValidating: false, kindCRD: false},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := all.inject(ctx, env.Client, tc.bundle)
			require.NoError(t, err)
			if tc.validating != nil {
				_, err := targets{validating: all.validating}.inject(ctx, env.Client, tc.validating)
				require.NoError(t, err)
			}
			err = tc.targets.trust(ctx, env.Client, []*x509.Certificate{leaf.cert}, tc.now)
			got := scraped(t)
			for kind, trusted := range tc.want {
				assert.Equal(t, boolValue(trusted), got[trustedKey(kind)], kind)
				if !trusted {
					assert.ErrorContains(t, err, kind)
				}
			}
			if tc.wantCA == nil {
				assert.NotContains(t, got, caExpiryKey, "no bundle verifies the chain: the CA is unknown")
				return
			}
			assert.Equal(t, float64(tc.wantCA.NotAfter.Unix()), got[caExpiryKey])
		})
	}
}

// TestSelfSignedCertificateMetrics runs the self-signed mode and checks the
// expiry a scrape shows against the certificate the webhook server hands
// out and the CA in the Secret that signed it.
func TestSelfSignedCertificateMetrics(t *testing.T) {
	ns := testenv.NewNamespace(t, env.Client, "certs-metrics-ss")
	o := testOptions(t, ns, "webhook-cert")
	shipSecret(t, o)
	op := startOperator(t, o)
	installWebhooks(t, o, op.port, op.port, op.port, nil)
	// A ReadyCheck records the trust gauges. The CRD and webhook
	// configurations are shared with the suite's other tests, whose writes
	// can still reach them a moment after this operator first found them
	// trusted; it repairs them, so the check is repeated until a passing
	// one has recorded all three as trusted.
	var got map[string]float64
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		if !assert.NoError(c, op.p.ReadyCheck(nil)) {
			return
		}
		got = scraped(t)
		for _, kind := range []string{kindMutating, kindValidating, kindCRD} {
			assert.Equal(c, 1.0, got[trustedKey(kind)], kind)
		}
	}, time.Minute, 50*time.Millisecond, "never ready with every bundle trusted")

	bundle := secretOf(t, o).Data[KeyCABundle]
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(bundle))
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", op.port), &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	state := conn.ConnectionState()
	require.NoError(t, conn.Close())
	served, issuer := state.PeerCertificates[0], state.VerifiedChains[0][len(state.VerifiedChains[0])-1]

	assert.Equal(t, float64(served.NotAfter.Unix()), got["apigateway_certificate_expiration_timestamp_seconds{certificate=serving}"])
	assert.Equal(t, float64(issuer.NotAfter.Unix()), got[caExpiryKey])
	assert.NotEqual(t, served.NotAfter, issuer.NotAfter, "the CA outlives the leaf, so swapped values would show")
	for _, kind := range []string{kindMutating, kindValidating, kindCRD} {
		assert.Equal(t, 1.0, got[trustedKey(kind)], kind)
	}
}
