package clusterdns

import (
	"context"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Services is a ServeLookup lookup that answers as CoreDNS does, from the
// API server c reads: Service "name.namespace" is its ClusterIP, or, for a
// headless Service, the ready addresses of its EndpointSlices. It plays
// the cluster DNS where a real node runs without one (test/node, `make
// run`), at the address the kubelet gives pods as their nameserver.
func Services(c client.Reader) func(name string) []net.IP {
	return func(name string) []net.IP {
		svcName, ns, ok := strings.Cut(name, ".")
		if !ok || strings.Contains(ns, ".") {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var svc corev1.Service
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: svcName}, &svc); err != nil {
			return nil
		}
		if ip := net.ParseIP(svc.Spec.ClusterIP); ip != nil {
			return []net.IP{ip}
		}
		var eps discoveryv1.EndpointSliceList
		if err := c.List(ctx, &eps, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: svcName}); err != nil {
			return nil
		}
		var ips []net.IP
		for _, s := range eps.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && !*e.Conditions.Ready {
					continue
				}
				for _, a := range e.Addresses {
					if ip := net.ParseIP(a); ip != nil && ip.To4() != nil {
						ips = append(ips, ip)
					}
				}
			}
		}
		return ips
	}
}
