package endpoints

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// endpointSlice is an EndpointSlice of Service svc as the EndpointSlice
// controller writes it: port http on 8080, one endpoint per address,
// ready unless listed in unready, with the metadata a real one carries.
func endpointSlice(ns, name, svc string, addrs []string, unready ...string) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: "2f0c5c7e-8a4b-4d6e-9a43-0c9b0b7c1d2e", ResourceVersion: "123456",
			GenerateName: svc + "-",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io",
				"app.kubernetes.io/name": svc},
			Annotations:     map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": "2026-11-29T01:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc, UID: "u", Controller: ptr.To(true)}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: "Update", APIVersion: "discovery.k8s.io/v1"}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for i, a := range addrs {
		ready := true
		for _, u := range unready {
			ready = ready && u != a
		}
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{a},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(false)},
			NodeName:   ptr.To("node-1"), Zone: ptr.To("zone-a"),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("%s-7d9f8b6c5-%05d", svc, i), UID: "p"},
		})
	}
	return es
}

func TestSlim(t *testing.T) {
	es := endpointSlice("shop", "api-abcde", "api", []string{"10.0.0.2", "10.0.0.3", "10.0.0.4"}, "10.0.0.3")
	es.Ports = append(es.Ports, discoveryv1.EndpointPort{Name: ptr.To("dns"), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolUDP)},
		discoveryv1.EndpointPort{Port: ptr.To[int32](9090)})
	es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.5"}}) // ready unknown: ready
	want := &Slice{Namespace: "shop", Name: "api-abcde", Service: "api",
		Ports:     []Port{{Name: "http", Number: 8080}, {Name: "", Number: 9090}},
		Addresses: []netip.Addr{netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.4"), netip.MustParseAddr("10.0.0.5")}}
	got, err := Slim(es)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	again, err := Slim(got)
	require.NoError(t, err)
	assert.Same(t, got, again, "idempotent")

	es.AddressType = discoveryv1.AddressTypeFQDN
	es.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"db.example.com"}}}
	got, err = Slim(es)
	require.NoError(t, err)
	assert.Empty(t, got.(*Slice).Addresses, "names are not addresses")
}

// TestSliceSize: what the cache holds of a slice of three endpoints, as
// the Go heap counts it, against the full object.
func TestSliceSize(t *testing.T) {
	const n = 2000
	measure := func(build func(i int) any) float64 {
		objs := make([]any, 0, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range n {
			objs = append(objs, build(i))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(objs)
		return float64(after.HeapAlloc-before.HeapAlloc) / n
	}
	addrs := []string{"10.244.1.17", "10.244.2.23", "10.244.3.31"}
	full := measure(func(i int) any { return endpointSlice("team-a", fmt.Sprintf("web-%05d", i), "web", addrs) })
	slim := measure(func(i int) any {
		s, _ := Slim(endpointSlice("team-a", fmt.Sprintf("web-%05d", i), "web", addrs))
		return s
	})
	t.Logf("a slice of 3 endpoints: %.0f bytes held slim, %.0f as the full object (Go heap, %d each)", slim, full, n)
	assert.Less(t, slim, 400.0)
}

// cacheOf is a cache without reflectors, whose fetch lists listed.
func cacheOf(referenced map[ServiceKey]bool, listed map[ServiceKey][]*discoveryv1.EndpointSlice) (*Cache, *[]string) {
	c := New(nil, []string{"shop"}, func(k ServiceKey) bool { return referenced[k] })
	var heard []string
	c.watchers = append(c.watchers, func(k ServiceKey, ch Change) { heard = append(heard, fmt.Sprintf("%s/%s %d", k.Namespace, k.Name, ch)) })
	c.list = func(_ context.Context, k ServiceKey) ([]*Slice, error) {
		var out []*Slice
		for _, es := range listed[k] {
			s, _ := Slim(es)
			out = append(out, s.(*Slice))
		}
		return out, nil
	}
	return c, &heard
}

func deltas(typ toolscache.DeltaType, es *discoveryv1.EndpointSlice) toolscache.Deltas {
	s, _ := Slim(es)
	return toolscache.Deltas{{Type: typ, Object: s}}
}

func addrPorts(s ...string) []netip.AddrPort {
	var out []netip.AddrPort
	for _, a := range s {
		out = append(out, netip.MustParseAddrPort(a))
	}
	return out
}

// TestOnlyReferenced: the slices of Services no gateway routes to are not
// held; a Service referenced later is listed once, on its first lookup.
func TestOnlyReferenced(t *testing.T) {
	api, web := ServiceKey{"shop", "api"}, ServiceKey{"shop", "web"}
	referenced := map[ServiceKey]bool{api: true}
	webSlice := endpointSlice("shop", "web-1", "web", []string{"10.0.0.9"})
	c, _ := cacheOf(referenced, map[ServiceKey][]*discoveryv1.EndpointSlice{web: {webSlice}})
	require.NoError(t, c.process(deltas(toolscache.Replaced, endpointSlice("shop", "api-1", "api", []string{"10.0.0.2", "10.0.0.3"})), true))
	require.NoError(t, c.process(deltas(toolscache.Replaced, webSlice), true))
	assert.Equal(t, 1, c.Len(), "only the referenced Service's slice")

	got, ok := c.Ready(api, "http")
	require.True(t, ok)
	assert.ElementsMatch(t, addrPorts("10.0.0.2:8080", "10.0.0.3:8080"), got)
	got, ok = c.Ready(api, "metrics")
	assert.True(t, ok, "a port the slices lack: known, no endpoint")
	assert.Empty(t, got)

	referenced[web] = true
	got, ok = c.Ready(web, "http")
	require.True(t, ok, "read on its first lookup")
	assert.Equal(t, addrPorts("10.0.0.9:8080"), got)
	assert.Equal(t, 2, c.Len())

	referenced[web] = false
	c.Sweep()
	assert.Equal(t, 1, c.Len(), "swept once no gateway routes to it")

	lists := 0
	c.list = func(context.Context, ServiceKey) ([]*Slice, error) { lists++; return nil, nil }
	_, ok = c.Ready(ServiceKey{"shop", "external"}, "http")
	assert.False(t, ok, "a Service without slices (ExternalName, no selector): not known")
	assert.Zero(t, lists, "and not listed: none of its slices was dropped")
}

// TestChanges: what each event tells the watchers.
func TestChanges(t *testing.T) {
	api := ServiceKey{"shop", "api"}
	c, heard := cacheOf(map[ServiceKey]bool{api: true, {"shop", "web"}: true}, nil)
	step := func(typ toolscache.DeltaType, es *discoveryv1.EndpointSlice) []string {
		*heard = nil
		require.NoError(t, c.process(deltas(typ, es), false))
		return *heard
	}
	require.NoError(t, c.process(deltas(toolscache.Replaced, endpointSlice("shop", "api-1", "api", []string{"10.0.0.2"})), true))
	two := endpointSlice("shop", "api-1", "api", []string{"10.0.0.2", "10.0.0.3"})
	assert.Equal(t, []string{"shop/api 1"}, step(toolscache.Updated, two), "a new endpoint: Endpoints")
	assert.Empty(t, step(toolscache.Updated, two), "the same again: nothing")
	assert.Equal(t, []string{"shop/api 1"}, step(toolscache.Updated, endpointSlice("shop", "api-1", "api", []string{"10.0.0.2", "10.0.0.3"}, "10.0.0.3")),
		"an endpoint no longer ready: Endpoints")
	none := endpointSlice("shop", "api-1", "api", []string{"10.0.0.2", "10.0.0.3"}, "10.0.0.2", "10.0.0.3")
	assert.Equal(t, []string{"shop/api 2"}, step(toolscache.Updated, none), "the last ready endpoint gone: Readiness")
	assert.Equal(t, []string{"shop/api 2"}, step(toolscache.Updated, two), "ready again: Readiness")
	assert.Empty(t, step(toolscache.Added, endpointSlice("shop", "other-1", "other", []string{"10.0.0.7"})), "an unreferenced Service: nothing")
	assert.Equal(t, []string{"shop/web 2"}, step(toolscache.Added, endpointSlice("shop", "web-1", "web", []string{"10.0.0.8"})),
		"the first slice of a referenced Service the cache held nothing of: Readiness")
	assert.Equal(t, []string{"shop/api 2"}, step(toolscache.Deleted, two), "its only slice deleted: Readiness")
	assert.Equal(t, []string{"shop/api 2"}, step(toolscache.Added, two), "a first slice after the initial list: Readiness")
	assert.Equal(t, []string{"shop/api 2"}, step(toolscache.Deleted, two), "deleted again")
	got, ok := c.Ready(api, "http")
	assert.False(t, ok, "no slices: not known")
	assert.Empty(t, got)
}

// TestFetchRaces: a fetch's LIST does not bring back a slice deleted
// while it was in flight, nor replace a version an event brought.
func TestFetchRaces(t *testing.T) {
	api := ServiceKey{"shop", "api"}
	old1 := endpointSlice("shop", "api-1", "api", []string{"10.0.0.1"})
	old2 := endpointSlice("shop", "api-2", "api", []string{"10.0.0.2"})
	referenced := map[ServiceKey]bool{}
	c, _ := cacheOf(referenced, nil)
	require.NoError(t, c.process(deltas(toolscache.Replaced, old1), true))
	require.Zero(t, c.Len(), "dropped: no gateway routes to it yet")
	referenced[api] = true
	v := view{c: c, namespace: "shop"}
	c.list = func(context.Context, ServiceKey) ([]*Slice, error) {
		_, known, _ := v.GetByKey("shop/api-2")
		assert.True(t, known, "while a fetch is in flight, the DeltaFIFO passes deletions on")
		// Meanwhile the watch deletes api-2 and updates api-1.
		require.NoError(t, c.process(deltas(toolscache.Deleted, old2), false))
		require.NoError(t, c.process(deltas(toolscache.Updated, endpointSlice("shop", "api-1", "api", []string{"10.0.0.3"})), false))
		var out []*Slice
		for _, es := range []*discoveryv1.EndpointSlice{old1, old2} {
			s, _ := Slim(es)
			out = append(out, s.(*Slice))
		}
		return out, nil
	}
	got, ok := c.Ready(api, "http")
	require.True(t, ok)
	assert.Equal(t, addrPorts("10.0.0.3:8080"), got)
	_, known, _ := v.GetByKey("shop/api-2")
	assert.False(t, known, "no fetch in flight: only what is held")
	assert.Equal(t, []string{"shop/api-1"}, v.ListKeys())
	assert.Empty(t, view{c: c, namespace: "other"}.ListKeys(), "each reflector knows its namespace's slices only")
}

// TestCacheSize: what the cache costs per Service, slices and maps
// included: a referenced Service of one slice of three endpoints, and an
// unreferenced one (only its hash in dropped).
func TestCacheSize(t *testing.T) {
	const n = 2000
	addrs := []string{"10.244.1.17", "10.244.2.23", "10.244.3.31"}
	perService := func(referenced bool) float64 {
		c := New(nil, nil, func(ServiceKey) bool { return referenced })
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range n {
			svc := fmt.Sprintf("web-%05d", i)
			require.NoError(t, c.process(deltas(toolscache.Replaced, endpointSlice("team-a", svc+"-abcde", svc, addrs)), true))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(c)
		return float64(after.HeapAlloc-before.HeapAlloc) / n
	}
	held, dropped := perService(true), perService(false)
	t.Logf("per Service (one slice of 3 endpoints, %d Services): %.0f bytes referenced, %.0f not", n, held, dropped)
	assert.Less(t, held, 1024.0)
	assert.Less(t, dropped, 64.0)
}
