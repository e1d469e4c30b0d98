package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestReloaderImage(t *testing.T) {
	pod := func(containers ...corev1.Container) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "op-1"}, Spec: corev1.PodSpec{Containers: containers}}
	}
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	inPod := env(map[string]string{"POD_NAMESPACE": "ops", "POD_NAME": "op-1"})
	tests := map[string]struct {
		flag   string
		getenv func(string) string
		pod    *corev1.Pod
		want   string
		err    string
	}{
		"the flag wins": {flag: "registry.example.com/op:v2", getenv: inPod, want: "registry.example.com/op:v2"},
		"the manager container of its own pod": {getenv: inPod, want: "registry.example.com/op:v1",
			pod: pod(corev1.Container{Name: "proxy", Image: "proxy:1"}, corev1.Container{Name: managerContainer, Image: "registry.example.com/op:v1"})},
		"the one container of its own pod": {getenv: inPod, want: "op:v1", pod: pod(corev1.Container{Name: "operator", Image: "op:v1"})},
		"outside a pod":                    {getenv: env(nil), want: fallbackReloaderImage},
		"a pod it cannot read":             {getenv: inPod, err: "reading the operator's own Pod ops/op-1"},
		"no container to take it from": {getenv: inPod, err: "set --reloader-image",
			pod: pod(corev1.Container{Name: "a", Image: "a"}, corev1.Container{Name: "b", Image: "b"})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := fake.NewClientBuilder()
			if tc.pod != nil {
				b = b.WithObjects(tc.pod)
			}
			got, err := reloaderImage(context.Background(), b.Build(), tc.flag, tc.getenv)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
