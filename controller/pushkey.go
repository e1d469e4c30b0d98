package controller

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Secret in which the operator keeps the Ed25519 key it signs pushes
// with. The manifests ship it empty, as they ship the webhook
// certificate's (certs): RBAC cannot limit create to a name, so the
// operator may only get and update this one Secret, by name, straight from
// the API server (no cache of Secrets at all).
// +kubebuilder:rbac:groups="",namespace=apigateway-operator-system,resources=secrets,verbs=get;update,resourceNames=apigateway-operator-push-key

const (
	// DefaultPushKeySecret names the Secret, in the operator's namespace.
	DefaultPushKeySecret = "apigateway-operator-push-key"
	// PushKeyData is the Secret's key holding the private key, PKCS #8 in
	// PEM.
	PushKeyData = "ed25519.pem"
	// pushKeyResync is how often the leader reads the Secret again: an
	// administrator rotates the key by emptying it (docs/security.md).
	pushKeyResync = time.Minute
)

// pushKeys holds the leader's signing key, read from (or written into)
// the Secret. A key is held only while the Secret holds it: a Secret that
// is gone takes pushes off, and the gateways' ConfigMaps lose their
// identity, until it is back.
type pushKeys struct {
	secret client.ObjectKey
	// live reads the Secret; write updates it (the leader's client).
	live  client.Reader
	write client.Writer
	log   logr.Logger
	// changed is called when the key changes after the first load: every
	// gateway's identity names the public key.
	changed func(context.Context)

	mu      sync.Mutex
	key     ed25519.PrivateKey
	tried   bool
	lastErr string
}

// current is the key to sign with, nil while there is none. The first
// call reads the Secret (and fills it when empty), so that the first
// reconciles of a new leader do not strip every identity; later calls
// return what the last read found, which Start refreshes.
func (k *pushKeys) current(ctx context.Context) ed25519.PrivateKey {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.tried {
		k.tried = true
		k.key, _ = k.loadLocked(ctx)
	}
	return k.key
}

// Start reads the Secret every pushKeyResync until ctx ends, and calls
// changed when the key it holds changes. A read that fails keeps the key
// held: an API server that does not answer for a while is no rotation.
func (k *pushKeys) Start(ctx context.Context) error {
	t := time.NewTicker(pushKeyResync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		k.mu.Lock()
		before := k.key
		k.tried = true
		after, err := k.loadLocked(ctx)
		if err == nil || errors.Is(err, errNoPushSecret) {
			k.key = after
		}
		changed := !before.Equal(k.key)
		k.mu.Unlock()
		if changed && k.changed != nil {
			k.changed(ctx)
		}
	}
}

// errNoPushSecret: the Secret does not exist, so there is no key.
var errNoPushSecret = errors.New("the push key Secret does not exist")

// loadLocked reads the key from the Secret, generating and storing one
// when the Secret holds none (or none usable). The update carries the
// resourceVersion read: of two replicas filling it at once, one wins and
// the other reads what it wrote. k.mu is held.
func (k *pushKeys) loadLocked(ctx context.Context) (ed25519.PrivateKey, error) {
	key, err := k.readOrFill(ctx)
	if apierrors.IsConflict(err) {
		key, err = k.readOrFill(ctx)
	}
	k.note(err)
	return key, err
}

func (k *pushKeys) readOrFill(ctx context.Context) (ed25519.PrivateKey, error) {
	var s corev1.Secret
	switch err := k.live.Get(ctx, k.secret, &s); {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: pushes are off until %s exists (the manifests ship it empty; the operator fills it but may not create it)", errNoPushSecret, k.secret)
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s: %w", k.secret, err)
	}
	if key, err := parsePushKey(s.Data[PushKeyData]); err == nil {
		return key, nil
	} else if len(s.Data[PushKeyData]) > 0 {
		k.log.Info("the push key Secret holds no usable key; writing a new one", "secret", k.secret.String(), "reason", err.Error())
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	data, err := encodePushKey(key)
	if err != nil {
		return nil, err
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[PushKeyData] = data
	if err := k.write.Update(ctx, &s); err != nil {
		return nil, fmt.Errorf("writing the push key into Secret %s: %w", k.secret, err)
	}
	k.log.Info("wrote a new push key", "secret", k.secret.String())
	return key, nil
}

// note logs a failure once, not at every resync while it lasts.
func (k *pushKeys) note(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != k.lastErr && err != nil {
		k.log.Error(err, "no push key: route changes reach the gateway pods through their ConfigMap volume only")
	}
	k.lastErr = msg
}

// encodePushKey is key as PKCS #8 PEM, the form PushKeyData holds.
func encodePushKey(key ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// parsePushKey reads an Ed25519 private key in PKCS #8 PEM.
func parsePushKey(data []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("no PEM PRIVATE KEY block")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an Ed25519 key", k)
	}
	return key, nil
}
