package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/ownership"
)

// The controller suite installs no webhooks: conflicting gateways are
// admitted as they are while the operator's webhook is down, and the
// reconciler is all that stands between them.

// competitor is gateway(name, routes...) in ns, with the image and
// replicas the defaulting webhook, absent here, would have set.
func competitor(ns, name string, routes ...v1.Route) *v1.APIGateway {
	gw := gateway(name, routes...)
	gw.Namespace = ns
	gw.Spec.Image, gw.Spec.Replicas = testImage, ptr.To[int32](1)
	return gw
}

// served are the routes a gateway's children serve: each Ingress path as
// "host path pathType", and each backend its nginx configuration sends
// requests to.
type served struct {
	ingress  []string
	backends string // the rendered configuration
}

func servedBy(ctx context.Context, gw *v1.APIGateway) (served, error) {
	var s served
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: gw.Namespace, Name: gw.Name + "-config"}, cm); err != nil {
		return s, err
	}
	s.backends = cm.Data[configKey]
	ing := &networkingv1.Ingress{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(gw), ing); err != nil {
		return s, err
	}
	for _, r := range ing.Spec.Rules {
		for _, p := range r.HTTP.Paths {
			s.ingress = append(s.ingress, r.Host+" "+p.Path+" "+string(*p.PathType))
		}
	}
	return s, nil
}

// waitServing waits until gw's Ingress has exactly the paths want and its
// configuration sends requests to the Services backends and not to
// absent.
func waitServing(t *testing.T, gw *v1.APIGateway, want []string, backends, absent []string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s, err := servedBy(context.Background(), gw)
		require.NoError(c, err)
		assert.ElementsMatch(c, want, s.ingress, "Ingress of %s/%s", gw.Namespace, gw.Name)
		for _, b := range backends {
			assert.Contains(c, s.backends, `set $backend "`+b+".", "configuration of %s/%s", gw.Namespace, gw.Name)
		}
		for _, b := range absent {
			assert.NotContains(c, s.backends, `set $backend "`+b+".", "configuration of %s/%s", gw.Namespace, gw.Name)
		}
	}, waitFor, tick)
}

// TestFirstClaimOwnsTheHost: a host belongs to the namespace whose
// gateway claimed it first. Another namespace's gateway is refused every
// route on it, whatever the path (the same route, once normalised, or
// another one), pathType or ingress class, and its status and events
// never name the owner; gateways of the owner's namespace share the host
// freely. The host passes on only when the owner's namespace routes it no
// more.
func TestFirstClaimOwnsTheHost(t *testing.T) {
	op := startOperator(t)
	ctx := context.Background()
	nsA, nsB := newNamespace(t, "owner-a"), newNamespace(t, "owner-b")
	const host, other = "owned.example.com", "b-own.example.com"

	owner := createGateway(t, competitor(nsA, "shop",
		route(host, "/users", v1.PathTypePrefix, "users-a", 80),
		route(host, "/a-only", v1.PathTypePrefix, "only-a", 80)))
	settled(t, owner)
	// The sibling's class is installed, so that it routes the host
	// whatever IngressClasses other tests left (with none at all, every
	// class counts as routing; with some, only those).
	class := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "internal"}, Spec: networkingv1.IngressClassSpec{Controller: "example.com/test"}}
	if err := env.Client.Create(ctx, class); err == nil {
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	} else {
		require.True(t, apierrors.IsAlreadyExists(err), "%v", err)
	}
	sibling := competitor(nsA, "internal", route(host, "/users", v1.PathTypePrefix, "users-internal", 80))
	sibling.Spec.IngressClassName = ptr.To("internal")
	sibling = createGateway(t, sibling)
	// Its claim on the host is stamped when it is first reconciled: before
	// the taker's, as the test's premise says, only once it has been.
	settled(t, sibling)

	taker := createGateway(t, competitor(nsB, "shop",
		route(host, "/users/", v1.PathTypePrefix, "users-b", 80),      // the owner's route, once normalised
		route(host, "/users/admin", v1.PathTypePrefix, "admin-b", 80), // a longer prefix under it
		route(other, "/", v1.PathTypePrefix, "web-b", 80)))
	classed := competitor(nsB, "internal", route(host, "/login", v1.PathTypeExact, "login-b", 80))
	classed.Spec.IngressClassName = ptr.To("internal")
	classed = createGateway(t, classed)

	cur := waitCondition(t, taker, v1.ConditionAccepted, "False", v1.ReasonHostOwned)
	msg := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionAccepted).Message
	assert.Contains(t, msg, "spec.routes[0] ("+host+" Prefix /users/): host "+host+" belongs to another namespace")
	assert.Contains(t, msg, "spec.routes[1] ("+host+" Prefix /users/admin)")
	assert.NotContains(t, msg, "spec.routes[2]")
	assert.NotContains(t, msg, nsA, "the status names no other namespace")
	assert.NotContains(t, msg, "shop")
	waitServing(t, taker, []string{other + " / Prefix"}, []string{"web-b"}, []string{"users-b", "admin-b"})
	waitCondition(t, classed, v1.ConditionAccepted, "False", v1.ReasonHostOwned)
	waitServing(t, owner, []string{host + " /users Prefix", host + " /a-only Prefix"}, []string{"users-a", "only-a"}, nil)
	waitCondition(t, owner, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitCondition(t, sibling, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitServing(t, sibling, []string{host + " /users Prefix"}, []string{"users-internal"}, nil)
	lost := lostRoutes(t, taker)
	assert.Equal(t, []string{"Prefix " + host + "/users", "Prefix " + host + "/users/admin"}, lost, "the claims record what it lost")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		reasons, err := gatewayEvents(ctx, taker)
		require.NoError(c, err)
		assert.Contains(c, reasons, "Warning HostOwned: "+msg)
	}, waitFor, tick)

	// The loser is idle too: reconciling it again writes nothing, no
	// status and no second event.
	assertReconcilesWriteNothing(t, op, taker)

	// The owner's namespace still routes the host through its sibling.
	require.NoError(t, env.Client.Delete(ctx, owner))
	waitServing(t, sibling, []string{host + " /users Prefix"}, []string{"users-internal"}, nil)
	// The taker's status is rewritten once the reconciler has seen the
	// deletion: wait for that status, not the one from before it.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cur := &v1.APIGateway{}
		require.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(taker), cur))
		cond := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionAccepted)
		require.NotNil(c, cond)
		assert.Equal(c, v1.ReasonHostOwned, cond.Reason, "%s: %s", cond.Status, cond.Message)
		assert.Len(c, lostRoutes(t, cur), 2)
	}, waitFor, tick)

	require.NoError(t, env.Client.Delete(ctx, sibling))
	waitCondition(t, taker, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitServing(t, taker, []string{host + " /users Prefix", host + " /users/admin Prefix", other + " / Prefix"}, []string{"users-b", "admin-b", "web-b"}, nil)
	waitCondition(t, classed, v1.ConditionAccepted, "True", v1.ReasonAccepted)
}

// lostRoutes are the routes gw's claims record as lost.
func lostRoutes(t *testing.T, gw *v1.APIGateway) []string {
	t.Helper()
	cur := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(gw), cur))
	require.NotNil(t, cur.Status.Claims, "no claims")
	var out []string
	for _, r := range cur.Status.Claims.Routes {
		if r.Lost {
			out = append(out, r.Route)
		}
	}
	return out
}

// TestAClaimOutlivesTheGatewaysAge is the attack of a "sleeper": an old
// gateway of another namespace adds a route the victim already serves,
// while the webhook does not answer (none runs here). Oldest-gateway-wins
// gave it the route; the first claim does not, in Strict (the host is the
// victim's) and in InterNamespaceAllowed (the route is), and the verdict
// survives an operator restart.
func TestAClaimOutlivesTheGatewaysAge(t *testing.T) {
	for _, policy := range []ownership.Policy{ownership.Strict, ownership.InterNamespaceAllowed} {
		t.Run(string(policy), func(t *testing.T) {
			tune := func(o *Options) { o.Policy = policy }
			startOperator(t, tune)
			ctx := context.Background()
			nsS, nsV := newNamespace(t, "sleeper"), newNamespace(t, "victim")
			host := "victim-" + strings.ToLower(string(policy)) + ".example.com"

			sleeper := createGateway(t, competitor(nsS, "sleeper", route("sleeper-"+host, "/", v1.PathTypePrefix, "web-s", 80)))
			settled(t, sleeper)
			victim := createGateway(t, competitor(nsV, "shop", route(host, "/login", v1.PathTypePrefix, "login-v", 80)))
			settled(t, victim)
			require.True(t, sleeper.CreationTimestamp.Before(&victim.CreationTimestamp) || sleeper.CreationTimestamp.Equal(&victim.CreationTimestamp))

			require.NoError(t, env.Client.Patch(ctx, sleeper, client.RawPatch(types.MergePatchType, []byte(
				`{"spec":{"routes":[{"host":"sleeper-`+host+`","path":"/","pathType":"Prefix","backendService":{"name":"web-s","port":80}},`+
					`{"host":"`+host+`","path":"/login","pathType":"Prefix","backendService":{"name":"login-s","port":80}}]}}`))))
			want := v1.ReasonHostOwned
			if policy == ownership.InterNamespaceAllowed {
				want = v1.ReasonRouteConflict
			}
			waitCondition(t, sleeper, v1.ConditionAccepted, "False", want)
			waitServing(t, sleeper, []string{"sleeper-" + host + " / Prefix"}, []string{"web-s"}, []string{"login-s"})
			waitServing(t, victim, []string{host + " /login Prefix"}, []string{"login-v"}, nil)
			waitCondition(t, victim, v1.ConditionAccepted, "True", v1.ReasonAccepted)

			// A new operator reads the claims from the statuses and decides
			// the same.
			startOperator(t, tune)
			touch(t, sleeper)
			touch(t, victim)
			waitCondition(t, sleeper, v1.ConditionAccepted, "False", want)
			waitServing(t, victim, []string{host + " /login Prefix"}, []string{"login-v"}, nil)
		})
	}
}

// touch changes gw's labels, so that an operator reconciles it.
func touch(t *testing.T, gw *v1.APIGateway) {
	t.Helper()
	require.NoError(t, env.Client.Patch(context.Background(), gw, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"example.com/touched":"`+time.Now().Format("150405.000000")+`"}}}`))))
}

// TestDelegatedPrefixes: the owner of a host lends path prefixes to
// another namespace; that namespace's gateways serve under them and no
// further, and lose them when the owner takes the delegation back.
func TestDelegatedPrefixes(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	nsA, nsB := newNamespace(t, "lender"), newNamespace(t, "borrower")
	const host = "lend.example.com"

	owner := competitor(nsA, "shop", route(host, "/", v1.PathTypePrefix, "web-a", 80))
	owner.Spec.Delegations = []v1.HostDelegation{{Host: host, Namespace: nsB, PathPrefixes: []v1.HTTPPath{"/cart/"}}}
	owner = createGateway(t, owner)
	settled(t, owner)

	cart := createGateway(t, competitor(nsB, "cart",
		route(host, "/cart/items", v1.PathTypePrefix, "items-b", 80),
		route(host, "/cart", v1.PathTypeExact, "cart-b", 80),
		route(host, "/carts", v1.PathTypePrefix, "carts-b", 80)))
	cur := waitCondition(t, cart, v1.ConditionAccepted, "False", v1.ReasonHostOwned)
	assert.Equal(t, []string{"Prefix " + host + "/carts"}, lostRoutes(t, cur), "only the path outside the lent prefix")
	waitServing(t, cart, []string{host + " /cart/items Prefix", host + " /cart Exact"}, []string{"items-b", "cart-b"}, []string{"carts-b"})
	waitCondition(t, owner, v1.ConditionAccepted, "True", v1.ReasonAccepted)

	require.NoError(t, env.Client.Patch(ctx, owner, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"delegations":null}}`))))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cur := &v1.APIGateway{}
		require.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(cart), cur))
		require.NotNil(c, cur.Status.Claims)
		lost := 0
		for _, r := range cur.Status.Claims.Routes {
			if r.Lost {
				lost++
			}
		}
		assert.Equal(c, 3, lost, "every route once the delegation is gone")
	}, waitFor, tick)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(cart), &networkingv1.Ingress{})
		assert.True(c, apierrors.IsNotFound(err), "the borrower's Ingress is still there: %v", err)
	}, waitFor, tick)
}

// TestWildcardsAndClasses: a wildcard claims the names below it, a
// public-suffix wildcard claims nothing, and an ingress class that does
// not exist routes nothing, so its gateway holds nothing and blocks no
// one; once the class exists, the first claim decides.
func TestWildcardsAndClasses(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	nsA, nsB, nsC := newNamespace(t, "wild-a"), newNamespace(t, "wild-b"), newNamespace(t, "wild-c")

	wildcard := createGateway(t, competitor(nsA, "all", route("*.wild.example.com", "/", v1.PathTypePrefix, "all-a", 80)))
	settled(t, wildcard)
	under := createGateway(t, competitor(nsB, "shop",
		route("shop.wild.example.com", "/", v1.PathTypePrefix, "shop-b", 80),
		route("deeper.shop.wild.example.com", "/", v1.PathTypePrefix, "deep-b", 80)))
	cur := waitCondition(t, under, v1.ConditionAccepted, "False", v1.ReasonHostOwned)
	assert.Equal(t, []string{"Prefix shop.wild.example.com/", "Prefix deeper.shop.wild.example.com/"}, lostRoutes(t, cur),
		"a wildcard's owner owns every name below it, however deep (validation.Covers)")

	suffix := createGateway(t, competitor(nsC, "suffix", route("*.co.uk", "/", v1.PathTypePrefix, "uk-c", 80)))
	waitCondition(t, suffix, v1.ConditionDegraded, "True", ReasonInvalidRoutes)

	squat := competitor(nsB, "squat", route("class.example.com", "/", v1.PathTypePrefix, "squat-b", 80))
	squat.Spec.IngressClassName = ptr.To("not-installed-yet")
	squat = createGateway(t, squat)
	settled(t, squat)
	real := createGateway(t, competitor(nsA, "real", route("class.example.com", "/", v1.PathTypePrefix, "real-a", 80)))
	waitCondition(t, real, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitServing(t, real, []string{"class.example.com / Prefix"}, []string{"real-a"}, nil)
	waitCondition(t, squat, v1.ConditionAccepted, "False", v1.ReasonHostOwned)

	class := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "not-installed-yet"}, Spec: networkingv1.IngressClassSpec{Controller: "example.com/test"}}
	require.NoError(t, env.Client.Create(ctx, class))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	waitRouting(t, squat, true, "the class exists: the squatter routes now")
	waitCondition(t, squat, v1.ConditionAccepted, "False", v1.ReasonHostOwned)
	waitCondition(t, real, v1.ConditionAccepted, "True", v1.ReasonAccepted)
}

// TestGatewayThatLosesEveryRouteHasNoIngress: an Ingress without rules is
// refused by the API server, and one with only a default backend would
// take every request of its class; so a gateway that other gateways beat
// on every route has no Ingress (its existing one is deleted), while its
// Deployment and Service stay to take the routes back.
func TestGatewayThatLosesEveryRouteHasNoIngress(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	// One namespace: the routes compete, not the host.
	nsA := newNamespace(t, "lose-all")
	nsB := nsA
	const host = "lose-all.example.com"

	holder := createGateway(t, competitor(nsA, "holder", route(host, "/", v1.PathTypePrefix, "web-a", 80)))
	settled(t, holder)

	loser := createGateway(t, competitor(nsB, "loser", route(host, "/mine", v1.PathTypeExact, "web-b", 80)))
	_, ch := settled(t, loser)
	assertControlledBy(t, &ch.ing, loser)

	// Now it asks only for the holder's route (and a certificate for it).
	require.NoError(t, env.Client.Patch(ctx, loser, client.RawPatch(types.MergePatchType, []byte(
		`{"spec":{"routes":[{"host":"`+host+`","path":"/","pathType":"Prefix","backendService":{"name":"web-b","port":80}}],`+
			`"tls":[{"hosts":["`+host+`"],"secretName":"tls-b"}]}}`))))
	waitCondition(t, loser, v1.ConditionAccepted, "False", v1.ReasonRouteConflict)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(loser), &networkingv1.Ingress{})
		assert.True(c, apierrors.IsNotFound(err), "the Ingress is still there: %v", err)
	}, waitFor, tick)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cm := &corev1.ConfigMap{}
		require.NoError(c, env.Client.Get(ctx, client.ObjectKey{Namespace: nsB, Name: "loser-config"}, cm))
		assert.NotContains(c, cm.Data[configKey], "web-b")
	}, waitFor, tick)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(loser), &appsv1.Deployment{}))
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(loser), &corev1.Service{}))
	cur := waitCondition(t, loser, v1.ConditionDegraded, "False", ReasonChildrenApplied)
	assert.Equal(t, cur.Generation, cur.Status.ObservedGeneration)

	// The holder drops the route: the loser takes it, certificate and all.
	require.NoError(t, env.Client.Patch(ctx, holder, client.RawPatch(types.MergePatchType, []byte(
		`{"spec":{"routes":[{"host":"`+host+`","path":"/elsewhere","pathType":"Prefix","backendService":{"name":"web-a","port":80}}]}}`))))
	waitCondition(t, loser, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitServing(t, loser, []string{host + " / Prefix"}, []string{"web-b"}, nil)
	ing := &networkingv1.Ingress{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(loser), ing))
	require.Len(t, ing.Spec.TLS, 1)
	assert.Equal(t, "tls-b", ing.Spec.TLS[0].SecretName)
}

// assertReconcilesWriteNothing makes the reconciler run gw again twice,
// by touching its Service in a way that changes nothing the operator
// owns, and checks the manager wrote nothing meanwhile.
func assertReconcilesWriteNothing(t *testing.T, op *operator, gw *v1.APIGateway) {
	t.Helper()
	ctx := context.Background()
	name := gw.Namespace + "/" + gw.Name
	// Let the writes of the start-up settle: wait for one second without any.
	require.Eventually(t, func() bool {
		n := len(op.writes.snapshot())
		time.Sleep(time.Second)
		return len(op.writes.snapshot()) == n
	}, waitFor, tick, "the operator kept writing: %v", op.writes.snapshot())
	start := len(op.writes.snapshot())
	before := op.reconcileCount(name)
	for i := range 2 {
		svc := &corev1.Service{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), svc))
		patch := []byte(`{"metadata":{"labels":{"example.com/touched":"` + strings.Repeat("x", i+1) + `"}}}`)
		require.NoError(t, env.Client.Patch(ctx, svc, client.RawPatch(types.MergePatchType, patch)))
		require.Eventually(t, func() bool { return op.reconcileCount(name) >= before+i+1 }, waitFor, tick,
			"touching the Service did not reconcile %s", name)
	}
	// A write a reconcile makes is sent before the reconcile returns, and
	// the count is taken as it starts: wait for one more quiet second.
	time.Sleep(time.Second)
	assert.Empty(t, op.writes.snapshot()[start:], "reconciling %s again wrote", name)
}
