package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1ac "k8s.io/apiextensions-apiserver/pkg/client/applyconfiguration/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fieldOwner is the server-side apply field manager of the injected CA
// bundles. All replicas share it, so they never conflict with each other.
const fieldOwner = "apigateway-operator-certs"

// targets names the objects whose CA bundles must trust the serving
// certificate; an empty name is skipped.
type targets struct {
	mutating, validating, crd string
}

// Kinds of injection targets.
const (
	kindMutating   = "MutatingWebhookConfiguration"
	kindValidating = "ValidatingWebhookConfiguration"
	kindCRD        = "CustomResourceDefinition"
)

// target is the observed state of one configured target object.
type target struct {
	kind, name string
	// found is false when the object does not exist.
	found bool
	// bundles are its CA bundles by webhook name; a CRD whose conversion
	// strategy is not Webhook has none.
	bundles map[string][]byte
}

func (t target) String() string { return t.kind + " " + t.name }

// read returns the state of every configured target.
func (t targets) read(ctx context.Context, c client.Reader) ([]target, error) {
	readers := []struct {
		name string
		read func(context.Context, client.Reader, string) (target, error)
	}{{t.mutating, readMutating}, {t.validating, readValidating}, {t.crd, readCRD}}
	var out []target
	var errs []error
	for _, r := range readers {
		if r.name == "" {
			continue
		}
		tg, err := r.read(ctx, c, r.name)
		out = append(out, tg)
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

func readMutating(ctx context.Context, c client.Reader, name string) (target, error) {
	var o admissionregistrationv1.MutatingWebhookConfiguration
	err := get(ctx, c, name, &o)
	return webhookTarget(kindMutating, name, o.Name != "", o.Webhooks,
		func(w admissionregistrationv1.MutatingWebhook) (string, []byte) {
			return w.Name, w.ClientConfig.CABundle
		}), err
}

func readValidating(ctx context.Context, c client.Reader, name string) (target, error) {
	var o admissionregistrationv1.ValidatingWebhookConfiguration
	err := get(ctx, c, name, &o)
	return webhookTarget(kindValidating, name, o.Name != "", o.Webhooks,
		func(w admissionregistrationv1.ValidatingWebhook) (string, []byte) {
			return w.Name, w.ClientConfig.CABundle
		}), err
}

// webhookTarget is the target of a webhook configuration: the two kinds
// hold their webhooks in two types with the same fields, which bundle
// reads.
func webhookTarget[W any](kind, name string, found bool, webhooks []W, bundle func(W) (string, []byte)) target {
	tg := target{kind: kind, name: name, found: found, bundles: map[string][]byte{}}
	for _, w := range webhooks {
		webhook, b := bundle(w)
		tg.bundles[webhook] = b
	}
	return tg
}

func readCRD(ctx context.Context, c client.Reader, name string) (target, error) {
	var o apiextensionsv1.CustomResourceDefinition
	err := get(ctx, c, name, &o)
	tg := target{kind: kindCRD, name: name, found: o.Name != "", bundles: map[string][]byte{}}
	if conversionWebhook(&o) {
		tg.bundles["conversion"] = o.Spec.Conversion.Webhook.ClientConfig.CABundle
	}
	return tg, err
}

// objects are empty objects of the configured targets' kinds.
func (t targets) objects() []client.Object {
	var out []client.Object
	if t.mutating != "" {
		out = append(out, &admissionregistrationv1.MutatingWebhookConfiguration{})
	}
	if t.validating != "" {
		out = append(out, &admissionregistrationv1.ValidatingWebhookConfiguration{})
	}
	if t.crd != "" {
		out = append(out, &apiextensionsv1.CustomResourceDefinition{})
	}
	return out
}

// get reads a cluster-scoped object; a missing one leaves obj empty.
func get(ctx context.Context, c client.Reader, name string, obj client.Object) error {
	err := c.Get(ctx, client.ObjectKey{Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %T %s: %w", obj, name, err)
	}
	return nil
}

func conversionWebhook(crd *apiextensionsv1.CustomResourceDefinition) bool {
	conv := crd.Spec.Conversion
	return conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter && conv.Webhook != nil && conv.Webhook.ClientConfig != nil
}

// trust fails unless every target exists and each of its bundles verifies
// the serving chain at now. It records each target's verdict and the CA
// the bundles verify the chain with (see metrics.go).
func (t targets) trust(ctx context.Context, c client.Reader, chain []*x509.Certificate, now time.Time) error {
	all, err := t.read(ctx, c)
	if err != nil {
		return err
	}
	var errs []error
	var ca *x509.Certificate
	for _, tg := range all {
		trusted := tg.found
		if !tg.found {
			errs = append(errs, fmt.Errorf("%s not found", tg))
		}
		for webhook, bundle := range tg.bundles {
			root, err := verifiedRoot(chain, bundle, now)
			if err != nil {
				trusted = false
				errs = append(errs, fmt.Errorf("%s, webhook %s: its CA bundle does not trust the served certificate: %w", tg, webhook, err))
				continue
			}
			if ca == nil || root.NotAfter.Before(ca.NotAfter) {
				ca = root
			}
		}
		recordTrusted(tg.kind, trusted)
	}
	recordExpiry(certificateCA, ca)
	return errors.Join(errs...)
}

// inject sets every CA bundle of the targets to bundle with server-side
// apply, sending only the caBundle fields. It reports whether every existing
// target now holds bundle; missing targets have nothing to trust.
func (t targets) inject(ctx context.Context, c client.Client, bundle []byte) (bool, error) {
	all, err := t.read(ctx, c)
	if err != nil {
		return false, err
	}
	var errs []error
	for _, tg := range all {
		if allEqual(tg.bundles, bundle) {
			continue
		}
		if err := c.Apply(ctx, applyConfig(tg, bundle), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			errs = append(errs, fmt.Errorf("injecting the CA bundle into %s: %w", tg, err))
		}
	}
	return len(errs) == 0, errors.Join(errs...)
}

// applyConfig is the apply configuration setting every CA bundle of tg.
func applyConfig(tg target, bundle []byte) runtime.ApplyConfiguration {
	cc := admissionregistrationv1ac.WebhookClientConfig().WithCABundle(bundle...)
	switch tg.kind {
	case kindMutating:
		ac := admissionregistrationv1ac.MutatingWebhookConfiguration(tg.name)
		for webhook := range tg.bundles {
			ac.WithWebhooks(admissionregistrationv1ac.MutatingWebhook().WithName(webhook).WithClientConfig(cc))
		}
		return ac
	case kindValidating:
		ac := admissionregistrationv1ac.ValidatingWebhookConfiguration(tg.name)
		for webhook := range tg.bundles {
			ac.WithWebhooks(admissionregistrationv1ac.ValidatingWebhook().WithName(webhook).WithClientConfig(cc))
		}
		return ac
	default:
		return apiextensionsv1ac.CustomResourceDefinition(tg.name).WithSpec(apiextensionsv1ac.CustomResourceDefinitionSpec().
			WithConversion(apiextensionsv1ac.CustomResourceConversion().
				WithWebhook(apiextensionsv1ac.WebhookConversion().
					WithClientConfig(apiextensionsv1ac.WebhookClientConfig().WithCABundle(bundle...)))))
	}
}

func allEqual(b map[string][]byte, bundle []byte) bool {
	for _, got := range b {
		if !bytes.Equal(got, bundle) {
			return false
		}
	}
	return true
}
