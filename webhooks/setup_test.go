package webhooks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestSetupWithManagerRejectsBadOptions(t *testing.T) {
	tests := map[string]struct {
		opts    Options
		wantErr string
	}{
		"image with a space": {opts: Options{DefaultImage: "nginx :1", DefaultReplicas: 1}, wantErr: `default gateway image "nginx :1"`},
		"negative replicas":  {opts: Options{DefaultReplicas: -1}, wantErr: "default replicas -1: must be from 0 to 100"},
		"101 replicas":       {opts: Options{DefaultReplicas: 101}, wantErr: "default replicas 101: must be from 0 to 100"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.NotNil(t, env, "no control plane")
			mgr, err := ctrl.NewManager(env.Config, env.ManagerOptions())
			require.NoError(t, err)
			err = SetupWithManager(mgr, tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestSlimService(t *testing.T) {
	full := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: "users", Namespace: "shop", UID: "u1", ResourceVersion: "42",
			Labels:        map[string]string{"app": "users"},
			Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: corev1.ServiceSpec{
			Selector:  map[string]string{"app": "users"},
			ClusterIP: "10.0.0.10",
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
				{Name: "admin", Port: 9000},
			},
		},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}}},
	}
	want := &cachedService{
		ObjectMeta: metav1.ObjectMeta{Name: "users", Namespace: "shop", UID: "u1", ResourceVersion: "42"},
		ports:      []int32{80, 9000},
	}
	slim, err := slimService(full)
	require.NoError(t, err)
	assert.Equal(t, want, slim)

	again, err := slimService(slim)
	require.NoError(t, err)
	assert.Equal(t, want, again, "the transform must be idempotent")

	other := &corev1.ConfigMap{}
	passed, err := slimService(other)
	require.NoError(t, err)
	assert.Same(t, other, passed)
	assert.Equal(t, want, want.DeepCopyObject())
}
