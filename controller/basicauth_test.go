package controller

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/basicauth"
)

// withBasicAuth is gw with basicAuth on its first route, naming Secret
// "users".
func withBasicAuth(gw *v1.APIGateway) *v1.APIGateway {
	gw = gw.DeepCopy()
	gw.Spec.Routes[0].BasicAuth = &v1.BasicAuth{SecretName: "users"}
	return gw
}

func TestHtpasswdOf(t *testing.T) {
	line := "alice:{SHA}AMr9EmGC6KnnwBuy8N/QBJa+ck8=\n"
	tests := map[string]struct {
		data    map[string][]byte
		want    string
		problem string
	}{
		"accepted, other keys ignored": {data: map[string][]byte{"auth": []byte(line), "users": []byte("bob:{PLAIN}x")}, want: line},
		"no key auth":                  {data: map[string][]byte{"htpasswd": []byte(line)}, problem: `no key "auth"`},
		"refused":                      {data: map[string][]byte{"auth": []byte("alice:{PLAIN}hunter2")}, problem: "line 1: a plaintext password"},
		"empty":                        {data: map[string][]byte{"auth": nil}, problem: "no user"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, problem := htpasswdOf(&corev1.Secret{Data: tc.data})
			assert.Equal(t, tc.want, got)
			if tc.problem == "" {
				assert.Empty(t, problem)
				return
			}
			assert.Contains(t, problem, tc.problem)
			assert.NotContains(t, problem, "hunter2")
		})
	}
}

func TestBasicAuthCondition(t *testing.T) {
	plain := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
	auth := withBasicAuth(plain)
	many := make([]string, basicauth.MaxSecrets+3)
	for i := range many {
		many[i] = "Secret s does not exist"
	}
	tests := map[string]struct {
		gw      *v1.APIGateway
		a       basicAuth
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		"no basicAuth":  {gw: plain, a: basicAuth{versions: map[string]string{}}},
		"all valid":     {gw: auth, a: basicAuth{versions: map[string]string{"users": "7"}}, status: metav1.ConditionTrue, reason: v1.ReasonSecretsValid, message: "Secrets the routes name: 1, each"},
		"missing":       {gw: auth, a: basicAuth{problems: []string{"Secret users does not exist"}}, status: metav1.ConditionFalse, reason: v1.ReasonSecretInvalid, message: "Secret users does not exist: the routes naming them answer 401"},
		"many problems": {gw: auth, a: basicAuth{problems: many}, status: metav1.ConditionFalse, reason: v1.ReasonSecretInvalid, message: "and 3 more"},
		"name taken":    {gw: auth, a: basicAuth{taken: true}, status: metav1.ConditionFalse, reason: ReasonChildNameTaken, message: "gw-basic-auth is not this gateway's"},
		"read failed":   {gw: auth, a: basicAuth{err: assert.AnError}, status: metav1.ConditionUnknown, reason: ReasonApplyFailed, message: "could not be read"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := basicAuthCondition(tc.gw, tc.a)
			if tc.reason == "" {
				assert.Nil(t, c)
				return
			}
			require.NotNil(t, c)
			assert.Equal(t, v1.ConditionBasicAuth, c.Type)
			assert.Equal(t, tc.status, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Contains(t, c.Message, tc.message)
		})
	}
}

func TestBasicAuthSecrets(t *testing.T) {
	gw := gateway("gw", route("a.example.com", "/a", v1.PathTypePrefix, "web", 80),
		route("a.example.com", "/b", v1.PathTypePrefix, "web", 80), route("a.example.com", "/c", v1.PathTypePrefix, "web", 80))
	assert.Empty(t, basicAuthSecrets(gw))
	assert.False(t, hasBasicAuth(gw))
	gw.Spec.Routes[0].BasicAuth = &v1.BasicAuth{SecretName: "zeta"}
	gw.Spec.Routes[1].BasicAuth = &v1.BasicAuth{SecretName: "alpha"}
	gw.Spec.Routes[2].BasicAuth = &v1.BasicAuth{SecretName: "zeta"}
	assert.Equal(t, []string{"alpha", "zeta"}, basicAuthSecrets(gw), "sorted, each once")
	assert.True(t, hasBasicAuth(gw))
}

// TestBasicAuthPodTemplate: only a gateway with basicAuth mounts its
// Secret, and the pod inputs of one without are what they were (no
// rollout at upgrade); with exposure type HTTPRoute the same
// configuration asks, behind the parent Gateway.
func TestBasicAuthPodTemplate(t *testing.T) {
	plain := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
	p := deploymentParams{Image: testImage, ReloaderImage: testReloaderImage}
	data, err := json.Marshal(inputsOf(plain, p))
	require.NoError(t, err)
	assert.JSONEq(t, `{"image":"`+testImage+`","strategy":"Reload","epoch":1}`, string(data), "a gateway without basicAuth keeps its pod inputs")
	vol, mount := basicAuthVolumes(plain)
	assert.Nil(t, vol)
	assert.Nil(t, mount)

	for name, gw := range map[string]*v1.APIGateway{
		"Ingress":   withBasicAuth(plain),
		"HTTPRoute": withBasicAuth(httpRouteGateway("gw", publicGateway, plain.Spec.Routes...)),
	} {
		t.Run(name, func(t *testing.T) {
			assert.NotEqual(t, inputsOf(plain, p).digest(), inputsOf(gw, p).digest(), "the first basicAuth route rolls the pods once")
			d, err := Children(gw, ChildOptions{DefaultImage: testImage, ReloaderImage: testReloaderImage})
			require.NoError(t, err)
			assert.Contains(t, d.ConfigMap.Data[configKey], "auth_basic_user_file "+basicauth.Path("users")+";")
			pod := d.Deployment.Spec.Template.Spec
			vol := pod.Volumes[len(pod.Volumes)-1]
			assert.Equal(t, basicAuthVolume, *vol.Name)
			assert.Equal(t, "gw-basic-auth", *vol.Secret.SecretName)
			assert.True(t, *vol.Secret.Optional)
			mount := pod.Containers[0].VolumeMounts[len(pod.Containers[0].VolumeMounts)-1]
			assert.Equal(t, basicauth.Dir, *mount.MountPath)
			assert.True(t, *mount.ReadOnly)
		})
	}
}

func TestDesiredBasicAuthSecret(t *testing.T) {
	gw := withBasicAuth(gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80)))
	gw.Namespace, gw.UID = "team", "uid-1"
	files := map[string]string{basicauth.File("users"): "alice:{SHA}x\n"}
	s := desiredBasicAuthSecret(gw, files)
	assert.Equal(t, "gw-basic-auth", *s.Name)
	assert.Equal(t, corev1.SecretTypeOpaque, *s.Type)
	assert.Equal(t, childLabels(gw), s.Labels)
	require.Len(t, s.OwnerReferences, 1)
	assert.True(t, *s.OwnerReferences[0].Controller)
	assert.Equal(t, map[string][]byte{basicauth.File("users"): []byte("alice:{SHA}x\n")}, s.Data)

	live := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: childLabels(gw)}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{basicauth.File("users"): []byte("alice:{SHA}x\n")}}
	assert.True(t, sameBasicAuthSecret(live, s))
	live.Data[basicauth.File("users")] = []byte("")
	assert.False(t, sameBasicAuthSecret(live, s), "rotated")
	assert.False(t, sameBasicAuthSecret(&corev1.Secret{Type: corev1.SecretTypeOpaque}, s), "empty")
	assert.Nil(t, desiredBasicAuthSecret(gw, nil).Data, "a gateway that dropped basicAuth: emptied")
}

// countingSecrets answers Get from versions (a name missing: not found)
// and counts the reads.
type countingSecrets struct {
	versions map[string]string
	reads    int
}

func (c *countingSecrets) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.reads++
	v, ok := c.versions[key.Name]
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	obj.SetResourceVersion(v)
	return nil
}

// TestBasicAuthWatchReadsEachSecretOnce: gateways whose Secret changed,
// was deleted or is unchanged, with one metadata read per Secret however
// many gateways name it.
func TestBasicAuthWatchReadsEachSecretOnce(t *testing.T) {
	secrets := &countingSecrets{versions: map[string]string{"shared": "2", "own": "5"}}
	w := &basicAuthWatch{live: secrets, gateways: map[client.ObjectKey]map[string]string{}}
	gw := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: "team", Name: name} }
	w.track(gw("a"), map[string]string{"shared": "1"})             // changed
	w.track(gw("b"), map[string]string{"shared": "1", "own": "5"}) // changed
	w.track(gw("c"), map[string]string{"own": "5"})                // unchanged
	w.track(gw("d"), map[string]string{"gone": "3"})               // deleted
	w.track(gw("e"), map[string]string{"shared": "2", "own": "5"}) // unchanged
	assert.ElementsMatch(t, []client.ObjectKey{gw("a"), gw("b"), gw("d")}, w.changed(t.Context()))
	assert.Equal(t, 3, secrets.reads, "one read per Secret")
}
