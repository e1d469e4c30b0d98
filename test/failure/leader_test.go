package failure

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"example.com/apigateway-operator/test/testenv"
)

// Two operator instances share one lease; stopping the leader hands the
// work to the other, which then reconciles a gateway created afterwards.
// With ReleaseOnCancel the leader gives the lease up as it stops; without,
// the follower must wait for it to expire and take it over.
func TestLeaderFailover(t *testing.T) {
	tests := map[string]struct{ releaseOnCancel bool }{
		"leader releases the lease":     {releaseOnCancel: true},
		"follower takes an expired one": {releaseOnCancel: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ns := testenv.NewNamespace(t, env.Client, "failover")
			leaseID := ns // one lease per case
			opts := func() manager.Options {
				o := env.ManagerOptions()
				o.LeaderElection = true
				o.LeaderElectionID = leaseID
				o.LeaderElectionNamespace = ns
				o.LeaderElectionReleaseOnCancel = tc.releaseOnCancel
				o.LeaseDuration = ptr.To(3 * time.Second)
				o.RenewDeadline = ptr.To(2 * time.Second)
				o.RetryPeriod = ptr.To(200 * time.Millisecond)
				return o
			}
			a := start(t, newOperator(t, env.Config, opts()))
			b := start(t, newOperator(t, env.Config, opts()))

			leader, follower := awaitLeader(t, a, b)
			first := gateway(ns, "before")
			require.NoError(t, env.Client.Create(ctx, first))
			testenv.AwaitReconciled(t, env.Client, client.ObjectKeyFromObject(first), waitFor)
			holder := leaseHolder(t, ns, leaseID)
			select {
			case <-follower.mgr.Elected():
				t.Fatal("both managers are elected")
			default:
			}

			leader.Stop(t)
			select {
			case <-follower.mgr.Elected():
			case <-time.After(waitFor):
				t.Fatal("the follower was not elected after the leader stopped")
			}
			assert.NotEqual(t, holder, leaseHolder(t, ns, leaseID), "the lease still names the stopped leader")

			second := gateway(ns, "after")
			require.NoError(t, env.Client.Create(ctx, second))
			testenv.AwaitReconciled(t, env.Client, client.ObjectKeyFromObject(second), waitFor)
		})
	}
}

// awaitLeader waits until one of a and b is elected and returns it first.
func awaitLeader(t *testing.T, a, b *running) (leader, follower *running) {
	t.Helper()
	select {
	case <-a.mgr.Elected():
		return a, b
	case <-b.mgr.Elected():
		return b, a
	case <-time.After(waitFor):
		t.Fatal("no manager was elected")
	}
	return nil, nil
}

// leaseHolder is the holder identity of the lease ns/name.
func leaseHolder(t *testing.T, ns, name string) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, lease))
	require.NotNil(t, lease.Spec.HolderIdentity)
	return *lease.Spec.HolderIdentity
}
