package ownership

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
)

func record(host, ns string) v1.HostClaim {
	return v1.HostClaim{ObjectMeta: metav1.ObjectMeta{Name: v1.HostClaimName(host)}, Spec: v1.HostClaimSpec{Host: v1.Hostname(host), Namespace: ns}}
}

// recordAt is record(host, ns) created at t0+at seconds.
func recordAt(host, ns string, at int) v1.HostClaim {
	r := record(host, ns)
	r.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(at) * time.Second))
	return r
}

func binding(domain string, namespaces ...string) v1.DomainBinding {
	return v1.DomainBinding{Spec: v1.DomainBindingSpec{Domain: v1.Hostname(domain), Namespaces: namespaces}}
}

// describe is losses as "index reason holder", the holder a gateway, a
// namespace ("ns/") or a domain.
func describe(losses []Loss) []string {
	var out []string
	for _, l := range losses {
		holder := l.Owner + "/"
		switch {
		case l.Holder != nil:
			holder = l.Holder.Namespace + "/" + l.Holder.Name
		case l.Reason == v1.ReasonDomainBound:
			holder = l.Domain
		}
		out = append(out, fmt.Sprintf("%d %s %s", l.Index, l.Reason, holder))
	}
	return out
}

func TestResolveRecords(t *testing.T) {
	shop := "shop.example.com"
	tests := map[string]struct {
		gw        *v1.APIGateway
		others    []*v1.APIGateway
		records   Records
		policy    Policy
		admission bool
		want      []string
	}{
		"a record beats an older claim": {
			gw:      claimed(gw("b", "x", prefix(shop, "/")), 1),
			others:  []*v1.APIGateway{claimed(gw("a", "shop", prefix(shop, "/")), 9)},
			records: Records{Claims: []v1.HostClaim{record(shop, "a")}},
			want:    []string{"0 HostOwned a/"},
		},
		"the owner re-created: no claim, its record keeps the host from a lost route and a borrower": {
			gw: gw("a", "shop", prefix(shop, "/"), prefix(shop, "/login")),
			others: []*v1.APIGateway{lostAll(claimed(gw("c", "outage", prefix(shop, "/login")), 1)),
				claimed(gw("b", "cart", prefix(shop, "/cart/")), 2)},
			records:   Records{Claims: []v1.HostClaim{record(shop, "a")}},
			admission: true,
		},
		"the borrower with no owner gateway: nothing lends, and it still does not own": {
			gw:      claimed(gw("b", "cart", prefix(shop, "/cart/"), prefix(shop, "/")), 2),
			records: Records{Claims: []v1.HostClaim{record(shop, "a")}},
			want:    []string{"0 HostOwned a/", "1 HostOwned a/"},
		},
		"names below a recorded host": {
			gw:      gw("b", "x", prefix("login."+shop, "/"), prefix("*."+shop, "/"), prefix("myshop.example.com", "/")),
			records: Records{Claims: []v1.HostClaim{record(shop, "a")}},
			want:    []string{"0 HostOwned a/", "1 HostOwned a/"},
		},
		"a wildcard over a recorded host": {
			gw:      gw("b", "x", prefix("*.example.com", "/")),
			records: Records{Claims: []v1.HostClaim{record(shop, "a")}},
			want:    []string{"0 HostOwned a/"},
		},
		"a name below, lent by the owner": {
			gw:      gw("b", "login", prefix("login."+shop, "/auth/")),
			others:  []*v1.APIGateway{delegating(claimed(gw("a", "shop", prefix(shop, "/")), 1), "login."+shop, "b", "/auth/")},
			records: Records{Claims: []v1.HostClaim{record(shop, "a")}},
		},
		"InterNamespaceAllowed: records decide nothing": {
			gw:      gw("b", "x", prefix(shop, "/x")),
			records: Records{Claims: []v1.HostClaim{record(shop, "a")}},
			policy:  InterNamespaceAllowed,
		},
		"a bound domain, from a namespace left out": {
			gw:      gw("b", "x", prefix("api.corp.example.com", "/"), prefix("api.example.org", "/")),
			records: Records{Bindings: []v1.DomainBinding{binding("corp.example.com", "a")}},
			want:    []string{"0 DomainBound corp.example.com"},
		},
		"a bound domain, under InterNamespaceAllowed too": {
			gw:      gw("b", "x", prefix("corp.example.com", "/")),
			records: Records{Bindings: []v1.DomainBinding{binding("corp.example.com", "a")}},
			policy:  InterNamespaceAllowed,
			want:    []string{"0 DomainBound corp.example.com"},
		},
		"nested bindings: every one must list the namespace": {
			gw:      gw("c", "x", prefix("x.corp.example.com", "/"), prefix("www.example.com", "/")),
			records: Records{Bindings: []v1.DomainBinding{binding("example.com", "a"), binding("corp.example.com", "c")}},
			want:    []string{"0 DomainBound example.com", "1 DomainBound example.com"},
		},
		"nested bindings that both list it": {
			gw:      gw("c", "x", prefix("x.corp.example.com", "/")),
			records: Records{Bindings: []v1.DomainBinding{binding("example.com", "a", "c"), binding("corp.example.com", "c")}},
		},
		"a wildcard covering a domain bound to others": {
			gw:      gw("a", "x", prefix("*.example.com", "/")),
			records: Records{Bindings: []v1.DomainBinding{binding("example.com", "a"), binding("corp.example.com", "c")}},
			want:    []string{"0 DomainBound corp.example.com"},
		},
		"two overlapping records (created at once): the older decides, for the other's namespace": {
			gw:      gw("z", "x", prefix("login."+shop, "/")),
			records: Records{Claims: []v1.HostClaim{recordAt("example.com", "z", 2), recordAt(shop, "a", 1)}},
			want:    []string{"0 HostOwned a/"},
		},
		"two overlapping records: the older decides, for its own namespace": {
			gw:      gw("a", "x", prefix("other.example.com", "/"), prefix(shop, "/")),
			records: Records{Claims: []v1.HostClaim{recordAt("example.com", "z", 2), recordAt(shop, "a", 1)}},
			want:    []string{"0 HostOwned z/"},
		},
		"a record of a namespace a binding leaves out decides nothing there": {
			gw:      gw("c", "x", prefix("x.corp.example.com", "/")),
			records: Records{Claims: []v1.HostClaim{record("example.com", "a")}, Bindings: []v1.DomainBinding{binding("corp.example.com", "c")}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			policy := tc.policy
			if policy == "" {
				policy = Strict
			}
			for _, records := range []Records{tc.records, tc.records.Indexed()} {
				losses := Resolve(Input{Gateway: tc.gw, Claims: tc.gw.Status.Claims, Others: tc.others, Policy: policy,
					Admission: tc.admission, Records: records})
				assert.Equal(t, tc.want, describe(losses))
			}
		})
	}
}

func TestUnrecorded(t *testing.T) {
	shop := "shop.example.com"
	owner := claimed(gw("a", "shop", prefix(shop, "/"), prefix(shop, "/x"), prefix("login."+shop, "/")), 1)
	in := Input{Gateway: owner, Claims: owner.Status.Claims, Policy: Strict}
	assert.Equal(t, []string{shop, "login." + shop}, Unrecorded(in, Resolve(in)), "each host once")

	in.Records = Records{Claims: []v1.HostClaim{record(shop, "a")}}
	assert.Empty(t, Unrecorded(in, Resolve(in)), "its record covers both")

	borrower := claimed(gw("b", "cart", prefix(shop, "/cart/")), 2)
	lender := delegating(claimed(gw("a", "shop", prefix(shop, "/")), 1), shop, "b", "/cart/")
	in = Input{Gateway: borrower, Claims: borrower.Status.Claims, Others: []*v1.APIGateway{lender}, Policy: Strict}
	assert.Empty(t, Resolve(in), "lent")
	assert.Empty(t, Unrecorded(in, Resolve(in)), "a route held under a delegation records nothing")

	lost := claimed(gw("c", "late", prefix(shop, "/login")), 3)
	in = Input{Gateway: lost, Claims: lost.Status.Claims, Others: []*v1.APIGateway{lender}, Policy: Strict}
	assert.Empty(t, Unrecorded(in, Resolve(in)), "a lost route records nothing")

	nowhere := routingNowhere(gw("d", "x", prefix("d.example.com", "/")))
	in = Input{Gateway: nowhere, Claims: nowhere.Status.Claims, Policy: Strict}
	assert.Empty(t, Unrecorded(in, Resolve(in)), "routing nowhere records nothing")
}

func TestRecordsRoutes(t *testing.T) {
	rec := record("shop.example.com", "a")
	r := Records{}
	assert.True(t, r.Routes(&rec, []*v1.APIGateway{claimed(gw("a", "x", prefix("login.shop.example.com", "/")), 1)}), "a name it covers")
	assert.False(t, r.Routes(&rec, []*v1.APIGateway{claimed(gw("b", "x", prefix("shop.example.com", "/")), 1)}), "another namespace's")
	assert.False(t, r.Routes(&rec, []*v1.APIGateway{claimed(gw("a", "x", prefix("example.com", "/")), 1)}), "a host above it")
	deleting := claimed(gw("a", "x", prefix("shop.example.com", "/")), 1)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	assert.False(t, r.Routes(&rec, []*v1.APIGateway{deleting}), "a gateway being deleted")
	assert.False(t, r.Routes(&rec, []*v1.APIGateway{routingNowhere(gw("a", "x", prefix("shop.example.com", "/")))}),
		"a gateway every parent refused routes nowhere")
	assert.False(t, r.Routes(&rec, []*v1.APIGateway{gw("a", "x", prefix("shop.example.com", "/"))}),
		"a gateway the operator has not seen yet: its first pass requeues the record")
}

func TestAncestors(t *testing.T) {
	assert.Equal(t, []string{"login.shop.example.com", "shop.example.com", "*.shop.example.com", "example.com", "*.example.com"},
		Ancestors("login.shop.example.com"))
	assert.Equal(t, []string{"*.shop.example.com", "shop.example.com", "example.com", "*.example.com"}, Ancestors("*.shop.example.com"))
	assert.Equal(t, []string{"example.com"}, Ancestors("example.com"))
}

func TestDomains(t *testing.T) {
	assert.Equal(t, []string{"shop.example.com", "example.com"}, Domains("login.shop.example.com"))
	assert.Equal(t, []string{"shop.example.com", "example.com"}, Domains("*.shop.example.com"))
	assert.Empty(t, Domains("example.com"))
	assert.True(t, Indexable("example.com"))
	assert.False(t, Indexable("localhost"))
	assert.False(t, Indexable("*.com"))
}

// TestIndexedRecordsFindWhatAScanFinds: on random records and hosts (single
// labels, wildcards, names several labels below others, records appended
// after indexing), every lookup of Indexed records answers what reading
// every record answers.
func TestIndexedRecordsFindWhatAScanFinds(t *testing.T) {
	names := []string{"localhost", "com", "example.com", "*.example.com", "shop.example.com", "*.shop.example.com",
		"login.shop.example.com", "a.b.shop.example.com", "*.b.shop.example.com", "other.example.org", "*.example.org"}
	namespaces := []string{"a", "b", "c"}
	rng := rand.New(rand.NewPCG(1, 40))
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	for range 300 {
		var r Records
		for i := range rng.IntN(8) {
			r.Claims = append(r.Claims, recordAt(pick(names), pick(namespaces), rng.IntN(3)+i%2))
		}
		for range rng.IntN(4) {
			r.Bindings = append(r.Bindings, binding(pick(names), pick(namespaces)))
		}
		x := r.Indexed()
		for range rng.IntN(3) {
			rec := recordAt(pick(names), pick(namespaces), rng.IntN(3))
			r.Claims, x.Claims = append(r.Claims, rec), append(x.Claims, rec)
		}
		for _, host := range names {
			for _, ns := range namespaces {
				d, out := r.BoundOut(host, ns)
				xd, xout := x.BoundOut(host, ns)
				o, owned := r.Owner(host, ns)
				xo, xowned := x.Owner(host, ns)
				require.Equal(t, []any{d, out, o, owned, r.covering(host, ns)}, []any{xd, xout, xo, xowned, x.covering(host, ns)},
					"host %s, namespace %s, records %+v", host, ns, r)
			}
			require.Equal(t, r.recorded(host), x.recorded(host), "host %s, records %+v", host, r)
		}
	}
}
