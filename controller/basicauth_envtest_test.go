package controller

import (
	"context"
	"crypto/sha1" //nolint:gosec // {SHA} is the htpasswd scheme under test
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/basicauth"
)

// htpasswdLine is user's {SHA} line for password.
func htpasswdLine(user, password string) string {
	sum := sha1.Sum([]byte(password)) //nolint:gosec // the scheme under test
	return user + ":{SHA}" + base64.StdEncoding.EncodeToString(sum[:]) + "\n"
}

// basicAuthChild is gw's Secret N-basic-auth, nil while it does not exist.
func basicAuthChild(t *testing.T, gw *v1.APIGateway) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: gw.Namespace, Name: basicAuthSecretName(gw)}, s)
	if err != nil {
		require.NoError(t, client.IgnoreNotFound(err))
		return nil
	}
	return s
}

// waitBasicAuthFile waits until gw's Secret holds want as the file of the
// tenant's Secret "users".
func waitBasicAuthFile(t *testing.T, gw *v1.APIGateway, want string) *corev1.Secret {
	t.Helper()
	const secret = "users"
	var s *corev1.Secret
	require.Eventually(t, func() bool {
		s = basicAuthChild(t, gw)
		if s == nil {
			return false
		}
		got, ok := s.Data[basicauth.File(secret)]
		return ok && string(got) == want
	}, waitFor, tick, "the gateway's Secret holds %q for Secret %s", want, secret)
	return s
}

// TestBasicAuthSecret: a basicAuth route whose Secret is missing shows it
// in the BasicAuth condition and gets an empty file (nginx answers 401);
// once the Secret exists, its checked lines reach the gateway's own
// Secret (mounted by the pods), and a rotation or a refused file changes
// only that Secret: not the ConfigMap, not the Deployment (no rollout).
// Nothing of the tenant's Secret reaches the ConfigMap, the status or the
// events. A route that drops basicAuth drops the volume and the condition.
func TestBasicAuthSecret(t *testing.T) {
	startOperator(t, func(o *Options) { o.basicAuthResync = 200 * time.Millisecond })
	ctx := context.Background()
	ns := newNamespace(t, "basic-auth")
	r := route("shop.example.com", "/admin", v1.PathTypePrefix, "admin", 8080)
	r.BasicAuth = &v1.BasicAuth{SecretName: "users", Realm: "Staff only"}
	gw := gateway("shop", r, route("shop.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw = createGateway(t, gw)

	// Missing: the condition says so, the file is empty.
	cur := waitCondition(t, gw, v1.ConditionBasicAuth, metav1.ConditionFalse, v1.ReasonSecretInvalid)
	assert.Contains(t, meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionBasicAuth).Message, "Secret users does not exist")
	child := waitBasicAuthFile(t, gw, "")
	assertControlledBy(t, child, cur)
	_, ch := settled(t, gw)
	assert.Contains(t, ch.cm.Data[configKey], "auth_basic_user_file "+basicauth.Path("users")+";")
	assertMountsBasicAuth(t, ch, gw, true)
	depGeneration := ch.dep.Generation

	// Created: its checked lines, comments left out, reach the pods'
	// Secret; the tenant's other keys do not.
	alice := htpasswdLine("alice", "first-password")
	users := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "users"},
		Data: map[string][]byte{basicauth.SecretKey: []byte("# team\n" + alice), "other": []byte("not for the gateway")}}
	require.NoError(t, env.Client.Create(ctx, users))
	waitCondition(t, gw, v1.ConditionBasicAuth, metav1.ConditionTrue, v1.ReasonSecretsValid)
	child = waitBasicAuthFile(t, gw, alice)
	assert.Len(t, child.Data, 1, "only the htpasswd file, under the operator's name")

	// Rotated: the new line replaces the old; no rollout.
	rotated := htpasswdLine("alice", "second-password")
	setSecret(t, users, rotated)
	waitBasicAuthFile(t, gw, rotated)

	// Refused: plaintext. The file empties (401), the condition says why
	// without the password.
	setSecret(t, users, "alice:{PLAIN}third-password\n")
	cur = waitCondition(t, gw, v1.ConditionBasicAuth, metav1.ConditionFalse, v1.ReasonSecretInvalid)
	msg := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionBasicAuth).Message
	assert.Contains(t, msg, "Secret users: htpasswd refused: line 1: a plaintext password")
	waitBasicAuthFile(t, gw, "")

	_, ch = settled(t, gw)
	assert.Equal(t, depGeneration, ch.dep.Generation, "the Deployment did not change: no rollout")
	for _, secret := range []string{"first-password", "second-password", "third-password", "{SHA}", "alice"} {
		assert.NotContains(t, ch.cm.Data[configKey], secret, "the ConfigMap")
		assert.NotContains(t, statusText(t, cur), secret, "the status")
		events, err := gatewayEvents(ctx, gw)
		require.NoError(t, err)
		assert.NotContains(t, strings.Join(events, "\n"), secret, "the events")
	}

	// Dropped: no condition, no volume, the Secret emptied.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := &v1.APIGateway{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(gw), latest); err != nil {
			return err
		}
		latest.Spec.Routes[0].BasicAuth = nil
		return env.Client.Update(ctx, latest)
	}))
	require.Eventually(t, func() bool {
		latest := &v1.APIGateway{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), latest))
		s := basicAuthChild(t, gw)
		return meta.FindStatusCondition(latest.Status.Conditions, v1.ConditionBasicAuth) == nil && s != nil && len(s.Data) == 0
	}, waitFor, tick, "the condition removed and the Secret emptied")
	_, ch = settled(t, gw)
	assertMountsBasicAuth(t, ch, gw, false)
}

// createBasicAuthGateway creates, in ns, the Secret "users" holding
// file and a gateway whose one route names it.
func createBasicAuthGateway(t *testing.T, ns, file string) (*corev1.Secret, *v1.APIGateway) {
	t.Helper()
	users := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "users"},
		Data: map[string][]byte{basicauth.SecretKey: []byte(file)}}
	require.NoError(t, env.Client.Create(context.Background(), users))
	r := route("shop.example.com", "/", v1.PathTypePrefix, "web", 80)
	r.BasicAuth = &v1.BasicAuth{SecretName: "users"}
	gw := gateway("shop", r)
	gw.Namespace = ns
	return users, createGateway(t, gw)
}

// TestBasicAuthIdlePassReadsNoSecret: once the watch has read the
// Secrets' versions, a pass of a basicAuth gateway (here for a spec change
// that touches no route) reads no Secret whole, neither the tenant's nor
// N-basic-auth; a rotation is still read and delivered, and the passes
// after it read none again.
func TestBasicAuthIdlePassReadsNoSecret(t *testing.T) {
	op := startOperator(t, func(o *Options) { o.basicAuthResync = 200 * time.Millisecond })
	ctx := context.Background()
	ns := newNamespace(t, "basic-auth-idle")
	users, gw := createBasicAuthGateway(t, ns, htpasswdLine("alice", "first"))
	waitBasicAuthFile(t, gw, htpasswdLine("alice", "first"))

	reads := func() int {
		n := 0
		for _, p := range op.writes.secretReads() {
			if strings.HasPrefix(p, "/api/v1/namespaces/"+ns+"/") {
				n++
			}
		}
		return n
	}
	replicas := 1
	// pass changes the spec's replicas and returns how many whole Secrets
	// were read by the time the pass that saw it wrote its status (the
	// reads come before the status write).
	pass := func() int {
		before := reads()
		replicas = 3 - replicas
		patchSpec(t, gw, fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
		cur := &v1.APIGateway{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), cur))
		require.Eventually(t, func() bool {
			latest := &v1.APIGateway{}
			require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), latest))
			c := meta.FindStatusCondition(latest.Status.Conditions, v1.ConditionBasicAuth)
			return c != nil && c.ObservedGeneration >= cur.Generation
		}, waitFor, tick, "the pass of generation %d", cur.Generation)
		return reads() - before
	}
	// The watch's first round after the last write: a pass reads none.
	require.Eventually(t, func() bool { return pass() == 0 }, waitFor, tick, "a pass read no Secret")
	for range 3 {
		assert.Zero(t, pass(), "an idle pass reads no Secret")
	}

	before := reads()
	setSecret(t, users, htpasswdLine("bob", "second"))
	waitBasicAuthFile(t, gw, htpasswdLine("bob", "second"))
	assert.Greater(t, reads(), before, "the rotation was read")
	require.Eventually(t, func() bool { return pass() == 0 }, waitFor, tick, "a pass read no Secret after the rotation")
	assert.Zero(t, pass(), "an idle pass reads no Secret")
}

// TestBasicAuthNameTaken: a Secret N-basic-auth that is not the
// gateway's is left alone, and so is the Deployment, whose pods would
// mount it: the condition and Degraded say so.
func TestBasicAuthNameTaken(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "basic-auth-taken")
	r := route("shop.example.com", "/", v1.PathTypePrefix, "web", 80)
	r.BasicAuth = &v1.BasicAuth{SecretName: "users"}
	gw := gateway("shop", r)
	gw.Namespace = ns
	forged := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: basicAuthSecretName(gw)},
		Data: map[string][]byte{basicauth.File("users"): []byte("alice:{PLAIN}x\n")}}
	require.NoError(t, env.Client.Create(ctx, forged))
	gw = createGateway(t, gw)
	waitCondition(t, gw, v1.ConditionBasicAuth, metav1.ConditionFalse, ReasonChildNameTaken)
	waitCondition(t, gw, v1.ConditionDegraded, metav1.ConditionTrue, ReasonChildNameTaken)
	kept := &corev1.Secret{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(forged), kept))
	assert.Equal(t, forged.Data, kept.Data, "the other Secret is untouched")
	assert.Nil(t, metav1.GetControllerOf(kept))
}

// setSecret replaces s's htpasswd file.
func setSecret(t *testing.T, s *corev1.Secret, file string) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(s), s); err != nil {
			return err
		}
		s.Data[basicauth.SecretKey] = []byte(file)
		return env.Client.Update(context.Background(), s)
	}))
}

// assertMountsBasicAuth checks whether the pods mount gw's Secret.
func assertMountsBasicAuth(t *testing.T, ch children, gw *v1.APIGateway, want bool) {
	t.Helper()
	pod := ch.dep.Spec.Template.Spec
	var vol *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == basicAuthVolume {
			vol = &pod.Volumes[i]
		}
	}
	mounted := false
	for _, m := range pod.Containers[0].VolumeMounts {
		mounted = mounted || m.Name == basicAuthVolume && m.MountPath == basicauth.Dir && m.ReadOnly
	}
	assert.Equal(t, want, vol != nil && mounted, "the basic-auth volume and mount")
	if want && vol != nil {
		assert.Equal(t, basicAuthSecretName(gw), vol.Secret.SecretName)
	}
}

// statusText is gw's status as text.
func statusText(t *testing.T, gw *v1.APIGateway) string {
	t.Helper()
	var b strings.Builder
	for _, c := range gw.Status.Conditions {
		b.WriteString(c.Type + " " + c.Reason + " " + c.Message + "\n")
	}
	return b.String()
}

// TestBasicAuthUnderTheGeneratedRBAC: as the operator's ServiceAccount
// under manifests/rbac, what basic auth does works (a named Secret read
// whole and by its metadata, the gateway's Secret created and patched),
// and what it must not do is forbidden: listing or watching Secrets,
// updating or deleting one.
func TestBasicAuthUnderTheGeneratedRBAC(t *testing.T) {
	ctx := context.Background()
	env.ApplyRBAC(t)
	ns := newNamespace(t, "basic-auth-rbac")
	users, gw := createBasicAuthGateway(t, ns, htpasswdLine("alice", "pw"))

	c, err := client.NewWithWatch(env.AsOperator(), client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	a := readBasicAuth(ctx, c, gw)
	require.NoError(t, a.err)
	assert.Empty(t, a.problems)
	rec := &Reconciler{clients: clients{cached: c, live: c}}
	key := client.ObjectKey{Namespace: ns, Name: basicAuthSecretName(gw)}
	act, _, err := rec.writeBasicAuthSecret(ctx, gw, key, desiredBasicAuthSecret(gw, a.files))
	require.NoError(t, err)
	assert.Equal(t, created, act)
	act, _, err = rec.writeBasicAuthSecret(ctx, gw, key, desiredBasicAuthSecret(gw, map[string]string{basicauth.File("users"): ""}))
	require.NoError(t, err)
	assert.Equal(t, updated, act)
	w := &basicAuthWatch{live: c, gateways: map[client.ObjectKey]map[string]string{}}
	w.track(client.ObjectKeyFromObject(gw), map[string]string{"users": "0"})
	assert.Equal(t, []client.ObjectKey{client.ObjectKeyFromObject(gw)}, w.changed(ctx), "the metadata read")

	forbidden := map[string]error{
		"list":   c.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)),
		"update": c.Update(ctx, users.DeepCopy()),
		"delete": c.Delete(ctx, users.DeepCopy()),
	}
	watch, err := c.Watch(ctx, &corev1.SecretList{}, client.InNamespace(ns))
	if err == nil {
		watch.Stop()
	}
	forbidden["watch"] = err
	for verb, err := range forbidden {
		assert.True(t, apierrors.IsForbidden(err), "%s Secrets: %v", verb, err)
	}
}
