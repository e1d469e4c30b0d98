package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

// Condition is a gateway status condition that AwaitCondition waits for.
type Condition struct {
	Type   string
	Status metav1.ConditionStatus
	Reason string
	// Saying, when set, is a part of the message.
	Saying string
	// Current requires the condition's observedGeneration to be the
	// gateway's generation, for a wait that follows a spec change while
	// the condition may already hold for the previous one.
	Current bool
}

// AwaitCondition waits up to within, reading the gateway key through c
// every 100 ms, until its status has the condition want, and returns the
// gateway as it then was.
func AwaitCondition(t testing.TB, c client.Client, key client.ObjectKey, want Condition, within time.Duration) *v1.APIGateway {
	t.Helper()
	cur := &v1.APIGateway{}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		require.NoError(ct, c.Get(t.Context(), key, cur))
		cond := meta.FindStatusCondition(cur.Status.Conditions, want.Type)
		require.NotNil(ct, cond, "no %s condition", want.Type)
		assert.Equal(ct, want.Status, cond.Status, "message: %s", cond.Message)
		assert.Equal(ct, want.Reason, cond.Reason, "message: %s", cond.Message)
		assert.Contains(ct, cond.Message, want.Saying)
		if want.Current {
			assert.Equal(ct, cur.Generation, cond.ObservedGeneration)
		}
	}, within, 100*time.Millisecond, "APIGateway %s: %s=%s %s", key, want.Type, want.Status, want.Reason)
	return cur
}

// AwaitReconciled waits up to within, reading through c every 100 ms,
// until the gateway key has its four children and its status describes
// its current generation, and returns the gateway and its children as
// they then were.
func AwaitReconciled(t testing.TB, c client.Reader, key client.ObjectKey, within time.Duration) (*v1.APIGateway, *Children) {
	t.Helper()
	cur := &v1.APIGateway{}
	var ch *Children
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		require.NoError(ct, c.Get(t.Context(), key, cur))
		var err error
		ch, err = GetChildren(t.Context(), c, key)
		require.NoError(ct, err)
		require.Equal(ct, cur.Generation, cur.Status.ObservedGeneration, "status not written for the current generation")
	}, within, 100*time.Millisecond, "gateway %s was not reconciled", key)
	return cur, ch
}

// AwaitCached waits (up to 30 s) until reader, a manager's cache, holds
// the gateways of keys: the webhooks' conflict check reads that cache, so
// a test that expects a conflict with a gateway it just created waits for
// this first.
func AwaitCached(t testing.TB, reader client.Reader, keys ...client.ObjectKey) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, k := range keys {
			if reader.Get(ctx, k, &v1.APIGateway{}) != nil {
				return false, nil
			}
		}
		return true, nil
	})
	require.NoError(t, err, "the manager's cache never saw %v", keys)
}
