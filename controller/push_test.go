package controller

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/push"
)

func TestNextIdentity(t *testing.T) {
	gw := &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "gw", UID: "u-1"}}
	pub := ed25519.PublicKey(make([]byte, ed25519.PublicKeySize))
	now := time.UnixMilli(1_000_000)
	for name, tc := range map[string]struct {
		prev   configState
		hash   string
		serial uint64
		fresh  bool
	}{
		"a new ConfigMap starts at the time": {
			prev: configState{}, hash: "a", serial: 1_000_000, fresh: true},
		"the same template keeps its serial": {
			prev: configState{exists: true, hash: "a", serial: 7, hasSerial: true}, hash: "a", serial: 7},
		"a new template: the time, when above": {
			prev: configState{exists: true, hash: "a", serial: 7, hasSerial: true}, hash: "b", serial: 1_000_000, fresh: true},
		"a new template: one more, when the time is behind (a burst, a slow clock)": {
			prev: configState{exists: true, hash: "a", serial: 2_000_000, hasSerial: true}, hash: "b", serial: 2_000_001, fresh: true},
		"a ConfigMap without an identity (an operator from before pushes) gets one": {
			prev: configState{exists: true, hash: "a"}, hash: "a", serial: 1_000_000, fresh: true},
		"a ConfigMap deleted by hand: the time is above what the pods serve": {
			prev: configState{}, hash: "a", serial: 1_000_000, fresh: true},
	} {
		t.Run(name, func(t *testing.T) {
			id, fresh := nextIdentity(gw, pub, tc.prev, tc.hash, now)
			assert.Equal(t, tc.serial, id.Serial)
			assert.Equal(t, tc.fresh, fresh)
			assert.Equal(t, push.Identity{Namespace: "shop", Name: "gw", UID: "u-1", PublicKey: pub, Serial: tc.serial}, id)
			// What the ConfigMap holds is what the reloader reads.
			back, err := push.ParseIdentity([]byte(identityJSON(id)))
			require.NoError(t, err)
			assert.Equal(t, id, back)
		})
	}
}

func TestConfigStateOf(t *testing.T) {
	pub := make([]byte, ed25519.PublicKeySize)
	id := identityJSON(push.Identity{Namespace: "shop", Name: "gw", UID: "u-1", PublicKey: pub, Serial: 42})
	cm := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9"}, Data: data}
	}
	// The cache's slim form and the API server's whole one say the same.
	slim := cm(map[string]string{configKey: "tmpl", push.IdentityKey: id})
	slimConfigMap(slim)
	assert.Len(t, slim.Data, 1, "one entry in place of the template and the identity")
	again := slim.DeepCopy()
	slimConfigMap(again)
	assert.Equal(t, slim, again, "the transform is idempotent")
	unusable := cm(map[string]string{configKey: "tmpl", push.IdentityKey: "{"})
	slimConfigMap(unusable)
	for name, tc := range map[string]struct {
		cm   *corev1.ConfigMap
		want configState
	}{
		"none": {nil, configState{}},
		"whole": {cm(map[string]string{configKey: "tmpl", push.IdentityKey: id}),
			configState{exists: true, resourceVersion: "9", hash: configHash("tmpl"), serial: 42, hasSerial: true}},
		"slimmed by the cache": {slim,
			configState{exists: true, resourceVersion: "9", hash: configHash("tmpl"), serial: 42, hasSerial: true}},
		"no identity": {cm(map[string]string{configKey: "tmpl"}),
			configState{exists: true, resourceVersion: "9", hash: configHash("tmpl")}},
		"another gateway's identity (an earlier UID)": {
			cm(map[string]string{configKey: "tmpl", push.IdentityKey: identityJSON(push.Identity{Namespace: "shop", Name: "gw", UID: "u-0", PublicKey: pub, Serial: 99})}),
			configState{exists: true, resourceVersion: "9", hash: configHash("tmpl")}},
		"an unusable identity": {cm(map[string]string{configKey: "tmpl", push.IdentityKey: "{"}),
			configState{exists: true, resourceVersion: "9", hash: configHash("tmpl")}},
		"an unusable identity, slimmed: no serial, so no hash is needed": {unusable,
			configState{exists: true, resourceVersion: "9"}},
		"a slim form that does not parse": {cm(map[string]string{pushStateKey: "42 u-1"}),
			configState{exists: true, resourceVersion: "9"}},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, configStateOf(tc.cm, "u-1"))
		})
	}
}

func TestClassifyPush(t *testing.T) {
	for name, tc := range map[string]struct {
		code   int
		err    error
		result string
		retry  bool
	}{
		"loaded":                          {code: http.StatusOK, result: pushLoaded},
		"nginx -t refused it":             {code: http.StatusUnprocessableEntity, result: pushRefused},
		"the pod serves a newer one":      {code: http.StatusConflict, result: pushSuperseded},
		"no identity in the volume yet":   {code: http.StatusForbidden, result: pushNotAccepted},
		"a pod without --push-identity":   {code: http.StatusNotFound, result: pushNotAccepted},
		"another push in hand":            {code: http.StatusTooManyRequests, result: pushFailed, retry: true},
		"nginx not serving yet":           {code: http.StatusServiceUnavailable, result: pushFailed, retry: true},
		"the reload did not take":         {code: http.StatusInternalServerError, result: pushFailed, retry: true},
		"no answer (restarting, gone)":    {err: errors.New("connection refused"), result: pushFailed, retry: true},
		"malformed: a bug, not retried":   {code: http.StatusBadRequest, result: pushMalformed},
		"too large: a bug, not retried":   {code: http.StatusRequestEntityTooLarge, result: pushMalformed},
		"an answer no reloader gives":     {code: http.StatusTeapot, result: pushMalformed},
		"a redirect is not followed here": {code: http.StatusFound, result: pushMalformed},
	} {
		t.Run(name, func(t *testing.T) {
			result, retry := classifyPush(tc.code, tc.err)
			assert.Equal(t, tc.result, result)
			assert.Equal(t, tc.retry, retry)
		})
	}
}

// TestPushKeyCustody: an empty Secret gets a key, which later reads
// return; two replicas filling it at once agree (the loser of the update
// reads the winner's key); a Secret that is gone is no key; one emptied
// by hand gets a new key (the rotation).
func TestPushKeyCustody(t *testing.T) {
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "op", Name: DefaultPushKeySecret}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	c := fake.NewClientBuilder().WithObjects(secret).Build()
	keys := func(w client.Writer) *pushKeys { return &pushKeys{secret: key, live: c, write: w} }

	first := keys(c).current(ctx)
	require.NotNil(t, first)
	var s corev1.Secret
	require.NoError(t, c.Get(ctx, key, &s))
	stored, err := parsePushKey(s.Data[PushKeyData])
	require.NoError(t, err)
	assert.True(t, first.Equal(stored))
	assert.True(t, first.Equal(keys(c).current(ctx)), "a second replica reads the key the first wrote")

	// Another replica wrote between this one's read and its update.
	require.NoError(t, c.Update(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: s.ResourceVersion}}))
	_, winner, _ := ed25519.GenerateKey(rand.Reader)
	racing := &racingWriter{Client: c, before: func() {
		pemKey, err := encodePushKey(winner)
		require.NoError(t, err)
		var cur corev1.Secret
		require.NoError(t, c.Get(ctx, key, &cur))
		cur.Data = map[string][]byte{PushKeyData: pemKey}
		require.NoError(t, c.Update(ctx, &cur))
	}}
	assert.True(t, winner.Equal(keys(racing).current(ctx)), "the loser of the race adopts the winner's key")

	// Emptied: a new key.
	require.NoError(t, c.Get(ctx, key, &s))
	s.Data = nil
	require.NoError(t, c.Update(ctx, &s))
	rotated := keys(c).current(ctx)
	require.NotNil(t, rotated)
	assert.False(t, rotated.Equal(winner))

	// Gone: no key.
	require.NoError(t, c.Delete(ctx, &s))
	assert.Nil(t, keys(c).current(ctx))
}

// racingWriter runs before once, ahead of the first update: that update
// then carries a stale resourceVersion and conflicts.
type racingWriter struct {
	client.Client
	before func()
}

func (w *racingWriter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if w.before != nil {
		w.before()
		w.before = nil
	}
	return w.Client.Update(ctx, obj, opts...)
}
