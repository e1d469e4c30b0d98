package controller

import (
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

func TestAppliedResult(t *testing.T) {
	tests := map[string]struct {
		act  action
		err  error
		want string
	}{
		"created":    {act: created, want: "created"},
		"updated":    {act: updated, want: "updated"},
		"unchanged":  {act: unchanged, want: "unchanged"},
		"error":      {act: unchanged, err: errors.New("boom"), want: "error"},
		"name taken": {act: unchanged, err: fmt.Errorf("applying: %w", &nameTakenError{}), want: "name_taken"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, appliedResult(tc.act, tc.err))
		})
	}
}

// TestChildrenAppliedMetric reconciles a new gateway, then changes only its
// replicas, and checks what the children counter says about each child.
func TestChildrenAppliedMetric(t *testing.T) {
	startOperator(t)
	kinds := []string{"ConfigMap", "Deployment", "Service", "Ingress"}
	count := func(result string) map[string]float64 {
		m := map[string]float64{}
		for _, k := range kinds {
			m[k] = testutil.ToFloat64(childrenApplied.WithLabelValues(k, result))
		}
		return m
	}
	delta := func(before, after map[string]float64) map[string]float64 {
		d := map[string]float64{}
		for k := range after {
			d[k] = after[k] - before[k]
		}
		return d
	}
	createdBefore, updatedBefore := count("created"), count("updated")

	gw := createGateway(t, &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: newNamespace(t, "metrics"), Name: "gw"},
		Spec: v1.APIGatewaySpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2), Routes: []v1.Route{{
			Host: "api.example.com", Path: "/", PathType: v1.PathTypePrefix,
			BackendService: v1.BackendService{Name: "svc", Port: 80},
		}}},
	})
	gw, _ = settled(t, gw)
	assert.Equal(t, map[string]float64{"ConfigMap": 1, "Deployment": 1, "Service": 1, "Ingress": 1},
		delta(createdBefore, count("created")), "each child created once")

	patch := client.MergeFrom(gw.DeepCopy())
	gw.Spec.Replicas = ptr.To[int32](3)
	require.NoError(t, env.Client.Patch(t.Context(), gw, patch))
	settled(t, gw)
	assert.Equal(t, map[string]float64{"ConfigMap": 0, "Deployment": 1, "Service": 0, "Ingress": 0},
		delta(updatedBefore, count("updated")), "a replica change updates the Deployment only")
}
