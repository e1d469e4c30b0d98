package inspect

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/reloader"
	"example.com/apigateway-operator/render"
)

const template = "server { listen 8080; }"

var (
	gw = &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shop", UID: "gw-uid", Generation: 3},
		Status: v1.APIGatewayStatus{ObservedGeneration: 3,
			Conditions: []metav1.Condition{{Type: v1.ConditionAccepted, Status: metav1.ConditionFalse, Reason: "RouteConflict",
				Message: "route Prefix a.example.com/ is served by gateway team/first"}},
			Claims: &v1.Claims{Routes: []v1.RouteClaim{{Route: "Prefix a.example.com/", Lost: true,
				Since: metav1.NewMicroTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))}}}},
	}
	mine   = []metav1.OwnerReference{{Kind: "APIGateway", Name: "shop", UID: "gw-uid", Controller: ptr.To(true)}}
	theirs = []metav1.OwnerReference{{Kind: "APIGateway", Name: "shop", UID: "an-earlier-gateway", Controller: ptr.To(true)}}
	hash   = reloader.Hash([]byte(template))
)

func running(name string, ready bool) corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
		ContainerStatuses: []corev1.ContainerStatus{{RestartCount: 2}}}}
}

func TestBuild(t *testing.T) {
	in := Inputs{
		Gateway: gw,
		ConfigMaps: []corev1.ConfigMap{
			{ObjectMeta: metav1.ObjectMeta{Name: "shop-config", OwnerReferences: mine}, Data: map[string]string{render.ConfigKey: template}},
			{ObjectMeta: metav1.ObjectMeta{Name: "labelled-alike", OwnerReferences: theirs}, Data: map[string]string{render.ConfigKey: "other"}},
		},
		Deployments: []appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Name: "shop", OwnerReferences: mine, Generation: 4},
			Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2}}},
		HTTPRoutes: []gatewayv1.HTTPRoute{{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shop-a", OwnerReferences: mine},
			Status: gatewayv1.HTTPRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: []gatewayv1.RouteParentStatus{{
				ParentRef:  gatewayv1.ParentReference{Namespace: ptr.To(gatewayv1.Namespace("infra")), Name: "public"},
				Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"}},
			}}}}}},
		Pods: []corev1.Pod{running("shop-c", true), running("shop-b", true), running("shop-a", false),
			{ObjectMeta: metav1.ObjectMeta{Name: "shop-d"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}},
		Reports: map[string]reloader.Status{
			"shop-a": {},
			"shop-b": {Loaded: hash},
			"shop-c": {Loaded: "0123456789abcdef", Refused: &reloader.Refusal{Hash: hash, Reason: reloader.ReasonNginxTestFailed, Message: "[emerg] bad"}},
		},
		ReportErrors: map[string]string{"shop-d": "not running"},
	}
	r := Build(in)
	assert.Equal(t, hash, r.Configuration, "the hash of the ConfigMap the gateway controls, not of one labelled alike")
	assert.Equal(t, []Child{
		{Kind: "ConfigMap", Name: "shop-config", Ready: true, Detail: "configuration " + hash[:12]},
		{Kind: "Deployment", Name: "shop", Detail: "2/3 ready, 3 updated"},
		{Kind: "HTTPRoute", Name: "shop-a", Ready: true, Detail: "accepted by 1 of 1 parents"},
	}, r.Children)
	assert.Equal(t, []Pod{
		{Name: "shop-a", Phase: "Running", Restarts: 2, Serving: ""},
		{Name: "shop-b", Phase: "Running", Ready: true, Restarts: 2, Serving: hash, Current: true},
		{Name: "shop-c", Phase: "Running", Ready: true, Restarts: 2, Serving: "0123456789abcdef",
			Refused: &reloader.Refusal{Hash: hash, Reason: reloader.ReasonNginxTestFailed, Message: "[emerg] bad"}},
		{Name: "shop-d", Phase: "Pending", Unread: "not running"},
	}, r.Pods, "sorted by name")
	require.Len(t, r.Parents, 1)
	assert.Equal(t, "infra/public", r.Parents[0].Gateway)
	require.Len(t, r.Claims, 1)
	assert.True(t, r.Claims[0].Lost)

	var out bytes.Buffer
	require.NoError(t, WriteTable(&out, r))
	for _, s := range []string{
		"APIGateway team/shop: generation 3, observed 3\n",
		"Accepted  False   RouteConflict  route Prefix a.example.com/ is served by gateway team/first\n",
		"shop-b  Running  yes    2         " + hash[:12] + " (current)",
		"shop-c  Running  yes    2         0123456789ab (not current)  " + hash[:12] + " NginxTestFailed: [emerg] bad\n",
		"shop-d  Pending  no     0         unknown: not running",
		"HTTPROUTE  GATEWAY       CONDITIONS\nshop-a     infra/public  Accepted=True (Accepted)\n",
		"Prefix a.example.com/  2026-11-01T00:00:00Z  no: another gateway or namespace holds it (see Accepted)\n",
	} {
		assert.Contains(t, out.String(), s)
	}
}

// TestWriteTableKeepsTheTerminal: nginx's words and tenants' names reach
// the table; none can break a line or send the terminal an escape.
func TestWriteTableKeepsTheTerminal(t *testing.T) {
	r := Build(Inputs{Gateway: gw, Pods: []corev1.Pod{running("shop-a", true)},
		Reports: map[string]reloader.Status{"shop-a": {Refused: &reloader.Refusal{Hash: hash, Reason: "NginxTestFailed",
			Message: "line one\nfake-pod  Running  yes\x1b[2J\u202eevil"}}}})
	var out bytes.Buffer
	require.NoError(t, WriteTable(&out, r))
	assert.Contains(t, out.String(), "line one fake-pod  Running  yes [2J evil\n")
	assert.NotContains(t, out.String(), "\x1b")
	assert.NotContains(t, out.String(), "\u202e")
}

func TestWriteTableWithoutPods(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, WriteTable(&out, Build(Inputs{Gateway: gw})))
	assert.Contains(t, out.String(), "Configuration: -\n")
	assert.Contains(t, out.String(), "PODS: none\n")
	assert.NotContains(t, out.String(), "CHILDREN")
}
