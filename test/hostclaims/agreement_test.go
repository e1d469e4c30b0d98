package hostclaims

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/ownership"
	"example.com/apigateway-operator/routeindex"
)

const (
	// agreementSteps bounds the sequence: each step waits at most
	// waitFor for the reconciler to settle.
	agreementSteps = 40
	// seedVariable replays a logged seed.
	seedVariable = "APIGATEWAY_AGREEMENT_SEED"
)

// TestAdmissionAgreesWithTheReconcilerLive (issue 40, item 1): admission
// decides a write with the verdict the reconciler reaches after it,
// through the real API server. A seeded random sequence of creates,
// edits, re-creates and deletes of APIGateways in three namespaces that
// compete for overlapping hosts (a host, a name and the wildcard below it,
// another host; paths that nest; delegations); about one write in six is
// stored during an outage, after asking admission for its verdict with a
// server-side dry run. After each write the test waits until the
// reconciler has settled (awaitSettled) and checks the written gateway:
// admitted, the reconciler accepts it; refused, the reconciler refuses it
// a host or a route too.
func TestAdmissionAgreesWithTheReconcilerLive(t *testing.T) {
	seed := agreementSeed(t)
	rng := rand.New(rand.NewPCG(seed, 40))
	op, mgr := runOperator(t, 0)
	namespaces := []string{newNamespace(t, "agree-a"), newNamespace(t, "agree-b"), newNamespace(t, "agree-c")}
	t.Cleanup(func() {
		for _, ns := range namespaces {
			_ = env.Client.DeleteAllOf(context.Background(), &v1.APIGateway{}, client.InNamespace(ns))
		}
	})
	base := namespaces[0] + ".example.com"
	hosts := []string{base, "login." + base, "*." + base, "other-" + base}
	var steps []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (%s=%d replays it): %s\nsteps:\n%s", seed, seedVariable, seed, fmt.Sprintf(format, args...), strings.Join(steps, "\n"))
	}
	for step := range agreementSteps {
		ns, name := namespaces[rng.IntN(3)], fmt.Sprintf("g%d", rng.IntN(2))
		key := client.ObjectKey{Namespace: ns, Name: name}
		exists := env.Client.Get(context.Background(), key, &v1.APIGateway{}) == nil
		if exists && rng.IntN(5) == 0 {
			steps = append(steps, fmt.Sprintf("%d: delete %s", step, key))
			remove(t, gateway(ns, name))
			awaitSettled(t, mgr.GetCache(), namespaces)
			continue
		}
		gw := randomGateway(rng, ns, name, hosts, namespaces)
		edit := exists && rng.IntN(2) == 0
		outage := rng.IntN(6) == 0
		kind := "create"
		switch {
		case edit:
			kind = "edit"
		case exists: // a re-create: delete, then create
			kind = "re-create"
			remove(t, gw)
			awaitSettled(t, mgr.GetCache(), namespaces)
		}
		what := fmt.Sprintf("%d: %s %s %s", step, kind, key, describe(gw))
		var err error
		if outage {
			// The verdict admission would give, asked before the outage;
			// then the write lands unchecked.
			err = write(gw, edit, true)
			op.Stop(t)
			require.NoError(t, write(gw, edit, false), "writing %s during the outage", key)
			op, mgr = runOperator(t, 0)
			what += " (outage)"
		} else {
			err = write(gw, edit, false)
		}
		admitted, refusal := verdict(err)
		steps = append(steps, what+": "+map[bool]string{true: "admitted", false: "refused: " + refusal}[admitted])
		if !admitted && refusal == "" {
			fail("admission refused %s for another reason than a host or route: %v", key, err)
		}
		if !admitted && !outage {
			continue // not stored
		}
		awaitSettled(t, mgr.GetCache(), namespaces)
		cur := &v1.APIGateway{}
		require.NoError(t, env.Client.Get(context.Background(), key, cur))
		cond := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionAccepted)
		switch {
		case admitted && cond.Status != metav1.ConditionTrue:
			fail("admitted %s, then the reconciler refused it: %s %s", key, cond.Reason, cond.Message)
		case !admitted && !conflictReasons[cond.Reason]:
			fail("admission refused %s (%s), then the reconciler decided %s %s", key, refusal, cond.Reason, cond.Message)
		}
	}
	t.Logf("seed %d: %d steps agreed:\n%s", seed, agreementSteps, strings.Join(steps, "\n"))
}

// conflictReasons are the Accepted reasons of a host or route lost.
var conflictReasons = map[string]bool{v1.ReasonHostOwned: true, v1.ReasonDomainBound: true, v1.ReasonRouteConflict: true}

// agreementSeed is seedVariable's seed, or a new one; logged either way.
func agreementSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(seedVariable); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, seedVariable)
	}
	t.Logf("seed %d (%s=%d replays it)", seed, seedVariable, seed)
	return seed
}

// randomGateway is ns/name with one or two routes on hosts, paths that
// nest, and at times a delegation of /cart/ on its first host to the next
// namespace.
func randomGateway(rng *rand.Rand, ns, name string, hosts, namespaces []string) *v1.APIGateway {
	paths := []string{"/", "/cart/", "/login"}
	pick := func() (string, string) { return hosts[rng.IntN(len(hosts))], paths[rng.IntN(len(paths))] }
	h, p := pick()
	gw := gateway(ns, name, h, p)
	if rng.IntN(3) == 0 {
		if h2, p2 := pick(); h2 != h || p2 != p {
			gw = gateway(ns, name, h, p, h2, p2)
		}
	}
	if rng.IntN(3) == 0 {
		next := namespaces[0]
		for i, n := range namespaces {
			if n == ns {
				next = namespaces[(i+1)%len(namespaces)]
			}
		}
		gw = lend(gw, h, next, "/cart/")
	}
	return gw
}

// describe is gw's routes and delegations, short.
func describe(gw *v1.APIGateway) string {
	var parts []string
	for _, r := range gw.Spec.Routes {
		parts = append(parts, string(r.Host)+string(r.Path))
	}
	for _, d := range gw.Spec.Delegations {
		parts = append(parts, fmt.Sprintf("lends %s%v to %s", d.Host, d.PathPrefixes, d.Namespace))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// write creates gw, or replaces the stored one's spec with gw's (edit);
// a dry run when dryRun.
func write(gw *v1.APIGateway, edit, dryRun bool) error {
	ctx := context.Background()
	var create []client.CreateOption
	var update []client.UpdateOption
	if dryRun {
		create, update = append(create, client.DryRunAll), append(update, client.DryRunAll)
	}
	if !edit {
		return env.Client.Create(ctx, gw.DeepCopy(), create...)
	}
	cur := &v1.APIGateway{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(gw), cur); err != nil {
		return err
	}
	cur.Spec = gw.Spec
	return env.Client.Update(ctx, cur, update...)
}

// verdict is admission's answer err: admitted, or the refusal of a host
// or route it names ("" for any other error).
func verdict(err error) (bool, string) {
	if err == nil {
		return true, ""
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false, ""
	}
	var refusals []string
	for _, c := range status.Status().Details.Causes {
		for _, says := range []string{"belongs to", "bound to other namespaces", "already served by"} {
			if strings.Contains(c.Message, says) {
				refusals = append(refusals, c.Field+" "+says)
			}
		}
	}
	return false, strings.Join(refusals, "; ")
}

// awaitSettled waits until the reconciler has settled the gateways of
// namespaces: each has its status written for its generation and is as
// one more pass would leave it (its lost routes and its Accepted condition
// are ownership.Resolve's verdicts on what the API server holds, and every
// host it keeps is recorded), and the operator's cache holds what the API
// server holds (the webhooks decide the next write from it).
func awaitSettled(t *testing.T, cache client.Reader, namespaces []string) {
	t.Helper()
	ctx := context.Background()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var all []*v1.APIGateway
		for _, ns := range namespaces {
			live, cached := &v1.APIGatewayList{}, &v1.APIGatewayList{}
			require.NoError(c, env.Client.List(ctx, live, client.InNamespace(ns)))
			require.NoError(c, cache.List(ctx, cached, client.InNamespace(ns)))
			require.Equal(c, versions(live.Items), versions(cached.Items), "the operator's cache of namespace %s", ns)
			for i := range live.Items {
				all = append(all, &live.Items[i])
			}
		}
		records, err := routeindex.Records(ctx, env.Client)
		require.NoError(c, err)
		cachedRecords, err := routeindex.Records(ctx, cache)
		require.NoError(c, err)
		require.Equal(c, versions(records.Claims), versions(cachedRecords.Claims), "the operator's cache of the HostClaims")
		classes, err := routeindex.Classes(ctx, env.Client)
		require.NoError(c, err)
		for _, gw := range all {
			require.Equal(c, gw.Generation, gw.Status.ObservedGeneration, "%s/%s not reconciled", gw.Namespace, gw.Name)
			cond := meta.FindStatusCondition(gw.Status.Conditions, v1.ConditionAccepted)
			require.NotNil(c, cond)
			require.Equal(c, gw.Generation, cond.ObservedGeneration)
			in := ownership.Input{Gateway: gw, Claims: gw.Status.Claims, Others: all, Classes: classes, Policy: ownership.Strict, Records: records}
			losses := ownership.Resolve(in)
			require.False(c, ownership.MarkLost(gw.Status.Claims.DeepCopy(), losses), "%s/%s: its lost routes are not the verdicts yet", gw.Namespace, gw.Name)
			require.Equal(c, len(losses) == 0, cond.Status == metav1.ConditionTrue, "%s/%s: Accepted %s %s", gw.Namespace, gw.Name, cond.Status, cond.Reason)
			require.Empty(c, ownership.Unrecorded(in, losses), "%s/%s: hosts not recorded yet", gw.Namespace, gw.Name)
		}
	}, waitFor, tick, "the reconciler did not settle")
}

// versions are objs' names and resource versions, sorted (a cache lists
// in no order).
func versions[T any, P interface {
	*T
	client.Object
}](objs []T) []string {
	out := make([]string, 0, len(objs))
	for i := range objs {
		o := P(&objs[i])
		out = append(out, o.GetName()+"@"+o.GetResourceVersion())
	}
	slices.Sort(out)
	return out
}
