package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/controlplane"
	"example.com/apigateway-operator/test/testenv"
)

// Fault lengths of TestFlakyAPIServer.
const (
	latency      = 300 * time.Millisecond
	resetsFor    = 3 * time.Second
	resetEvery   = 250 * time.Millisecond
	gatewayCount = 8
)

// TestFlakyAPIServer puts a fault proxy between both replicas and the API
// server and makes it slow (300 ms each way), then reset every connection
// every 250 ms for 3 s, then go silent for longer than the lease, each
// while gateways change:
//   - every change converges after each fault, and no child is made twice
//     (its UID survives every fault);
//   - while the API server is silent to the operator, admission (which the
//     API server calls directly) keeps answering from the replicas'
//     caches: a route an older gateway holds is refused (fails closed), a
//     route of a gateway created during the silence, which the caches have
//     not seen, is admitted (fails open) and resolved afterwards by the
//     reconciler: the gateway whose claim it records first keeps the
//     route, the other reports RouteConflict (both were created during
//     the silence, so either may be first);
//   - the leader, unable to renew, steps down without the API server
//     (exits "leader election lost", and its pod restarts as a follower);
//     none of its writes lands after the other replica took over, by the
//     audit log. What it sent into the silence still arrives when the API
//     server speaks again, as after a partition TCP heals (the test logs
//     it).
func TestFlakyAPIServer(t *testing.T) {
	c := startCluster(t, clusterOptions{audit: writeVerbs})
	proxy, err := controlplane.StartProxy(strings.TrimPrefix(c.cp.APIServerURL(), "https://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	leader := c.startOperator(t, operatorOptions{user: replicas[0], server: proxy.URL(), args: leaderArgs})
	leader.awaitLeading(t)
	follower := c.startOperator(t, operatorOptions{user: replicas[1], server: proxy.URL(), webhookPort: c.webhookPort, args: leaderArgs})

	ns := testenv.NewNamespace(t, c.client, "flaky")
	keys := c.createGateways(t, ns, "gw", gatewayCount)
	c.awaitConverged(t, keys)
	uids := c.childUIDs(t, keys)

	t.Run("latency", func(t *testing.T) {
		proxy.SetLatency(latency)
		start := time.Now()
		c.scale(t, keys[:gatewayCount/2], 2)
		c.awaitConverged(t, keys)
		proxy.SetLatency(0)
		t.Logf("converged %s after the changes", time.Since(start).Round(time.Millisecond))
	})

	t.Run("resets", func(t *testing.T) {
		start := time.Now()
		done := make(chan int)
		go func() {
			n := 0
			for range int(resetsFor / resetEvery) {
				n += proxy.Reset()
				time.Sleep(resetEvery)
			}
			done <- n
		}()
		c.scale(t, keys[gatewayCount/2:], 2)
		t.Logf("%d connections reset", <-done)
		c.awaitConverged(t, keys)
		t.Logf("converged %s after the changes", time.Since(start).Round(time.Millisecond))
	})

	var (
		held, late     *v1.APIGateway
		silent, spoken time.Time
	)
	t.Run("silence", func(t *testing.T) {
		// The leader is busy with a burst when the API server goes quiet.
		keys = append(keys, c.createGateways(t, ns, "burst", gatewayCount)...)
		speak := proxy.Silence()
		silent = time.Now()
		defer speak()

		t.Run("admission fails closed on what the caches hold", func(t *testing.T) {
			taken := gateway(ns, "taken", 1, "/api/")
			taken.Spec.Routes[0].Host = v1.Hostname("gw-0." + ns + ".example.com")
			err := c.client.Create(t.Context(), taken)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "already served by APIGateway "+ns+"/gw-0")
		})
		t.Run("admission fails open on what they have not seen", func(t *testing.T) {
			held = gateway(ns, "held", 1, "/api/")
			require.NoError(t, c.client.Create(t.Context(), held))
			late = gateway(ns, "late", 1, "/api/")
			late.Spec.Routes[0].Host = held.Spec.Routes[0].Host
			require.NoError(t, c.client.Create(t.Context(), late), "the route of a gateway the caches have not seen")
		})
		c.scale(t, keys[:gatewayCount], 3)

		err := leader.awaitExit(t)
		require.Error(t, err)
		assert.Contains(t, leader.log(t), "leader election lost")
		t.Logf("%s stepped down %s into the silence", leader.user, time.Since(silent).Round(time.Millisecond))
		// Longer than the lease, whatever the exit took.
		time.Sleep(time.Until(silent.Add(leaseDuration + 2*time.Second)))
		speak()
		spoken = time.Now()
		t.Logf("silent for %s", spoken.Sub(silent).Round(time.Millisecond))
		follower.awaitLeading(t)
		t.Logf("%s took over %s after the API server spoke again", follower.user, time.Since(spoken).Round(time.Millisecond))
	})

	// Its pod restarted, the old leader rejoins as a follower.
	c.startOperator(t, operatorOptions{user: replicas[0], server: proxy.URL(), args: leaderArgs})
	winner, loser := c.claimedFirst(t, held, late)
	c.awaitConverged(t, append(keys, client.ObjectKeyFromObject(winner)))
	assert.Equal(t, uids, c.childUIDs(t, keys[:gatewayCount]), "children made again")
	cond := c.accepted(t, loser, "False")
	assert.Equal(t, v1.ReasonRouteConflict, cond.Reason)
	assert.Contains(t, cond.Message, "is served by APIGateway "+winner.Name+", which claimed it first")
	c.accepted(t, winner, "True")

	requests := readRequests(t, c.auditLog)
	took, ok := tookOver(requests, follower.user, time.Time{})
	require.True(t, ok, "%s never took the Lease", follower.user)
	stale := effective(after(by(requests, leader.user), took))
	t.Logf("writes of %s that arrived after the silence:%s", leader.user, describe(after(by(requests, leader.user), spoken)))
	t.Logf("%s took over at %s; %d writes by %s in all, %d after that",
		follower.user, took.Format("15:04:05.000"), len(by(requests, leader.user)), leader.user, len(stale))
	assert.Empty(t, stale, "writes of the old leader after the new one took over:%s", describe(stale))
}

// scale sets the replicas of the gateways keys.
func (c *cluster) scale(t *testing.T, keys []client.ObjectKey, replicas int32) {
	t.Helper()
	for _, key := range keys {
		gw := &v1.APIGateway{}
		require.NoError(t, c.client.Get(t.Context(), key, gw))
		gw.Spec.Replicas = ptr.To(replicas)
		require.NoError(t, c.client.Update(t.Context(), gw))
	}
}

// childUIDs are the UIDs of each gateway's four children, by kind/name.
func (c *cluster) childUIDs(t *testing.T, keys []client.ObjectKey) map[string]types.UID {
	t.Helper()
	uids := map[string]types.UID{}
	for _, key := range keys {
		for kind, obj := range map[string]client.Object{"ConfigMap": &corev1.ConfigMap{}, "Deployment": &appsv1.Deployment{},
			"Service": &corev1.Service{}, "Ingress": &networkingv1.Ingress{}} {
			name := key.Name
			if kind == "ConfigMap" {
				name += "-config"
			}
			require.NoError(t, c.client.Get(t.Context(), client.ObjectKey{Namespace: key.Namespace, Name: name}, obj))
			uids[kind+"/"+name] = obj.GetUID()
		}
	}
	return uids
}

// claimedFirst waits until the reconciler has given the route a and b both
// ask for to one of them, and returns that one first. Claims are stamped
// when the reconciler first sees a gateway, not when it was created: of
// two gateways the operator could not see being made, either may win.
func (c *cluster) claimedFirst(t *testing.T, a, b *v1.APIGateway) (winner, loser *v1.APIGateway) {
	t.Helper()
	var aWins bool
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		accepted := map[string]metav1.ConditionStatus{}
		for _, gw := range []*v1.APIGateway{a, b} {
			cur := &v1.APIGateway{}
			require.NoError(ct, c.client.Get(t.Context(), client.ObjectKeyFromObject(gw), cur))
			cond := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionAccepted)
			require.NotNil(ct, cond, "%s has no Accepted condition", gw.Name)
			accepted[gw.Name] = cond.Status
		}
		require.NotEqual(ct, accepted[a.Name], accepted[b.Name], "one of them serves the route")
		aWins = accepted[a.Name] == metav1.ConditionTrue
	}, waitFor, tick)
	if aWins {
		return a, b
	}
	return b, a
}

// accepted waits until gw's Accepted condition has status and returns it.
func (c *cluster) accepted(t *testing.T, gw *v1.APIGateway, status string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cur := &v1.APIGateway{}
		require.NoError(ct, c.client.Get(t.Context(), client.ObjectKeyFromObject(gw), cur))
		cond = meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionAccepted)
		require.NotNil(ct, cond)
		assert.Equal(ct, status, string(cond.Status))
	}, waitFor, tick, "%s/%s: Accepted=%s", gw.Namespace, gw.Name, status)
	return cond
}
