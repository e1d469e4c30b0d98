package hostclaims

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/testenv"
)

// TestOwnerRecreatesItsGatewayKeepsTheHost (issue 40, finding 1): the
// owner deletes and re-creates its gateway (kubectl replace --force)
// while a namespace it lends /cart/ to and a route stored during an
// outage both hold older claims. The owner keeps the host; the borrower
// stays within its prefix; the stored route stays refused.
func TestOwnerRecreatesItsGatewayKeepsTheHost(t *testing.T) {
	const host = "recreate.example.com"
	op := startOperator(t, 0)
	nsA, nsB, nsC := newNamespace(t, "owner"), newNamespace(t, "borrower"), newNamespace(t, "outage")
	owner := lend(gateway(nsA, "shop", host, "/"), host, nsB, "/cart/")
	mustCreate(t, owner)
	awaitAccepted(t, owner, metav1.ConditionTrue, v1.ReasonAccepted)
	rec := awaitRecord(t, host, nsA)
	borrower := gateway(nsB, "cart", host, "/cart/")
	mustCreate(t, borrower)
	awaitAccepted(t, borrower, metav1.ConditionTrue, v1.ReasonAccepted)
	stored := gateway(nsC, "login", host, "/login")
	outage(t, op, 0, func() { mustCreate(t, stored) })
	awaitAccepted(t, stored, metav1.ConditionFalse, v1.ReasonHostOwned)

	remove(t, owner)
	awaitAccepted(t, borrower, metav1.ConditionFalse, v1.ReasonHostOwned) // nothing lends /cart/ now
	require.NoError(t, create(t, owner), "the owner's re-create")
	awaitAccepted(t, owner, metav1.ConditionTrue, v1.ReasonAccepted)
	awaitAccepted(t, borrower, metav1.ConditionTrue, v1.ReasonAccepted)
	awaitAccepted(t, stored, metav1.ConditionFalse, v1.ReasonHostOwned)
	assert.Equal(t, rec.UID, awaitRecord(t, host, nsA).UID, "the same record")

	// The borrower may not widen its share of the host.
	wider := gateway(nsB, "cart", host, "/cart/", host, "/")
	testenv.RefusedAt(t, update(t, wider), "spec.routes[1].host", "belongs to namespace "+nsA)
}

// TestOwnerMovesItsOnlyRouteInTwoApplies (issue 40, finding 1): the
// owner moves its only route on the host away and back in two applies;
// between them another namespace asks for the host. It is refused, and the
// owner's second apply is admitted and served.
func TestOwnerMovesItsOnlyRouteInTwoApplies(t *testing.T) {
	const host, elsewhere = "move.example.com", "move-elsewhere.example.com"
	startOperator(t, 0)
	nsA, nsB := newNamespace(t, "mover"), newNamespace(t, "taker")
	owner := gateway(nsA, "shop", host, "/")
	mustCreate(t, owner)
	awaitAccepted(t, owner, metav1.ConditionTrue, v1.ReasonAccepted)
	awaitRecord(t, host, nsA)

	require.NoError(t, update(t, gateway(nsA, "shop", elsewhere, "/")), "the first apply")
	awaitAccepted(t, gateway(nsA, "shop", elsewhere, "/"), metav1.ConditionTrue, v1.ReasonAccepted)
	testenv.RefusedAt(t, create(t, gateway(nsB, "taker", host, "/")), "spec.routes[0].host", "belongs to namespace "+nsA)

	require.NoError(t, update(t, owner), "the second apply")
	awaitAccepted(t, owner, metav1.ConditionTrue, v1.ReasonAccepted)
}

// TestNamesBelowAnOwnedHost (issue 40, finding 2): another namespace asks
// for login.<host> and *.<host>: refused at admission, and, stored during
// an outage, refused by the reconciler (HostOwned). A delegation of the
// owner lends a name below its host.
func TestNamesBelowAnOwnedHost(t *testing.T) {
	const host = "below.example.com"
	op := startOperator(t, 0)
	nsA, nsB, nsL := newNamespace(t, "owner"), newNamespace(t, "taker"), newNamespace(t, "lent")
	owner := gateway(nsA, "shop", host, "/")
	mustCreate(t, owner)
	awaitAccepted(t, owner, metav1.ConditionTrue, v1.ReasonAccepted)
	awaitRecord(t, host, nsA)

	testenv.RefusedAt(t, create(t, gateway(nsB, "login", "login."+host, "/")), "spec.routes[0].host", "belongs to namespace "+nsA)
	testenv.RefusedAt(t, create(t, gateway(nsB, "all", "*."+host, "/")), "spec.routes[0].host", "belongs to namespace "+nsA)
	owner = lend(owner, "auth."+host, nsL, "/")
	require.NoError(t, update(t, owner), "lending a name below the owner's host")
	// The webhook decides from its cache of gateways, which sees the
	// owner's new delegation a moment after the update returns.
	lent := gateway(nsL, "auth", "auth."+host, "/")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, create(t, lent), "creating %s/%s", lent.Namespace, lent.Name)
	}, waitFor, tick)
	awaitAccepted(t, lent, metav1.ConditionTrue, v1.ReasonAccepted)

	login, all := gateway(nsB, "login", "login."+host, "/"), gateway(nsB, "all", "*."+host, "/")
	outage(t, op, 0, func() { mustCreate(t, login); mustCreate(t, all) })
	awaitAccepted(t, login, metav1.ConditionFalse, v1.ReasonHostOwned)
	awaitAccepted(t, all, metav1.ConditionFalse, v1.ReasonHostOwned)
	awaitAccepted(t, owner, metav1.ConditionTrue, v1.ReasonAccepted)
	for _, h := range []string{"login." + host, "*." + host} {
		err := env.Client.Get(context.Background(), client.ObjectKey{Name: v1.HostClaimName(h)}, &v1.HostClaim{})
		assert.True(t, apierrors.IsNotFound(err), "a refused route recorded %s: %v", h, err)
	}
}

// TestDomainBindingKeepsADomainToItsNamespaces (issue 40, finding 2): an
// admin binds a domain to one namespace; another is refused its names at
// admission and by the reconciler (DomainBound), the bound one is not.
func TestDomainBindingKeepsADomainToItsNamespaces(t *testing.T) {
	const domain = "bound.example.com"
	op := startOperator(t, 0)
	nsBound, nsOther := newNamespace(t, "bound"), newNamespace(t, "unbound")
	binding := &v1.DomainBinding{ObjectMeta: metav1.ObjectMeta{Name: "bound-example"},
		Spec: v1.DomainBindingSpec{Domain: domain, Namespaces: []string{nsBound}}}
	require.NoError(t, env.Client.Create(context.Background(), binding))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), binding) })

	testenv.RefusedAt(t, create(t, gateway(nsOther, "api", "api."+domain, "/")), "spec.routes[0].host", "bound to other namespaces")
	testenv.RefusedAt(t, create(t, gateway(nsOther, "wild", "*.example.com", "/")), "spec.routes[0].host", "bound to other namespaces")
	mine := gateway(nsBound, "api", "api."+domain, "/")
	require.Eventually(t, func() bool { return create(t, mine) == nil }, waitFor, tick, "the bound namespace is refused")
	awaitAccepted(t, mine, metav1.ConditionTrue, v1.ReasonAccepted)

	stored := gateway(nsOther, "web", "web."+domain, "/")
	outage(t, op, 0, func() { mustCreate(t, stored) })
	awaitAccepted(t, stored, metav1.ConditionFalse, v1.ReasonDomainBound)
}

// TestHostReleasedAfterTheGracePeriod (issue 40, item 1): the owner routes
// its host nowhere; its record says since when, and the host passes to the
// next claimant, a gateway stored while the owner held it, only after
// --host-release-after.
func TestHostReleasedAfterTheGracePeriod(t *testing.T) {
	const host = "release.example.com"
	const release = 3 * time.Second
	op := startOperator(t, release)
	nsA, nsB := newNamespace(t, "leaving"), newNamespace(t, "next")
	owner := gateway(nsA, "shop", host, "/")
	mustCreate(t, owner)
	awaitAccepted(t, owner, metav1.ConditionTrue, v1.ReasonAccepted)
	awaitRecord(t, host, nsA)
	next := gateway(nsB, "shop", host, "/")
	outage(t, op, release, func() { mustCreate(t, next) })
	awaitAccepted(t, next, metav1.ConditionFalse, v1.ReasonHostOwned)

	remove(t, owner)
	var since time.Time
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		rec := &v1.HostClaim{}
		err := env.Client.Get(context.Background(), client.ObjectKey{Name: v1.HostClaimName(host)}, rec)
		require.NoError(c, err, "the record went before it was marked unrouted")
		require.NotNil(c, rec.Status.UnroutedSince)
		since = rec.Status.UnroutedSince.Time
	}, waitFor, tick)
	awaitRecord(t, host, nsB)
	assert.GreaterOrEqual(t, time.Since(since), release, "released before the grace period")
	awaitAccepted(t, next, metav1.ConditionTrue, v1.ReasonAccepted)
}

// TestDomainBindingSample: the admins' sample applies as it is documented.
func TestDomainBindingSample(t *testing.T) {
	res := env.Kubectl(t.Context(), nil, "apply", "--dry-run=server", "-f", "../../manifests/samples/admin/domainbinding.yaml")
	require.NoError(t, res.Err, res.Stderr)
}
