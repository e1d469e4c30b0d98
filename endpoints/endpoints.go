// Package endpoints is the reconciler's cache of the ready endpoints of
// the Services the gateways route to (issue 37): a route with retries is
// proxied to its backend's endpoints, so that nginx can send a failed
// request to another one, and a Service known to have no ready endpoint
// answers 503 at once (render.ServiceEndpoints).
//
// It holds only the EndpointSlices of referenced Services, each reduced
// to a Slice: a cluster has an EndpointSlice per Service, the gateways'
// own among them, and most are no gateway's backend. An informer's store
// holds every object it lists, so this cache runs its own: a reflector
// and a DeltaFIFO whose known objects are this package's store, which
// keeps a slice only while Referenced says a gateway routes to its
// Service. A Service that becomes referenced after its slices were
// dropped is read once with a LIST of its slices (fetch).
package endpoints

import (
	"net/netip"
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// Slice is what the cache keeps of an EndpointSlice: its key, its
// Service, its TCP ports and the addresses of its ready endpoints. A
// *discoveryv1.EndpointSlice with managedFields, topology and targetRefs
// is some kilobytes; a Slice of three endpoints about 230 bytes
// (TestSliceSize), 500 with what the cache keeps it in (TestCacheSize).
type Slice struct {
	Namespace, Name string
	// Service is the kubernetes.io/service-name label: "" for a slice no
	// Service owns, which no lookup reads.
	Service   string
	Ports     []Port
	Addresses []netip.Addr
}

// Port is one TCP port of a slice: the Service port's name, and the
// number the endpoints listen on (the Service's targetPort, resolved by
// the EndpointSlice controller).
type Port struct {
	Name   string
	Number int32
}

// Slim is the DeltaFIFO's transform: an EndpointSlice becomes a Slice.
// It is idempotent, as client-go requires.
func Slim(obj any) (any, error) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	s := &Slice{Namespace: es.Namespace, Name: es.Name, Service: es.Labels[discoveryv1.LabelServiceName]}
	for _, p := range es.Ports {
		if p.Port == nil || (p.Protocol != nil && *p.Protocol != "TCP") {
			continue
		}
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		s.Ports = append(s.Ports, Port{Name: name, Number: *p.Port})
	}
	if es.AddressType == discoveryv1.AddressTypeFQDN {
		return s, nil // names, not addresses: nginx would resolve them once
	}
	for _, e := range es.Endpoints {
		if e.Conditions.Ready != nil && !*e.Conditions.Ready {
			continue
		}
		for _, a := range e.Addresses {
			if addr, err := netip.ParseAddr(a); err == nil && addr.Zone() == "" && !slices.Contains(s.Addresses, addr) {
				s.Addresses = append(s.Addresses, addr)
			}
		}
	}
	return s, nil
}

// key is the DeltaFIFO's key function: namespace/name, of a Slice or of
// the EndpointSlice it was.
func key(obj any) (string, error) {
	if s, ok := obj.(*Slice); ok {
		return s.Namespace + "/" + s.Name, nil
	}
	return toolscache.MetaNamespaceKeyFunc(obj)
}

// ready are the endpoints of port name across slices: the union of the
// addresses of the slices that have a port of that name, each with that
// port's number.
func ready(ss []*Slice, portName string) []netip.AddrPort {
	var out []netip.AddrPort
	for _, s := range ss {
		i := slices.IndexFunc(s.Ports, func(p Port) bool { return p.Name == portName })
		if i < 0 || s.Ports[i].Number < 1 || s.Ports[i].Number > 65535 {
			continue
		}
		for _, a := range s.Addresses {
			out = append(out, netip.AddrPortFrom(a, uint16(s.Ports[i].Number)))
		}
	}
	return out
}
