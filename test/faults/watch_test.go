package faults

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/controlplane"
	"example.com/apigateway-operator/test/testenv"
)

// TestLostWatchHistory cuts the operator off from the API server (through
// a proxy), changes gateways and their children meanwhile, compacts etcd
// past everything the operator saw, and reconnects it: its watches resume
// from compacted revisions, are answered 410 Gone, and list again; every
// change made while it was away is reconciled. The API server runs
// without its watch cache, so that its watches are etcd's and compaction
// is what ends them, as it is for a client that was away longer than the
// cache's window.
func TestLostWatchHistory(t *testing.T) {
	c := startCluster(t, clusterOptions{audit: []string{"list", "watch"}, apiServerFlags: map[string]string{"watch-cache": "false"}})
	proxy, err := controlplane.StartProxy(c.cp.APIServerURL()[len("https://"):])
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	op := c.startOperator(t, operatorOptions{user: replicas[0], server: proxy.URL(), webhookPort: c.webhookPort, args: leaderArgs})
	op.awaitLeading(t)

	ns := testenv.NewNamespace(t, c.client, "watch")
	scaled, unserved, drifted, deleted := gateway(ns, "scaled", 1, "/api/"), gateway(ns, "unserved", 1, "/api/"),
		gateway(ns, "drifted", 1, "/api/"), gateway(ns, "deleted", 1, "/api/")
	for _, gw := range []*v1.APIGateway{scaled, unserved, drifted, deleted} {
		require.NoError(t, c.client.Create(t.Context(), gw))
	}
	keys := []client.ObjectKey{client.ObjectKeyFromObject(scaled), client.ObjectKeyFromObject(unserved), client.ObjectKeyFromObject(drifted)}
	c.awaitConverged(t, append(keys, client.ObjectKeyFromObject(deleted)))

	require.NoError(t, proxy.Cut())
	cut := time.Now()
	ctx := t.Context()
	// A spec change, a child deleted and a child edited by hand, a new
	// gateway, a deleted one.
	require.NoError(t, c.client.Get(ctx, client.ObjectKeyFromObject(scaled), scaled))
	scaled.Spec.Replicas = ptr.To[int32](4)
	scaled.Spec.Routes = append(scaled.Spec.Routes, gateway(ns, "scaled", 1, "/v2/").Spec.Routes...)
	require.NoError(t, c.client.Update(ctx, scaled))
	require.NoError(t, c.client.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unserved"}}))
	cm := &corev1.ConfigMap{}
	require.NoError(t, c.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "drifted-config"}, cm))
	for k := range cm.Data {
		cm.Data[k] = "# edited by hand\n"
	}
	require.NoError(t, c.client.Update(ctx, cm))
	added := gateway(ns, "added", 2, "/new/")
	require.NoError(t, c.client.Create(ctx, added))
	keys = append(keys, client.ObjectKeyFromObject(added))
	require.NoError(t, c.client.Delete(ctx, deleted))
	rev, err := c.cp.CompactEtcd(ctx)
	require.NoError(t, err)
	t.Logf("compacted etcd at revision %d", rev)

	require.NoError(t, proxy.Restore())
	restored := time.Now()
	c.awaitConverged(t, keys)
	t.Logf("every change reconciled %s after the cut", time.Since(cut).Round(time.Millisecond))
	cm = &corev1.ConfigMap{}
	require.NoError(t, c.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "drifted-config"}, cm))
	for k, v := range cm.Data {
		assert.NotEqual(t, "# edited by hand\n", v, "ConfigMap key %s is still the hand edit", k)
	}
	// The path this test is about: resuming a watch needs no list; only
	// a watch told its history is gone (410) lists again.
	var resumed, relisted []string
	for _, r := range after(by(readRequests(t, c.auditLog), op.user), restored) {
		if r.lists() {
			relisted = append(relisted, r.ObjectRef.Resource)
		} else {
			resumed = append(resumed, r.ObjectRef.Resource)
		}
	}
	t.Logf("after reconnecting, watches resumed: %v; collections read again: %v", resumed, relisted)
	assert.Contains(t, relisted, "apigateways", "the operator did not read the APIGateways again after it reconnected")
}
