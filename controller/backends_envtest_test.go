package controller

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestBackendServicesArePooled: a gateway pools connections to a backend
// Service once it exists with a ClusterIP (its configuration names the
// address, never the name, in an upstream block), and falls back to the
// name resolved per request while it does not exist, once it is deleted,
// and for a headless Service.
func TestBackendServicesArePooled(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "pooled")
	gw := gateway("shop", route("shop.example.com", "/api", v1.PathTypePrefix, "api", 8080),
		route("shop.example.com", "/peers", v1.PathTypePrefix, "peers", 9000),
		route("shop.example.com", "/probe", v1.PathTypePrefix, "probe", 7000))
	gw.Namespace = ns
	gw = createGateway(t, gw)
	byName := func(svc string, port int) string {
		return fmt.Sprintf(`set $backend "%s.%s.svc.cluster.local:%d";`, svc, ns, port)
	}
	configWith := func(t *testing.T, want func(config string) bool, what string) string {
		t.Helper()
		var config string
		require.Eventually(t, func() bool {
			_, ch := settled(t, gw)
			config = ch.cm.Data[configKey]
			return want(config)
		}, waitFor, tick, "%s:\n%s", what, config)
		return config
	}
	config := configWith(t, func(c string) bool { return strings.Contains(c, byName("api", 8080)) }, "no Service yet: by name")
	assert.NotContains(t, config, "upstream ")

	// A Service without the route's port: its ClusterIP would refuse the
	// connection, so the backend keeps its name until the port is added.
	// The Service probe, created after it, is pooled once the operator
	// has seen both (one informer, events in order): only then does the
	// configuration say what the operator made of api.
	api := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	require.NoError(t, env.Client.Create(ctx, api))
	require.NotEmpty(t, api.Spec.ClusterIP, "the API server allocates a ClusterIP")
	probe := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 7000}}},
	}
	require.NoError(t, env.Client.Create(ctx, probe))
	config = configWith(t, func(c string) bool {
		return strings.Contains(c, "server "+net.JoinHostPort(probe.Spec.ClusterIP, "7000")+";")
	}, "the Service created next pooled")
	assert.Contains(t, config, byName("api", 8080), "no such port: by name")
	assert.NotContains(t, config, api.Spec.ClusterIP)
	api.Spec.Ports = append(api.Spec.Ports, corev1.ServicePort{Name: "api", Port: 8080})
	require.NoError(t, env.Client.Update(ctx, api))
	server := "server " + net.JoinHostPort(api.Spec.ClusterIP, "8080") + ";"
	config = configWith(t, func(c string) bool { return strings.Contains(c, server) }, "the Service's ClusterIP pooled")
	assert.NotContains(t, config, byName("api", 8080))
	assert.Contains(t, config, "keepalive 32;")
	assert.Contains(t, config, byName("peers", 9000), "a Service that does not exist is still resolved by name")

	headless := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "peers"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 9000}}},
	}
	require.NoError(t, env.Client.Create(ctx, headless))
	require.NoError(t, env.Client.Delete(ctx, api))
	config = configWith(t, func(c string) bool { return strings.Contains(c, byName("api", 8080)) }, "the deleted Service by name again")
	assert.NotContains(t, config, api.Spec.ClusterIP)
	assert.Contains(t, config, byName("peers", 9000), "a headless Service is resolved by name (its pods' addresses)")
}
