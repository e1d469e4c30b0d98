package node

import (
	"crypto/sha1" //nolint:gosec // {SHA} is the htpasswd scheme under test
	"encoding/base64"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/basicauth"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/testenv"
)

// htpasswdSHA is user's {SHA} line for password.
func htpasswdSHA(user, password string) []byte {
	sum := sha1.Sum([]byte(password)) //nolint:gosec // the scheme under test
	return []byte(user + ":{SHA}" + base64.StdEncoding.EncodeToString(sum[:]) + "\n")
}

// TestBasicAuthOnTheNode: a gateway route with basicAuth, on the real
// node: each pod (the kubelet mounts the gateway's Secret N-basic-auth)
// answers 401 without credentials or with a wrong password and serves the
// right one; the tenant's Secret changed, each pod serves the new
// password and refuses the old within the kubelet's sync, and no pod was
// replaced.
func TestBasicAuthOnTheNode(t *testing.T) {
	ctx := t.Context()
	startServiceDNS(t)
	ns := testenv.NewNamespace(t, env.Client, "basic-auth")
	backend := startBackend(t, ns)
	startOperator(t)
	users := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "users"},
		Data: map[string][]byte{basicauth.SecretKey: htpasswdSHA("alice", "first")}}
	require.NoError(t, env.Client.Create(ctx, users))
	gw := newGateway(ns, "shop", backend, 2)
	gw.Spec.Routes[0].BasicAuth = &v1.BasicAuth{SecretName: "users"}
	require.NoError(t, env.Client.Create(ctx, gw))
	for _, cond := range []string{"Live", "Ready", v1.ConditionBasicAuth} {
		res := env.Kubectl(ctx, nil, "wait", "--for=condition="+cond, "agw/"+gw.Name, "-n", ns, "--timeout=3m")
		require.NoError(t, res.Err, "%s\n%s", res.Stderr, env.Kubectl(ctx, nil, "get", "agw,deploy,pods", "-n", ns, "-o", "yaml").Stdout)
	}
	var pods corev1.PodList
	require.NoError(t, env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{controller.LabelInstance: gw.Name}))
	require.Len(t, pods.Items, 2)
	as := func(user, password string) func(*http.Request) {
		return func(r *http.Request) { r.SetBasicAuth(user, password) }
	}
	host := gatewayHost(ns)
	for _, pod := range pods.Items {
		ip := pod.Status.PodIP
		// The pod may have started before the kubelet had the Secret's
		// files (403 until then): wait for the right password once.
		require.Eventually(t, func() bool { return statusThrough(ctx, ip, host, "/users/1", as("alice", "first")) == http.StatusOK },
			routeChangeWait, tick, "pod %s never served alice", pod.Name)
		require.Equal(t, http.StatusUnauthorized, statusThrough(ctx, ip, host, "/users/1"), "no credentials, pod %s", pod.Name)
		require.Equal(t, http.StatusUnauthorized, statusThrough(ctx, ip, host, "/users/1", as("alice", "second")), "wrong password, pod %s", pod.Name)
	}

	users.Data[basicauth.SecretKey] = htpasswdSHA("alice", "second")
	require.NoError(t, env.Client.Update(ctx, users))
	rotated := time.Now()
	for _, pod := range pods.Items {
		ip := pod.Status.PodIP
		require.Eventually(t, func() bool { return statusThrough(ctx, ip, host, "/users/1", as("alice", "second")) == http.StatusOK },
			routeChangeWait, tick, "pod %s never served the new password", pod.Name)
		t.Logf("the new password served by pod %s %s after the Secret's change", pod.Name, time.Since(rotated).Round(time.Millisecond))
		require.Equal(t, http.StatusUnauthorized, statusThrough(ctx, ip, host, "/users/1", as("alice", "first")), "old password, pod %s", pod.Name)
	}
	var now corev1.PodList
	require.NoError(t, env.Client.List(ctx, &now, client.InNamespace(ns), client.MatchingLabels{controller.LabelInstance: gw.Name}))
	require.ElementsMatch(t, podUIDs(pods), podUIDs(now), "the pods were replaced")
}
