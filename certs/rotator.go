package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// rotator keeps the self-signed Secret, the served certificate and the
// injected bundles in line. Every replica runs one (no leader election):
// each must serve the Secret's certificate, and writes are safe because
// the Secret is updated with optimistic concurrency and the bundles with
// one shared field manager from a fresh read of the Secret.
type rotator struct {
	p      *Provider
	client client.Client
	log    logr.Logger
	key    client.ObjectKey
	policy rotationPolicy
	// wake is signalled by watch events on the Secret and the targets.
	wake chan struct{}
	// lastErr is the last pass's error (nil after a good pass), for the
	// readiness check to say why there is no certificate yet.
	lastErr atomic.Pointer[error]
}

func newRotator(p *Provider, mgr ctrl.Manager) (*rotator, error) {
	r := &rotator{
		p:      p,
		client: p.cluster.GetClient(),
		log:    mgr.GetLogger().WithName("certs").WithValues("secret", p.opts.SecretNamespace+"/"+p.opts.SecretName),
		key:    client.ObjectKey{Namespace: p.opts.SecretNamespace, Name: p.opts.SecretName},
		policy: p.opts.policy(),
		wake:   make(chan struct{}, 1),
	}
	ctx := context.Background()
	for _, obj := range append(p.targets().objects(), &corev1.Secret{}) {
		if err := r.watch(ctx, obj); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// watch wakes the rotator on any event of obj's kind in the cluster's
// restricted cache, which only ever holds the named object.
func (r *rotator) watch(ctx context.Context, obj client.Object) error {
	inf, err := r.p.cluster.GetCache().GetInformer(ctx, obj)
	if err != nil {
		return fmt.Errorf("watching %T: %w", obj, err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { r.poke() },
		UpdateFunc: func(any, any) { r.poke() },
		DeleteFunc: func(any) { r.poke() },
	})
	return err
}

func (r *rotator) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// err is the last pass's error, if any.
func (r *rotator) err() error {
	if p := r.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// NeedLeaderElection is false: every replica serves, so every replica
// must follow the Secret.
func (r *rotator) NeedLeaderElection() bool { return false }

// Start runs the loop until ctx ends: sync, then sleep until the next
// renewal is due, the resync period passes, or a watch event arrives.
// Failures back off exponentially (conflicts with another replica retry at
// once: the loser adopts what the winner wrote).
func (r *rotator) Start(ctx context.Context) error {
	backoff := workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 30*time.Second)
	for {
		wait := r.p.opts.ResyncPeriod
		next, err := r.sync(ctx)
		r.lastErr.Store(&err)
		switch {
		case apierrors.IsConflict(err):
			r.log.V(1).Info("another replica changed the Secret first; adopting it", "reason", err.Error())
			wait = 0
		case err != nil:
			wait = backoff.When("sync")
			r.log.Error(err, "syncing the webhook certificate", "retryIn", wait)
		default:
			backoff.Forget("sync")
			if !next.IsZero() {
				wait = min(wait, max(next.Sub(r.p.clock.Now()), 0))
			}
		}
		timer := r.p.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-r.wake:
		case <-timer.C():
		}
		timer.Stop()
	}
}

// sync makes one pass: plan and write the Secret, serve its certificate,
// inject its bundle, and record the injection. It returns when the next
// pass is due.
func (r *rotator) sync(ctx context.Context) (time.Time, error) {
	secret, err := r.read(ctx)
	if err != nil {
		return time.Time{}, err
	}
	d, err := plan(secretContent{Data: secret.Data, Annotations: secret.Annotations}, r.p.clock.Now(), r.policy)
	if err != nil {
		return time.Time{}, err
	}
	if d.Changed() {
		secret.Data, secret.Annotations = d.Secret.Data, d.Secret.Annotations
		if err := r.write(ctx, secret); err != nil {
			return time.Time{}, err
		}
		r.log.Info("updated the webhook certificate Secret", "reasons", d.Reasons)
	}
	if err := r.serve(secret.Data); err != nil {
		return time.Time{}, err
	}

	bundle := secret.Data[KeyCABundle]
	injected, err := r.p.targets().inject(ctx, r.client, bundle)
	if err != nil || !injected {
		return d.Next, err
	}
	annotations, changed := markInjected(secret.Annotations, bundle, r.p.clock.Now())
	if changed {
		secret.Annotations = annotations
		if err := r.write(ctx, secret); err != nil {
			return time.Time{}, err
		}
		// The injection time can make a staged CA's promotion due.
		if due := r.p.clock.Now().Add(r.policy.Propagation); d.Next.IsZero() || due.Before(d.Next) {
			return due, nil
		}
	}
	return d.Next, nil
}

// read gets the Secret straight from the API server (the cluster's client
// does not cache Secrets). The operator never creates it: create cannot be
// restricted to one name by RBAC, so the manifests ship it empty and the
// operator may only read and update that one name.
func (r *rotator) read(ctx context.Context) (*corev1.Secret, error) {
	var s corev1.Secret
	err := r.client.Get(ctx, r.key, &s)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("secret %s not found: the operator fills it but does not create it; "+
			"apply the manifests (manifests/rbac ships it empty) or `kubectl -n %s create secret generic %s`",
			r.key, r.key.Namespace, r.key.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s: %w", r.key, err)
	}
	return &s, nil
}

// write updates the Secret at the resourceVersion it was read at, so of two
// replicas writing at once exactly one succeeds.
func (r *rotator) write(ctx context.Context, s *corev1.Secret) error {
	return r.client.Update(ctx, s)
}

// serve switches the served certificate to the Secret's, when it differs.
func (r *rotator) serve(data map[string][]byte) error {
	if cur := r.p.served.Load(); cur != nil && bytes.Equal(cur.pem, data[KeyTLSCert]) {
		return nil
	}
	cert, err := tls.X509KeyPair(data[KeyTLSCert], data[KeyTLSKey])
	if err != nil {
		return fmt.Errorf("loading the serving certificate from Secret %s: %w", r.key, err)
	}
	r.p.served.Store(&servedCert{cert: &cert, pem: bytes.Clone(data[KeyTLSCert])})
	r.log.Info("serving a new certificate", "notAfter", cert.Leaf.NotAfter, "issuer", cert.Leaf.Issuer.CommonName)
	return nil
}
