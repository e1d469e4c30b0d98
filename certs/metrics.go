package certs

import (
	"crypto/x509"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The certificate metrics, served with controller-runtime's on the metrics
// endpoint, so that an expiring certificate or a bundle that no longer
// trusts the served one is seen before the API server's calls fail.
//
// They are set by the readiness check, which already reads the served
// certificate, the injection targets (from the provider's cache) and the
// cert-manager Certificate: the kubelet runs it every few seconds on every
// replica, so no loop of its own reads or writes anything.
//
// Expiry is a timestamp (like cert-manager's
// certmanager_certificate_expiration_timestamp_seconds), not seconds left:
// a timestamp is right whenever it was last set, where seconds left would
// go stale between two checks. Alerts and dashboards subtract time().
var (
	certificateExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "apigateway_certificate_expiration_timestamp_seconds",
		Help: "When the webhook server's certificates expire, in seconds since the epoch: certificate=serving is the leaf this replica serves, certificate=ca the CA the injected bundles verify it with.",
	}, []string{"certificate"})
	bundleTrusted = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "apigateway_ca_bundle_trusted",
		Help: "1 when the object exists and every CA bundle in it verifies the certificate this replica serves, else 0; object is the kind (MutatingWebhookConfiguration, ValidatingWebhookConfiguration, CustomResourceDefinition).",
	}, []string{"object"})
	certificateReadyGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "apigateway_cert_manager_certificate_ready",
		Help: "1 when the cert-manager Certificate is Ready for its current generation, else 0 (--cert-mode=cert-manager only).",
	})
)

func init() {
	metrics.Registry.MustRegister(certificateExpiry, bundleTrusted, certificateReadyGauge)
}

// The label values of certificate.
const (
	certificateServing = "serving"
	certificateCA      = "ca"
)

// recordExpiry sets the expiry of one certificate; nil removes it, since
// an unknown expiry must not look like an old one.
func recordExpiry(which string, c *x509.Certificate) {
	if c == nil {
		certificateExpiry.DeleteLabelValues(which)
		return
	}
	certificateExpiry.WithLabelValues(which).Set(float64(c.NotAfter.Unix()))
}

// recordTrusted sets whether the target of kind trusts the served chain.
func recordTrusted(kind string, trusted bool) {
	bundleTrusted.WithLabelValues(kind).Set(boolValue(trusted))
}

// recordCertificateReady sets the cert-manager Certificate's readiness.
func recordCertificateReady(ready bool) {
	certificateReadyGauge.Set(boolValue(ready))
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
