package testenv

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
