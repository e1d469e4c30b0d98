package ownership

import (
	"fmt"
	"testing"

	v1 "example.com/apigateway-operator/api/v1"
)

// manyRecords are n HostClaims of n/10 namespaces, on names of n/10 team
// domains, and a DomainBinding of every tenth team domain: a large
// cluster's records, as routeindex.Records lists them.
func manyRecords(n int) Records {
	var r Records
	for i := range n {
		r.Claims = append(r.Claims, recordAt(fmt.Sprintf("svc%d.team%d.example.com", i, i%(n/10)), fmt.Sprintf("ns%d", i%(n/10)), i))
	}
	for i := 0; i < n/10; i += 10 {
		r.Bindings = append(r.Bindings, binding(fmt.Sprintf("team%d.example.com", i), fmt.Sprintf("ns%d", i)))
	}
	return r
}

// BenchmarkResolveRecords is Resolve of a gateway with 20 routes on 10
// hosts (3 of them recorded, by its namespace and by others) among n
// records, and Unrecorded after it: what one reconcile decides from the
// records, reading every record per lookup (scan) or the Indexed ones;
// index is what indexing them costs (routeindex.Records, once per
// reconcile or admission request).
func BenchmarkResolveRecords(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		records := manyRecords(n)
		var routes []v1.Route
		for h := range 10 {
			host := fmt.Sprintf("svc%d.team%d.example.com", h, h)
			routes = append(routes, prefix(host, "/a"), prefix(host, "/b"))
		}
		g := claimed(gw("ns1", "shop", routes...), 1)
		in := Input{Gateway: g, Claims: g.Status.Claims, Policy: Strict, Records: records}
		b.Run(fmt.Sprintf("records=%d/scan", n), func(b *testing.B) {
			for b.Loop() {
				Unrecorded(in, Resolve(in))
			}
		})
		indexed := in
		indexed.Records = records.Indexed()
		b.Run(fmt.Sprintf("records=%d/indexed", n), func(b *testing.B) {
			for b.Loop() {
				Unrecorded(indexed, Resolve(indexed))
			}
		})
		b.Run(fmt.Sprintf("records=%d/index", n), func(b *testing.B) {
			for b.Loop() {
				records.Indexed()
			}
		})
	}
}
