package faults

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/testenv"
)

// readVerbs are the verbs of every read; with writeVerbs, every verb.
var readVerbs = []string{"get", "list", "watch"}

// TestNamespacedModeWithHostClaims installs the chart as a platform team
// runs namespaced mode (docs/platform.md: watchNamespaces=[team-a,
// team-b], so the ServiceAccount holds Roles in those namespaces and the
// ClusterRole's cluster-scoped rules only) and runs the operator binary as
// that ServiceAccount with the Deployment's arguments. A gateway in team-a
// is reconciled and its host recorded in a HostClaim, and the webhook
// warns of a missing port on a Service of team-a; team-b is refused
// the host at admission, and a gateway team-b stored while the operator
// was down loses it (HostOwned); a gateway in team-c, which is not
// watched, passes admission unchecked (the webhooks' namespaceSelector)
// and is left alone, by its status and children and by the audit log,
// which holds no request of the operator in team-c. Neither the
// operator's log nor the audit log shows a request refused for want of a
// permission.
func TestNamespacedModeWithHostClaims(t *testing.T) {
	const teamA, teamB, teamC = "team-a", "team-b", "team-c"
	c := startCluster(t, clusterOptions{audit: slices.Concat(readVerbs, writeVerbs), watchNamespaces: []string{teamA, teamB}})
	args := c.managerArgs(t)
	require.Contains(t, args, "--watch-namespaces=team-a,team-b")
	run := func() *operator {
		return c.startOperator(t, operatorOptions{user: operatorUser, webhookPort: c.webhookPort, args: args})
	}
	op := run()
	require.NoError(t, c.client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamC}}))

	owner := onHost(gateway(teamA, "shop", 1, "/"))
	require.NoError(t, c.client.Create(t.Context(), owner))
	c.awaitConverged(t, []client.ObjectKey{client.ObjectKeyFromObject(owner)})
	accepted := testenv.AwaitCondition(t, c.client, client.ObjectKeyFromObject(owner),
		testenv.Condition{Type: v1.ConditionAccepted, Status: metav1.ConditionTrue, Reason: v1.ReasonAccepted, Current: true}, waitFor)
	// No node runs the gateway's pods here: Ready says so, for this
	// generation.
	ready := meta.FindStatusCondition(accepted.Status.Conditions, v1.ConditionReady)
	require.NotNil(t, ready, "no Ready condition")
	assert.Equal(t, accepted.Generation, ready.ObservedGeneration)
	t.Logf("%s/%s: Ready=%s %s: %s", teamA, owner.Name, ready.Status, ready.Reason, ready.Message)
	claim := c.awaitClaim(t, host, teamA)
	c.awaitPortWarning(t, teamA)

	err := c.client.Create(t.Context(), onHost(gateway(teamB, "shop", 1, "/")))
	testenv.RefusedAt(t, err, "spec.routes[0].host", "belongs to namespace "+teamA)

	// The same spec in a namespace the operator does not watch: no
	// webhook sees it, and the operator leaves it alone.
	unwatched := onHost(gateway(teamC, "shop", 1, "/"))
	require.NoError(t, c.client.Create(t.Context(), unwatched), "admitted: the webhooks' namespaceSelector leaves team-c out")

	c.assertNoDenials(t, op)
	require.NoError(t, c.cp.StopProcess(t.Context(), op.Process))
	// The webhooks fail open while the operator is down.
	stored := onHost(gateway(teamB, "stored", 1, "/"))
	require.NoError(t, c.client.Create(t.Context(), stored))
	op = run()
	testenv.AwaitCondition(t, c.client, client.ObjectKeyFromObject(stored),
		testenv.Condition{Type: v1.ConditionAccepted, Status: metav1.ConditionFalse, Reason: v1.ReasonHostOwned, Current: true}, waitFor)
	testenv.AwaitCondition(t, c.client, client.ObjectKeyFromObject(owner),
		testenv.Condition{Type: v1.ConditionAccepted, Status: metav1.ConditionTrue, Reason: v1.ReasonAccepted, Current: true}, waitFor)

	// By now the restarted operator has listed and decided every gateway
	// it watches.
	assert.Equal(t, claim.UID, c.awaitClaim(t, host, teamA).UID, "team-a's HostClaim stays")
	got := &v1.APIGateway{}
	require.NoError(t, c.client.Get(t.Context(), client.ObjectKeyFromObject(unwatched), got))
	assert.Empty(t, got.Status.Conditions, "the operator wrote team-c's status")
	assert.Zero(t, got.Status.ObservedGeneration, "the operator wrote team-c's status")
	assert.Empty(t, c.controlledBy(t, got), "team-c's gateway has children")

	c.assertNoDenials(t, op)
	var inTeamC []request
	for _, r := range by(readRequests(t, c.auditLog), operatorUser) {
		if r.ObjectRef.Namespace == teamC {
			inTeamC = append(inTeamC, r)
		}
	}
	assert.Empty(t, inTeamC, "the operator's requests in team-c:%s", describe(inTeamC))
}

// host is the host every namespace asks for.
const host = "shop.example.com"

// onHost moves every route of gw to host.
func onHost(gw *v1.APIGateway) *v1.APIGateway {
	for i := range gw.Spec.Routes {
		gw.Spec.Routes[i].Host = host
	}
	return gw
}

// controlledBy lists the objects of the kinds of a gateway's children in
// gw's namespace that gw controls.
func (c *cluster) controlledBy(t *testing.T, gw *v1.APIGateway) []string {
	t.Helper()
	var out []string
	for _, list := range []client.ObjectList{&corev1.ConfigMapList{}, &appsv1.DeploymentList{}, &corev1.ServiceList{}, &networkingv1.IngressList{}} {
		require.NoError(t, c.client.List(t.Context(), list, client.InNamespace(gw.Namespace)))
		require.NoError(t, meta.EachListItem(list, func(o runtime.Object) error {
			if obj := o.(client.Object); metav1.IsControlledBy(obj, gw) {
				out = append(out, fmt.Sprintf("%T %s", obj, obj.GetName()))
			}
			return nil
		}))
	}
	return out
}

// awaitPortWarning creates the Service the gateways route to in ns,
// without their port, and waits until the validating webhook warns of it
// (its Service cache lists the watched namespaces).
func (c *cluster) awaitPortWarning(t *testing.T, ns string) {
	t.Helper()
	require.NoError(t, c.client.Create(t.Context(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backend"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}))
	w := &warnings{}
	cfg := rest.CopyConfig(c.cfg)
	cfg.WarningHandler = w
	warned, err := client.New(cfg, client.Options{Scheme: testenv.NewScheme()})
	require.NoError(t, err)
	const want = `Service "backend" has no port 8080 (its ports: 80)`
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		require.NoError(ct, warned.Create(t.Context(), gateway(ns, "ports", 1, "/"), client.DryRunAll))
		got := w.take()
		assert.True(ct, slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, want) }), "warnings: %q", got)
	}, waitFor, 250*time.Millisecond)
}

// warnings collects the API server's warnings to a client.
type warnings struct {
	mu    sync.Mutex
	texts []string
}

func (w *warnings) HandleWarningHeader(_ int, _, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.texts = append(w.texts, text)
}

// take returns the warnings so far, and forgets them.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.texts
	w.texts = nil
	return out
}

// awaitClaim waits until host's HostClaim names namespace, and returns it.
func (c *cluster) awaitClaim(t *testing.T, host, namespace string) *v1.HostClaim {
	t.Helper()
	claim := &v1.HostClaim{}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		require.NoError(ct, c.client.Get(t.Context(), client.ObjectKey{Name: v1.HostClaimName(host)}, claim))
		assert.Equal(ct, namespace, claim.Spec.Namespace)
	}, waitFor, tick, "the HostClaim of %s", host)
	return claim
}

// assertNoDenials asserts that neither op's log nor the audit log so far
// shows a request of the operator that the API server refused for want of
// a permission (403 Forbidden).
func (c *cluster) assertNoDenials(t *testing.T, op *operator) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(op.log(t), "\n") {
		if strings.Contains(strings.ToLower(l), "forbidden") {
			lines = append(lines, l)
		}
	}
	assert.Empty(t, lines, "%s logged refusals", op.user)
	var denied []request
	for _, r := range by(readRequests(t, c.auditLog), op.user) {
		if r.ResponseStatus.Code == http.StatusForbidden {
			denied = append(denied, r)
		}
	}
	assert.Empty(t, denied, "requests of %s refused:%s", op.user, describe(denied))
}
