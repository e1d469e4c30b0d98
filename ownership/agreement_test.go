package ownership

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
)

// world is a cluster as Resolve and the record lifecycle see it: the
// stored gateways, with the claims their last reconcile wrote, and the
// HostClaims.
type world struct {
	gateways map[string]*v1.APIGateway
	records  Records
	now      time.Time
}

func (w *world) others(self *v1.APIGateway) []*v1.APIGateway {
	var out []*v1.APIGateway
	for _, k := range w.keys() {
		if g := w.gateways[k]; !sameGateway(g, self) {
			out = append(out, g)
		}
	}
	return out
}

func (w *world) keys() []string {
	var ks []string
	for k := range w.gateways {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// admit is the validating webhook's verdict on storing gw.
func (w *world) admit(gw *v1.APIGateway) bool {
	return len(Resolve(Input{Gateway: gw, Claims: gw.Status.Claims, Others: w.others(gw), Policy: Strict, Admission: true, Records: w.records})) == 0
}

// reconcile is one pass of the reconciler over every gateway: claims
// stamped, routes resolved, lost ones marked, hosts recorded (a create of
// a name that exists fails, as in the API server).
func (w *world) reconcile() {
	for _, k := range w.keys() {
		w.now = w.now.Add(time.Second)
		gw := w.gateways[k]
		others := w.others(gw)
		claims := Stamp(gw, gw.Status.Claims, Scopes(gw, Classes{}), func(Scope) bool { return true }, w.now, Floor(others))
		in := Input{Gateway: gw, Claims: claims, Others: others, Policy: Strict, Records: w.records}
		losses := Resolve(in)
		for _, host := range Unrecorded(in, losses) {
			if !slices.ContainsFunc(w.records.Claims, func(c v1.HostClaim) bool { return c.Name == v1.HostClaimName(host) }) {
				rec := record(host, gw.Namespace)
				rec.CreationTimestamp = metav1.NewTime(w.now)
				w.records.Claims = append(w.records.Claims, rec)
			}
		}
		if len(Unrecorded(in, losses)) > 0 {
			in.Records = w.records
			losses = Resolve(in)
		}
		MarkLost(claims, losses)
		gw.Status.Claims, gw.Status.ObservedGeneration = claims, gw.Generation
	}
}

// losses are gw's routes the reconciler refuses it: to another
// namespace's host or record, or to a gateway that claimed the route first.
func (w *world) losses(gw *v1.APIGateway) []Loss {
	return Resolve(Input{Gateway: gw, Claims: gw.Status.Claims, Others: w.others(gw), Policy: Strict, Records: w.records})
}

// TestAdmissionAgreesWithTheReconciler: on random sequences of creates,
// edits, deletes, re-creates and writes stored during an outage (no
// admission), no write admission lets through loses a route in the
// reconciler after it (to a host's owner or to a route's holder: every
// verdict), and a recorded host never changes namespace (no release within
// a sequence). Seeded and bounded: 300 sequences of 25 steps.
func TestAdmissionAgreesWithTheReconciler(t *testing.T) {
	hosts := []string{"shop.example.com", "login.shop.example.com", "*.shop.example.com", "other.example.com"}
	pathsOf := []string{"/", "/cart/", "/login"}
	namespaces := []string{"a", "b", "c"}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 40))
		w := &world{gateways: map[string]*v1.APIGateway{}, now: t0}
		owners := map[string]string{}
		for step := range 25 {
			ns, name := namespaces[rng.IntN(3)], fmt.Sprintf("g%d", rng.IntN(2))
			key := ns + "/" + name
			if rng.IntN(5) == 0 {
				delete(w.gateways, key)
			} else {
				g := gw(ns, name, prefix(hosts[rng.IntN(len(hosts))], pathsOf[rng.IntN(len(pathsOf))]))
				if rng.IntN(3) == 0 {
					g.Spec.Routes = append(g.Spec.Routes, prefix(hosts[rng.IntN(len(hosts))], pathsOf[rng.IntN(len(pathsOf))]))
				}
				if rng.IntN(3) == 0 {
					g = delegating(g, string(g.Spec.Routes[0].Host), namespaces[(slices.Index(namespaces, ns)+1)%3], "/cart/")
				}
				if old := w.gateways[key]; old != nil && rng.IntN(2) == 0 {
					g.Status, g.Generation = old.Status, old.Generation+1 // an edit keeps the status; else a re-create
				}
				outage := rng.IntN(6) == 0
				if !outage && !w.admit(g) {
					continue
				}
				w.gateways[key] = g
				for range 3 {
					w.reconcile()
				}
				if !outage {
					if l := w.losses(w.gateways[key]); len(l) > 0 {
						t.Fatalf("seed %d step %d: admitted %s %v, then the reconciler took %v", seed, step, key, g.Spec.Routes, l)
					}
				}
			}
			for range 2 {
				w.reconcile()
			}
			for _, c := range w.records.Claims {
				if prev, ok := owners[string(c.Spec.Host)]; ok && prev != c.Spec.Namespace {
					t.Fatalf("seed %d step %d: host %s passed from %s to %s", seed, step, c.Spec.Host, prev, c.Spec.Namespace)
				}
				owners[string(c.Spec.Host)] = c.Spec.Namespace
			}
		}
	}
}
