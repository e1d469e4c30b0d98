package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// RBAC of the self-signed mode: the one Secret (namespaced), and patching the
// CA bundles of the webhook configurations and the CRD. The cert-manager
// mode reads its Certificate and the same objects for readiness. Every rule
// names the objects of the flags' defaults (resourceNames; the informers
// list and watch them by a metadata.name field selector, which the API
// server authorizes against resourceNames), so the operator can touch no
// other webhook configuration, CRD or Secret. No create: RBAC cannot limit
// create to a name, so the manifests ship the Secret (see rotator.read).
// TestRBACNamesTheFlagDefaults keeps these names and the flags in step.
// +kubebuilder:rbac:groups="",namespace=apigateway-operator-system,resources=secrets,verbs=get;list;watch;update,resourceNames=apigateway-operator-webhook-cert
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch;patch,resourceNames=apigateway-operator-mutating-webhook-configuration;apigateway-operator-validating-webhook-configuration
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch;patch,resourceNames=apigateways.example.com
// +kubebuilder:rbac:groups=cert-manager.io,namespace=apigateway-operator-system,resources=certificates,verbs=get;list;watch,resourceNames=apigateway-operator-serving-cert

// Provider serves the webhook server's certificate in one of the modes.
type Provider struct {
	opts  Options
	clock clock.WithTicker

	// served is the self-signed mode's current certificate.
	served atomic.Pointer[servedCert]
	// watcher reloads CertDir in the cert-manager and files modes.
	watcher *certwatcher.CertWatcher
	// cluster watches only the named objects (see newCluster).
	cluster cluster.Cluster
	// rotator runs the self-signed mode.
	rotator *rotator
}

// New validates the options and returns a Provider. In the cert-manager and
// files modes the certificate must already be readable in CertDir.
func New(o Options) (*Provider, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	p := &Provider{opts: o, clock: o.Clock}
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	if o.Mode != ModeSelfSigned {
		w, err := certwatcher.New(filepath.Join(o.CertDir, corev1.TLSCertKey), filepath.Join(o.CertDir, corev1.TLSPrivateKeyKey))
		if err != nil {
			return nil, fmt.Errorf("--cert-mode=%s: loading the certificate from %s: %w", o.Mode, o.CertDir, err)
		}
		p.watcher = w
	}
	return p, nil
}

// TLSConfig is a webhook.Options.TLSOpts func: the server asks the provider
// for the current certificate on every handshake, so renewals apply without
// a restart (and controller-runtime starts no certwatcher of its own).
func (p *Provider) TLSConfig(c *tls.Config) {
	if p.watcher != nil {
		c.GetCertificate = p.watcher.GetCertificate
		return
	}
	c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		if s := p.served.Load(); s != nil {
			return s.cert, nil
		}
		return nil, errors.New("no serving certificate yet")
	}
}

// SetupWithManager adds the provider's runnables and its "webhook-certificate"
// readiness check to mgr.
func (p *Provider) SetupWithManager(mgr ctrl.Manager) error {
	if p.watcher != nil {
		if err := mgr.Add(p.watcher); err != nil {
			return err
		}
	}
	if p.opts.Mode != ModeFiles {
		c, err := p.newCluster(mgr)
		if err != nil {
			return err
		}
		p.cluster = c
		if err := mgr.Add(c); err != nil {
			return err
		}
	}
	if p.opts.Mode == ModeSelfSigned {
		r, err := newRotator(p, mgr)
		if err != nil {
			return err
		}
		p.rotator = r
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	return mgr.AddReadyzCheck("webhook-certificate", p.ReadyCheck)
}

// ReadyCheck fails until this replica serves a certificate that every
// injection target trusts (self-signed, cert-manager) or, in the files mode,
// a currently valid one. It is the check SetupWithManager registers.
func (p *Provider) ReadyCheck(req *http.Request) error {
	ctx := context.Background()
	if req != nil {
		ctx = req.Context()
	}
	chain := tlsChain(p.current())
	if len(chain) == 0 {
		recordExpiry(certificateServing, nil)
		if p.rotator != nil && p.rotator.err() != nil {
			return fmt.Errorf("no serving certificate yet: %w", p.rotator.err())
		}
		return errors.New("no serving certificate yet")
	}
	recordExpiry(certificateServing, chain[0])
	// Every check runs, even after one failed, so that each records its
	// metric.
	var errs []error
	now := p.clock.Now()
	if now.Before(chain[0].NotBefore) || !now.Before(chain[0].NotAfter) {
		errs = append(errs, fmt.Errorf("the serving certificate is valid from %s to %s only", chain[0].NotBefore, chain[0].NotAfter))
	}
	if p.opts.Mode == ModeFiles {
		return errors.Join(errs...)
	}
	if p.opts.Mode == ModeCertManager {
		errs = append(errs, p.certificateReady(ctx))
	}
	errs = append(errs, p.targets().trust(ctx, p.cluster.GetClient(), chain, now))
	return errors.Join(errs...)
}

// current is the certificate this replica serves now.
func (p *Provider) current() *tls.Certificate {
	if p.watcher != nil {
		c, _ := p.watcher.GetCertificate(nil)
		return c
	}
	if s := p.served.Load(); s != nil {
		return s.cert
	}
	return nil
}

// servedCert is a served certificate with the PEM it was loaded from.
type servedCert struct {
	cert *tls.Certificate
	pem  []byte
}

// certificateReady checks the cert-manager Certificate's Ready condition.
func (p *Provider) certificateReady(ctx context.Context) error {
	ns, name, _ := p.opts.certificateKey()
	var crt certmanagerv1.Certificate
	if err := p.cluster.GetClient().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &crt); err != nil {
		recordCertificateReady(false)
		return fmt.Errorf("reading Certificate %s/%s: %w", ns, name, err)
	}
	err := readyCondition(&crt)
	recordCertificateReady(err == nil)
	return err
}

// readyCondition fails unless crt is Ready for its current generation.
func readyCondition(crt *certmanagerv1.Certificate) error {
	for _, c := range crt.Status.Conditions {
		if c.Type == certmanagerv1.CertificateConditionReady {
			// A condition observed for an older generation says nothing
			// about the current spec.
			if c.Status == cmmeta.ConditionTrue && (c.ObservedGeneration == 0 || c.ObservedGeneration == crt.Generation) {
				return nil
			}
			return fmt.Errorf("cert-manager Certificate %s/%s is not Ready: %s: %s", crt.Namespace, crt.Name, c.Reason, c.Message)
		}
	}
	return fmt.Errorf("cert-manager Certificate %s/%s has no Ready condition yet", crt.Namespace, crt.Name)
}

// newCluster builds a cache that lists and watches only the objects the
// provider names, each by a metadata.name field selector: never all Secrets
// or all CRDs of the cluster.
func (p *Provider) newCluster(mgr ctrl.Manager) (cluster.Cluster, error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(scheme))
	utilruntime.Must(admissionregistrationv1.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(certmanagerv1.AddToScheme(scheme))

	byName := func(name string) cache.ByObject {
		return cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", name)}
	}
	byObject := map[client.Object]cache.ByObject{}
	t := p.targets()
	if t.mutating != "" {
		byObject[&admissionregistrationv1.MutatingWebhookConfiguration{}] = byName(t.mutating)
	}
	if t.validating != "" {
		byObject[&admissionregistrationv1.ValidatingWebhookConfiguration{}] = byName(t.validating)
	}
	if t.crd != "" {
		byObject[&apiextensionsv1.CustomResourceDefinition{}] = byName(t.crd)
	}
	switch p.opts.Mode {
	case ModeSelfSigned:
		o := byName(p.opts.SecretName)
		o.Namespaces = map[string]cache.Config{p.opts.SecretNamespace: {}}
		byObject[&corev1.Secret{}] = o
	case ModeCertManager:
		ns, name, _ := p.opts.certificateKey()
		o := byName(name)
		o.Namespaces = map[string]cache.Config{ns: {}}
		byObject[&certmanagerv1.Certificate{}] = o
	}
	c, err := cluster.New(mgr.GetConfig(), func(o *cluster.Options) {
		o.Scheme = scheme
		o.Logger = mgr.GetLogger().WithName("certs")
		// Reading anything else through this cache is a bug, not a reason
		// to start a cluster-wide informer.
		o.Cache = cache.Options{ByObject: byObject, ReaderFailOnMissingInformer: true}
		// The rotator reads and writes the Secret directly: its decisions
		// must never rest on a stale copy.
		o.Client = client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}}
	})
	if err != nil {
		return nil, err
	}
	// Register the informers now so the manager waits for them to sync.
	for obj := range byObject {
		if _, err := c.GetCache().GetInformer(context.Background(), obj); err != nil {
			return nil, fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	return c, nil
}

func (p *Provider) targets() targets {
	return targets{mutating: p.opts.MutatingWebhookConfiguration, validating: p.opts.ValidatingWebhookConfiguration, crd: p.opts.CRD}
}
