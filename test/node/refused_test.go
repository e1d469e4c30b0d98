package node

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/testenv"
)

// A configuration the pod's nginx refuses leaves the pod serving the one
// it served, and status says which pod refused it and nginx's words.
//
// The refusal is one a platform meets: a tenant runs its own gateway
// image (RealIPGatewayImage), whose nginx.conf already takes the client's
// address from its load balancer with the realip directives; the platform
// team then gives the operator trusted proxies
// (--gateway-trusted-proxies), and the operator writes those directives
// too. The image's nginx refuses them
// twice in one context. The operator renders for images it cannot read,
// so only the pod's nginx -t can tell: the reloader runs it before every
// reload and keeps the previous configuration when it fails.
func TestGatewayKeepsServingWhenItsNginxRefuses(t *testing.T) {
	ctx := t.Context()
	startServiceDNS(t)
	ns := testenv.NewNamespace(t, env.Client, "refused")
	backend := startBackend(t, ns)
	op := startOperator(t)
	gw := newGateway(ns, "balanced", backend, 1)
	gw.Spec.Image = RealIPGatewayImage
	require.NoError(t, env.Client.Create(ctx, gw))
	awaitLive(t, gw)
	pods := gatewayPods(t, gw)
	require.Len(t, pods, 1)
	pod := pods[0]
	require.Equal(t, http.StatusOK, statusThrough(ctx, pod.Status.PodIP, gatewayHost(ns), "/users/1"))

	// The platform's change, then a tenant's route: the configuration
	// that has both is the one the pod must refuse.
	op.Stop(t)
	startOperator(t, func(o *controller.Options) { o.TrustedProxies = []string{"10.0.0.0/8"} })
	addRoute(t, gw, "/orders")
	changed := time.Now()
	cur := testenv.AwaitCondition(t, env.Client, client.ObjectKeyFromObject(gw), testenv.Condition{
		Type: v1.ConditionLive, Status: metav1.ConditionFalse, Reason: v1.ReasonConfigurationRefused,
		Saying: "pod " + pod.Name + " refused it (NginxTestFailed)", Current: true,
	}, routeChangeWait)
	live := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionLive)
	t.Logf("Live %s %s after the change: %s", live.Status, time.Since(changed).Round(time.Millisecond), live.Message)
	assert.Contains(t, live.Message, "0 of 1 ready replicas serve configuration")
	assert.Regexp(t, `"real_ip_(header|recursive)" directive is duplicate in /etc/nginx/conf\.d/gateway\.conf`, live.Message)
	ready := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, v1.ReasonConfigurationRefused, ready.Reason)
	assert.Zero(t, cur.Status.LiveReplicas)

	// The pod serves what it served: the old route, not the new one, and
	// it was neither replaced nor restarted.
	assert.Equal(t, http.StatusOK, statusThrough(ctx, pod.Status.PodIP, gatewayHost(ns), "/users/1"))
	assert.Equal(t, http.StatusNotFound, statusThrough(ctx, pod.Status.PodIP, gatewayHost(ns), "/orders/7"))
	now := gatewayPods(t, gw)
	require.Len(t, now, 1)
	assert.Equal(t, pod.UID, now[0].UID, "the pod was replaced")
	if s := containerStatus(&now[0], "nginx"); assert.NotNil(t, s) {
		assert.Zero(t, s.RestartCount, "the container restarted")
	}
	assert.True(t, podReady(&now[0]), "the pod is no longer Ready: %s", describe(&now[0]))
}
