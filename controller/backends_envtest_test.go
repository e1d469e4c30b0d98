package controller

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	config := configWith(t, gw, func(c string) bool { return strings.Contains(c, byName("api", 8080)) }, "no Service yet: by name")
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
	config = configWith(t, gw, func(c string) bool {
		return strings.Contains(c, "server "+net.JoinHostPort(probe.Spec.ClusterIP, "7000")+";")
	}, "the Service created next pooled")
	assert.Contains(t, config, byName("api", 8080), "no such port: by name")
	assert.NotContains(t, config, api.Spec.ClusterIP)
	api.Spec.Ports = append(api.Spec.Ports, corev1.ServicePort{Name: "api", Port: 8080})
	require.NoError(t, env.Client.Update(ctx, api))
	server := "server " + net.JoinHostPort(api.Spec.ClusterIP, "8080") + ";"
	config = configWith(t, gw, func(c string) bool { return strings.Contains(c, server) }, "the Service's ClusterIP pooled")
	assert.NotContains(t, config, byName("api", 8080))
	assert.Contains(t, config, "keepalive 32;")
	assert.Contains(t, config, byName("peers", 9000), "a Service that does not exist is still resolved by name")

	headless := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "peers"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 9000}}},
	}
	require.NoError(t, env.Client.Create(ctx, headless))
	require.NoError(t, env.Client.Delete(ctx, api))
	config = configWith(t, gw, func(c string) bool { return strings.Contains(c, byName("api", 8080)) }, "the deleted Service by name again")
	assert.NotContains(t, config, api.Spec.ClusterIP)
	assert.Contains(t, config, byName("peers", 9000), "a headless Service is resolved by name (its pods' addresses)")
}

// TestEndpointsFollowSlices: a route with retries is proxied to its
// Service's ready endpoints as the EndpointSlices say, and follows them;
// a Service whose slices have no ready endpoint answers 503, on any
// route, until one is ready. (envtest runs no EndpointSlice controller:
// the test writes the slices as it would.)
func TestEndpointsFollowSlices(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "endpoints")
	retried := route("shop.example.com", "/api", v1.PathTypePrefix, "web", 80)
	retried.Retries = &v1.RouteRetries{Attempts: 2}
	gw := gateway("shop", retried, route("shop.example.com", "/plain", v1.PathTypePrefix, "plain", 80))
	gw.Namespace = ns
	for _, name := range []string{"web", "plain"} {
		require.NoError(t, env.Client.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
		}))
	}
	gw = createGateway(t, gw)
	has := func(lines ...string) func(string) bool {
		return func(c string) bool {
			for _, l := range lines {
				if !strings.Contains(c, l) {
					return false
				}
			}
			return true
		}
	}
	config := configWith(t, gw, has("proxy_next_upstream_tries 3;"), "the route's retries")
	assert.NotContains(t, config, "upstream retry_", "no slices yet: the ClusterIP")

	web := endpointSliceOf(ns, "web", map[string]bool{"10.0.0.1": true, "10.0.0.2": true})
	require.NoError(t, env.Client.Create(ctx, web))
	config = configWith(t, gw, has("upstream retry_", "server 10.0.0.1:8080;", "server 10.0.0.2:8080;"), "the slice's endpoints")
	assert.NotContains(t, config, "return 503;")

	web.Endpoints = endpointSliceOf(ns, "web", map[string]bool{"10.0.0.1": false, "10.0.0.2": true, "10.0.0.3": true}).Endpoints
	require.NoError(t, env.Client.Update(ctx, web))
	config = configWith(t, gw, has("server 10.0.0.3:8080;"), "a new endpoint")
	assert.NotContains(t, config, "server 10.0.0.1:8080;", "an endpoint no longer ready")

	plain := endpointSliceOf(ns, "plain", map[string]bool{"10.0.1.1": false})
	require.NoError(t, env.Client.Create(ctx, plain))
	config = configWith(t, gw, has("return 503;"), "a Service without a ready endpoint: 503")
	assert.NotContains(t, config, "10.0.1.1", "a route without retries writes no endpoint")

	plain.Endpoints = endpointSliceOf(ns, "plain", map[string]bool{"10.0.1.1": true}).Endpoints
	require.NoError(t, env.Client.Update(ctx, plain))
	config = configWith(t, gw, func(c string) bool { return !strings.Contains(c, "return 503;") }, "ready again: no 503")
	assert.NotContains(t, config, "10.0.1.1")
}

// configWith waits until gw's configuration satisfies want, and returns
// it.
func configWith(t *testing.T, gw *v1.APIGateway, want func(config string) bool, what string) string {
	t.Helper()
	var config string
	require.Eventually(t, func() bool {
		_, ch := settled(t, gw)
		config = ch.cm.Data[configKey]
		return want(config)
	}, waitFor, tick, "%s:\n%s", what, config)
	return config
}

// endpointSliceOf is an EndpointSlice of Service svc, as the EndpointSlice
// controller writes one: port http, 8080, each address ready or not.
func endpointSliceOf(ns, svc string, ready map[string]bool) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svc + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
	}
	for _, a := range slices.Sorted(maps.Keys(ready)) {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready[a])}})
	}
	return es
}

// TestRolloutReloads: what a rolling restart of a 3-replica backend costs
// the gateways that route to it, counted as changes of their
// configuration (each one a push and an nginx reload): one per new set of
// ready endpoints for a gateway whose route retries, none for one whose
// route does not. Each step waits for the retried gateway to follow, as a
// rollout's pods take seconds to become ready; back-to-back steps would
// be collapsed into fewer.
func TestRolloutReloads(t *testing.T) {
	op := startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "rollout")
	require.NoError(t, env.Client.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}))
	pods := func(ready ...string) map[string]bool {
		m := map[string]bool{}
		for _, a := range ready {
			m[a] = true
		}
		return m
	}
	rollout := []map[string]bool{
		pods("10.0.0.1", "10.0.0.2", "10.0.0.3"),
		{"10.0.0.1": true, "10.0.0.2": true, "10.0.0.3": true, "10.0.0.4": false}, // surge pod starting
		pods("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"),
		{"10.0.0.1": false, "10.0.0.2": true, "10.0.0.3": true, "10.0.0.4": true}, // old pod terminating
		pods("10.0.0.2", "10.0.0.3", "10.0.0.4"),
		{"10.0.0.2": true, "10.0.0.3": true, "10.0.0.4": true, "10.0.0.5": false},
		pods("10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"),
		{"10.0.0.2": false, "10.0.0.3": true, "10.0.0.4": true, "10.0.0.5": true},
		pods("10.0.0.3", "10.0.0.4", "10.0.0.5"),
		{"10.0.0.3": true, "10.0.0.4": true, "10.0.0.5": true, "10.0.0.6": false},
		pods("10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"),
		{"10.0.0.3": false, "10.0.0.4": true, "10.0.0.5": true, "10.0.0.6": true},
		pods("10.0.0.4", "10.0.0.5", "10.0.0.6"),
	}
	slice := endpointSliceOf(ns, "web", rollout[0])
	require.NoError(t, env.Client.Create(ctx, slice))
	retried := route("shop.example.com", "/", v1.PathTypePrefix, "web", 80)
	retried.Retries = &v1.RouteRetries{Attempts: 2}
	gws := map[string]*v1.APIGateway{
		"retried": gateway("retried", retried),
		"plain":   gateway("plain", route("plain.example.com", "/", v1.PathTypePrefix, "web", 80)),
	}
	for name, gw := range gws {
		gw.Namespace = ns
		gws[name] = createGateway(t, gw)
	}
	serves := func(state map[string]bool) func(string) bool {
		return func(c string) bool {
			for a, ready := range state {
				if strings.Contains(c, "server "+a+":8080;") != ready {
					return false
				}
			}
			return true
		}
	}
	configOf := func(gw *v1.APIGateway) string { _, ch := settled(t, gw); return ch.cm.Data[configKey] }
	require.Eventually(t, func() bool { return serves(rollout[0])(configOf(gws["retried"])) }, waitFor, tick)
	before := map[string]string{"retried": configOf(gws["retried"]), "plain": configOf(gws["plain"])}
	reconciles := op.reconcileCount(ns + "/plain")

	w, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	require.NoError(t, err)
	watcher, err := w.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns))
	require.NoError(t, err)
	defer watcher.Stop()
	changes := map[string]int{}
	last := map[string]string{gws["retried"].Name + "-config": before["retried"], gws["plain"].Name + "-config": before["plain"]}
	count := func(until func() bool) {
		for !until() {
			select {
			case ev := <-watcher.ResultChan():
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok && cm.Data[configKey] != last[cm.Name] {
					last[cm.Name] = cm.Data[configKey]
					changes[cm.Name]++
				}
			case <-time.After(waitFor):
				t.Fatal("no ConfigMap event in time")
			}
		}
	}
	for _, state := range rollout[1:] {
		slice.Endpoints = endpointSliceOf(ns, "web", state).Endpoints
		require.NoError(t, env.Client.Update(ctx, slice))
		count(func() bool { return serves(state)(last[gws["retried"].Name+"-config"]) })
	}
	assert.Equal(t, 6, changes["retried-config"], "one per new ready set: a pod ready, a pod terminating, three times")
	assert.Zero(t, changes["plain-config"], "a route without retries: no reload")
	assert.Equal(t, before["plain"], configOf(gws["plain"]))
	t.Logf("a rolling restart of 3 replicas (%d EndpointSlice updates): %d configurations for the gateway whose route retries, %d for the other; the other reconciled %d times",
		len(rollout)-1, changes["retried-config"], changes["plain-config"], op.reconcileCount(ns+"/plain")-reconciles)
}
