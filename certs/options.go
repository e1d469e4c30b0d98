// Package certs provides the webhook server's serving certificate and keeps
// the API server able to verify it.
//
// Three modes, chosen by --cert-mode:
//   - self-signed (default): a CA and a serving certificate kept in one
//     Secret, created when missing, rotated before expiry, with the CA bundle
//     injected into both webhook configurations and the CRD's conversion
//     webhook. Replicas coordinate through the Secret alone.
//   - cert-manager: a cert-manager Certificate's Secret mounted at the cert
//     directory; cert-manager's cainjector fills the bundles.
//   - files: a certificate from the cert directory; nothing is injected.
//
// Every mode reloads certificates without a restart.
package certs

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
)

// The modes of --cert-mode.
const (
	ModeSelfSigned  = "self-signed"
	ModeCertManager = "cert-manager"
	ModeFiles       = "files"
)

// Options configure where the serving certificate comes from. The zero value
// is not usable: start from BindFlags' defaults.
type Options struct {
	// Mode is ModeSelfSigned, ModeCertManager or ModeFiles.
	Mode string

	// CertDir holds tls.crt and tls.key in the cert-manager and files modes.
	// main sets it from its --cert-dir flag, which the webhook server shares.
	CertDir string

	// SecretName and SecretNamespace name the self-signed mode's Secret.
	SecretName, SecretNamespace string
	// ServiceName and ServiceNamespace name the webhook Service whose DNS
	// names the serving certificate covers.
	ServiceName, ServiceNamespace string
	// ExtraHosts are further DNS names or IP addresses for the certificate.
	ExtraHosts []string
	// ClusterDomain is the DNS suffix of the cluster's Services (main's
	// --cluster-domain): the certificate covers the Service's name under
	// it. Empty means cluster.local.
	ClusterDomain string

	// CALifetime and CARenewBefore: a CA is replaced CARenewBefore ahead of
	// its expiry. CertLifetime and CertRenewBefore do the same for the
	// serving certificate.
	CALifetime, CARenewBefore     time.Duration
	CertLifetime, CertRenewBefore time.Duration
	// PropagationDelay is how long a new bundle must have been injected
	// before a certificate of the new CA is served.
	PropagationDelay time.Duration
	// CAGracePeriod is how long the old CA stays in the bundle after the
	// new CA's first certificate was issued.
	CAGracePeriod time.Duration
	// ResyncPeriod bounds how long a missed event can go unnoticed.
	ResyncPeriod time.Duration

	// MutatingWebhookConfiguration, ValidatingWebhookConfiguration and CRD
	// name the objects whose CA bundles are injected (self-signed) or
	// checked for readiness (self-signed, cert-manager); empty skips one.
	MutatingWebhookConfiguration, ValidatingWebhookConfiguration, CRD string

	// Certificate is the cert-manager Certificate, as namespace/name.
	Certificate string

	// Clock, when set, replaces the real clock: what the self-signed mode
	// issues, renews and rotates by. Not a flag (test/faults skews it).
	Clock clock.WithTicker
}

// BindFlags registers the --cert-* flags on fs, with their defaults in o.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Mode, "cert-mode", ModeSelfSigned,
		"Where the webhook serving certificate comes from: self-signed (a CA and certificate kept in a Secret, rotated and injected by the operator), cert-manager (a cert-manager Certificate's Secret mounted at --cert-dir, bundles injected by cainjector) or files (--cert-dir, nothing injected).")
	fs.StringVar(&o.SecretName, "cert-secret-name", "apigateway-operator-webhook-cert", "self-signed: name of the Secret holding the CA and the serving certificate.")
	fs.StringVar(&o.SecretNamespace, "cert-secret-namespace", "apigateway-operator-system", "self-signed: namespace of that Secret.")
	fs.StringVar(&o.ServiceName, "cert-service-name", "apigateway-operator-webhook", "self-signed: webhook Service whose DNS names (svc, svc.ns, svc.ns.svc, svc.ns.svc.<--cluster-domain>) the certificate covers.")
	fs.StringVar(&o.ServiceNamespace, "cert-service-namespace", "apigateway-operator-system", "self-signed: namespace of the webhook Service.")
	fs.Func("cert-extra-hosts", "self-signed: comma-separated extra DNS names and IP addresses for the certificate (e.g. 127.0.0.1,localhost for a local run).", func(s string) error {
		o.ExtraHosts = splitList(s)
		return nil
	})
	fs.DurationVar(&o.CALifetime, "cert-ca-lifetime", 365*24*time.Hour, "self-signed: lifetime of a CA.")
	fs.DurationVar(&o.CARenewBefore, "cert-ca-renew-before", 30*24*time.Hour, "self-signed: how long before its expiry a CA is replaced (old and new CA are both trusted meanwhile).")
	fs.DurationVar(&o.CertLifetime, "cert-lifetime", 90*24*time.Hour, "self-signed: lifetime of a serving certificate (never beyond its CA's).")
	fs.DurationVar(&o.CertRenewBefore, "cert-renew-before", 30*24*time.Hour, "self-signed: how long before its expiry a serving certificate is replaced.")
	fs.DurationVar(&o.PropagationDelay, "cert-propagation-delay", time.Minute, "self-signed: how long a CA bundle must have been injected before a certificate of a new CA is served.")
	fs.DurationVar(&o.CAGracePeriod, "cert-ca-grace-period", time.Hour, "self-signed: how long the previous CA stays trusted after the new CA's first certificate, so every replica has switched.")
	fs.DurationVar(&o.ResyncPeriod, "cert-resync-period", 10*time.Minute, "self-signed: how often the Secret and the bundles are checked even without a change event.")
	fs.StringVar(&o.MutatingWebhookConfiguration, "cert-mutating-webhook-configuration", "apigateway-operator-mutating-webhook-configuration", "MutatingWebhookConfiguration whose CA bundles are injected and checked; empty to skip.")
	fs.StringVar(&o.ValidatingWebhookConfiguration, "cert-validating-webhook-configuration", "apigateway-operator-validating-webhook-configuration", "ValidatingWebhookConfiguration whose CA bundles are injected and checked; empty to skip.")
	fs.StringVar(&o.CRD, "cert-crd", "apigateways.example.com", "CustomResourceDefinition whose conversion webhook CA bundle is injected and checked (only when its strategy is Webhook); empty to skip.")
	fs.StringVar(&o.Certificate, "cert-manager-certificate", "apigateway-operator-system/apigateway-operator-serving-cert", "cert-manager: the Certificate (namespace/name) that must be Ready before this replica is.")
}

// validate checks the options of the chosen mode.
func (o *Options) validate() error {
	var errs []error
	switch o.Mode {
	case ModeSelfSigned:
		errs = append(errs, o.validateSelfSigned()...)
	case ModeCertManager:
		if _, _, err := o.certificateKey(); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, o.validateCertDir())
	case ModeFiles:
		errs = append(errs, o.validateCertDir())
	default:
		errs = append(errs, fmt.Errorf("--cert-mode: want %s, %s or %s, got %q", ModeSelfSigned, ModeCertManager, ModeFiles, o.Mode))
	}
	return errors.Join(errs...)
}

func (o *Options) validateCertDir() error {
	if o.CertDir == "" {
		return fmt.Errorf("--cert-mode=%s needs a certificate directory (--cert-dir)", o.Mode)
	}
	return nil
}

func (o *Options) validateSelfSigned() []error {
	var errs []error
	for flagName, v := range map[string]string{
		"--cert-secret-name": o.SecretName, "--cert-secret-namespace": o.SecretNamespace,
		"--cert-service-name": o.ServiceName, "--cert-service-namespace": o.ServiceNamespace,
	} {
		if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: %q: %s", flagName, v, strings.Join(msgs, "; ")))
		}
	}
	for _, h := range o.ExtraHosts {
		if net.ParseIP(h) == nil && len(validation.IsDNS1123Subdomain(strings.TrimPrefix(h, "*."))) > 0 {
			errs = append(errs, fmt.Errorf("--cert-extra-hosts: %q is neither an IP address nor a DNS name", h))
		}
	}
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive, got %s", name, d))
		}
	}
	positive("--cert-ca-lifetime", o.CALifetime)
	positive("--cert-ca-renew-before", o.CARenewBefore)
	positive("--cert-lifetime", o.CertLifetime)
	positive("--cert-renew-before", o.CertRenewBefore)
	positive("--cert-resync-period", o.ResyncPeriod)
	if o.PropagationDelay < 0 || o.CAGracePeriod < 0 {
		errs = append(errs, errors.New("--cert-propagation-delay and --cert-ca-grace-period must not be negative"))
	}
	if o.CARenewBefore >= o.CALifetime {
		errs = append(errs, fmt.Errorf("--cert-ca-renew-before (%s) must be shorter than --cert-ca-lifetime (%s)", o.CARenewBefore, o.CALifetime))
	}
	if o.CertRenewBefore >= o.CertLifetime {
		errs = append(errs, fmt.Errorf("--cert-renew-before (%s) must be shorter than --cert-lifetime (%s)", o.CertRenewBefore, o.CertLifetime))
	}
	// The old CA must still be valid when the rotation ends.
	if o.PropagationDelay+o.CAGracePeriod >= o.CARenewBefore {
		errs = append(errs, fmt.Errorf("--cert-propagation-delay (%s) plus --cert-ca-grace-period (%s) must be shorter than --cert-ca-renew-before (%s)",
			o.PropagationDelay, o.CAGracePeriod, o.CARenewBefore))
	}
	return errs
}

// policy is the self-signed Secret's policy.
func (o *Options) policy() rotationPolicy {
	p := rotationPolicy{
		CALifetime: o.CALifetime, CARenewBefore: o.CARenewBefore,
		CertLifetime: o.CertLifetime, CertRenewBefore: o.CertRenewBefore,
		Propagation: o.PropagationDelay, Grace: o.CAGracePeriod,
	}
	svc, ns, domain := o.ServiceName, o.ServiceNamespace, o.ClusterDomain
	if domain == "" {
		domain = "cluster.local"
	}
	p.DNSNames = []string{svc, svc + "." + ns, svc + "." + ns + ".svc", svc + "." + ns + ".svc." + domain}
	for _, h := range o.ExtraHosts {
		if ip := net.ParseIP(h); ip != nil {
			p.IPs = append(p.IPs, ip)
		} else {
			p.DNSNames = append(p.DNSNames, h)
		}
	}
	return p
}

// certificateKey splits Certificate into namespace and name.
func (o *Options) certificateKey() (namespace, name string, err error) {
	namespace, name, ok := strings.Cut(o.Certificate, "/")
	if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("--cert-manager-certificate: want namespace/name, got %q", o.Certificate)
	}
	return namespace, name, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
