package faults

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/testenv"
)

// burst is how many gateways the leader is busy with when it freezes.
const burst = 24

// TestFrozenLeader freezes the leader (SIGSTOP) while it works through a
// burst of new gateways, keeps it frozen past its lease while the other
// replica takes over and converges every gateway, changed meanwhile, then
// resumes it (SIGCONT), as a paused VM or a stalled node does
// (cilium#42920). From the moment it lost the lease the old leader writes
// nothing, by the API server's audit log (a renewal refused for its stale
// resourceVersion is the Lease's own fence at work, and changes nothing:
// see staleRenewal); it steps down (exits "leader
// election lost", for its pod to restart as a follower); and every
// gateway stays as the new leader made it.
func TestFrozenLeader(t *testing.T) {
	c := startCluster(t, clusterOptions{audit: writeVerbs})
	old := c.startOperator(t, operatorOptions{user: replicas[0], args: leaderArgs})
	old.awaitLeading(t)
	// The webhook configurations point at the replica that stays up.
	next := c.startOperator(t, operatorOptions{user: replicas[1], args: leaderArgs, webhookPort: c.webhookPort})

	ns := testenv.NewNamespace(t, c.client, "frozen")
	keys := c.createGateways(t, ns, "gw", burst)
	require.NoError(t, syscall.Kill(old.Pid(), syscall.SIGSTOP))
	frozen := time.Now()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = syscall.Kill(old.Pid(), syscall.SIGCONT) // so that it can be stopped
		}
	})

	next.awaitLeading(t)
	t.Logf("%s took over %s after the freeze", next.user, time.Since(frozen).Round(time.Millisecond))
	// Changes the frozen leader's caches have not seen.
	for i, key := range keys {
		if i%2 == 1 {
			continue
		}
		gw := &v1.APIGateway{}
		require.NoError(t, c.client.Get(t.Context(), key, gw))
		gw.Spec.Replicas = ptr.To[int32](3)
		gw.Spec.Routes = append(gw.Spec.Routes, gateway(ns, key.Name, 1, "/v2/").Spec.Routes...)
		require.NoError(t, c.client.Update(t.Context(), gw))
	}
	c.awaitConverged(t, keys)

	require.NoError(t, syscall.Kill(old.Pid(), syscall.SIGCONT))
	resumed = true
	t.Logf("resumed %s after %s", old.user, time.Since(frozen).Round(time.Millisecond))
	err := old.awaitExit(t)
	require.Error(t, err, "the old leader steps down by exiting, for its pod to restart")
	assert.Contains(t, old.log(t), "leader election lost")
	c.awaitConverged(t, keys)

	requests := readRequests(t, c.auditLog)
	took, ok := tookOver(requests, next.user, time.Time{})
	require.True(t, ok, "%s never wrote the Lease", next.user)
	renewed, ok := lastRenewal(requests, old.user, took)
	require.True(t, ok, "%s never wrote the Lease", old.user)
	// The lease was lost when it ran out or was taken, whichever came
	// first, by the API server's clock.
	lost := took
	if expired := renewed.Add(leaseDuration); expired.Before(lost) {
		lost = expired
	}
	oldWrites := by(requests, old.user)
	all := after(oldWrites, lost)
	late := effective(all)
	t.Logf("%s: %d writes, the last renewal at %s; %s took over at %s; %d writes by %s after that, %d of them stale renewals the API server refused:%s",
		old.user, len(oldWrites), renewed.Format("15:04:05.000"), next.user, took.Format("15:04:05.000"), len(all), old.user, len(all)-len(late), describe(all))
	assert.Empty(t, late, "writes of the old leader after it lost the lease:%s", describe(late))
}
