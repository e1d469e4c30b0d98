package services

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
)

func TestSlim(t *testing.T) {
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
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
			},
		},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}}},
	}
	want := &Service{
		ObjectMeta: metav1.ObjectMeta{Name: "users", Namespace: "shop", UID: "u1", ResourceVersion: "42"},
		Address:    netip.MustParseAddr("10.0.0.10"),
		Ports:      []Port{{Name: "http", Number: 80, TCP: true}, {Name: "admin", Number: 9000, TCP: true}, {Name: "dns", Number: 53}},
	}
	slim, err := Slim(full)
	require.NoError(t, err)
	assert.Equal(t, want, slim)

	again, err := Slim(slim)
	require.NoError(t, err)
	assert.Equal(t, want, again, "the transform must be idempotent")

	other := &corev1.ConfigMap{}
	passed, err := Slim(other)
	require.NoError(t, err)
	assert.Same(t, other, passed)
	assert.Equal(t, want, want.DeepCopyObject())
}

// TestPortName: the name of a Service's TCP port, which its
// EndpointSlices' ports carry.
func TestPortName(t *testing.T) {
	slim, err := Slim(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Port: 81}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}})
	require.NoError(t, err)
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	require.NoError(t, store.Add(slim))
	c := &Cache{store: store}
	for name, tc := range map[string]struct {
		service string
		port    int32
		want    string
		ok      bool
	}{
		"a named port":       {"api", 80, "http", true},
		"the unnamed port":   {"api", 81, "", true},
		"a UDP port":         {"api", 53, "", false},
		"a port it lacks":    {"api", 82, "", false},
		"a Service it lacks": {"web", 80, "", false},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := c.PortName("shop", tc.service, tc.port)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.ok, ok)
		})
	}
}

// TestAddress: a Service's ClusterIP, only for a TCP port it has and only
// when it has one.
func TestAddress(t *testing.T) {
	svc := func(name string, typ corev1.ServiceType, ip string, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec: corev1.ServiceSpec{Type: typ, ClusterIP: ip, Ports: ports}}
	}
	http := corev1.ServicePort{Port: 8080}
	tests := map[string]struct {
		svc  *corev1.Service
		port int32
		want string // "" is none
	}{
		"ClusterIP":             {svc("api", corev1.ServiceTypeClusterIP, "10.0.0.7", http), 8080, "10.0.0.7"},
		"IPv6":                  {svc("api", "", "fd00::7", http), 8080, "fd00::7"},
		"no such port":          {svc("api", "", "10.0.0.7", http), 9090, ""},
		"the port for UDP only": {svc("api", "", "10.0.0.7", corev1.ServicePort{Port: 8080, Protocol: corev1.ProtocolUDP}), 8080, ""},
		"the port for both":     {svc("api", "", "10.0.0.7", corev1.ServicePort{Port: 8080, Protocol: corev1.ProtocolUDP}, corev1.ServicePort{Port: 8080, Protocol: corev1.ProtocolTCP}), 8080, "10.0.0.7"},
		"headless":              {svc("api", "", corev1.ClusterIPNone, http), 8080, ""},
		"ExternalName":          {svc("api", corev1.ServiceTypeExternalName, "", http), 8080, ""},
		"another Service":       {svc("other", "", "10.0.0.7", http), 8080, ""},
		"no address yet":        {svc("api", "", "", http), 8080, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := &Cache{store: toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)}
			slim, err := Slim(tc.svc)
			require.NoError(t, err)
			require.NoError(t, c.store.Add(slim))
			addr, ok := c.Address("shop", "api", tc.port)
			assert.Equal(t, tc.want != "", ok)
			if tc.want != "" {
				assert.Equal(t, netip.MustParseAddr(tc.want), addr)
			}
		})
	}
}

// TestWatchers: a watcher hears of a Service added or gone, and of an
// update only when its address or ports changed; a tombstone's Service is
// the one gone.
func TestWatchers(t *testing.T) {
	a := &Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", ResourceVersion: "1"}, Ports: []Port{{Number: 80, TCP: true}}}
	relabelled := a.DeepCopyObject().(*Service)
	relabelled.ResourceVersion = "2"
	moved := a.DeepCopyObject().(*Service)
	moved.Address = netip.MustParseAddr("10.0.0.8")
	ported := a.DeepCopyObject().(*Service)
	ported.Ports = []Port{{Number: 81, TCP: true}}
	ws := &watchers{}
	var heard []string
	ws.add(t.Context(), func(old, svc *Service) {
		switch {
		case old == nil:
			heard = append(heard, "add "+svc.ResourceVersion)
		case svc == nil:
			heard = append(heard, "delete "+old.ResourceVersion)
		default:
			heard = append(heard, "update")
		}
	})
	ws.OnAdd(a, true)
	ws.OnUpdate(a, relabelled)
	ws.OnUpdate(a, moved)
	ws.OnUpdate(a, ported)
	ws.OnDelete(a)
	ws.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "shop/api", Obj: relabelled})
	assert.Equal(t, []string{"add 1", "update", "update", "delete 1", "delete 2"}, heard)
}
