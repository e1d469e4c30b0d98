package testenv

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

// NewNamespace creates a namespace for one test, named prefix plus a
// random suffix, through c, and returns its name. Every test gets a fresh
// one, also under -count=N: the control plane runs no namespace
// controller, so a deleted namespace would never go away and a fixed name
// could not be reused.
func NewNamespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	require.NoError(t, c.Create(t.Context(), ns))
	return ns.Name
}

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
