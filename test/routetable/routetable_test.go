// Package routetable holds the routes command's table to what the operator
// decided. It is a package of its own because the table (offline) needs
// admission, which needs the renderer: the controller's own tests cannot
// import it.
package routetable

import (
	"context"
	"strings"
	"testing"

	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/offline"
	"example.com/apigateway-operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

const (
	testImage = "nginx:1.27"
	waitFor   = 30 * time.Second
	tick      = 100 * time.Millisecond
)

// startOperator runs the reconciler as main wires it until the test ends.
func startOperator(t *testing.T) {
	t.Helper()
	opts := env.ManagerOptions()
	opts.Cache = controller.CacheOptions()
	mgr, err := ctrl.NewManager(env.Config, opts)
	require.NoError(t, err)
	require.NoError(t, controller.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 2,
		DefaultImage: testImage, ReloaderImage: testImage}))
	env.StartManager(t, mgr)
}

func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	require.NoError(t, env.Client.Create(context.Background(), ns))
	return ns.Name
}

// host is the one host the test's gateways route.
const host = "route-table.example.com"

// route is a Prefix route on host.
func route(path, svc string, port int32) v1.Route {
	return v1.Route{Host: host, Path: v1.HTTPPath(path), PathType: v1.PathTypePrefix,
		BackendService: v1.BackendService{Name: v1.ServiceName(svc), Port: v1.PortNumber(port)}}
}

// competitor is a gateway in ns that the schema admits without defaults.
func competitor(ns, name string, routes ...v1.Route) *v1.APIGateway {
	return &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.APIGatewaySpec{Image: testImage, Replicas: ptr.To[int32](1), Routes: routes}}
}

func createGateway(t *testing.T, gw *v1.APIGateway) *v1.APIGateway {
	t.Helper()
	require.NoError(t, env.Client.Create(context.Background(), gw))
	return gw
}

func waitCondition(t *testing.T, gw *v1.APIGateway, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cur := &v1.APIGateway{}
		require.NoError(c, env.Client.Get(context.Background(), client.ObjectKeyFromObject(gw), cur))
		cond := meta.FindStatusCondition(cur.Status.Conditions, typ)
		require.NotNil(c, cond, "no %s condition", typ)
		assert.Equal(c, status, cond.Status)
		assert.Equal(c, reason, cond.Reason, "message: %s", cond.Message)
	}, waitFor, tick)
}

func waitObserved(t *testing.T, gw *v1.APIGateway) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cur := &v1.APIGateway{}
		require.NoError(c, env.Client.Get(context.Background(), client.ObjectKeyFromObject(gw), cur))
		assert.Equal(c, cur.Generation, cur.Status.ObservedGeneration, "status not yet written for this generation")
	}, waitFor, tick)
}

// TestRouteTableAgreesWithTheOperator: the routes command's table of a
// cluster (offline.ClusterRoutes through a kubeconfig, then
// offline.Routes) says of every route what the operator decided and
// recorded (the lost flags of status.claims), names the holders, and so
// does its table of the same gateways written out by kubectl get -o yaml.
// The gateway that claimed the contested route first sorts last by name,
// so a table that ignored the claims would name the other.
func TestRouteTableAgreesWithTheOperator(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns, other := newNamespace(t, "routes-owner"), newNamespace(t, "routes-other")

	first := createGateway(t, competitor(ns, "zz-first",
		route("/users", "users", 8080), route("/a", "a", 80)))
	waitCondition(t, first, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	second := createGateway(t, competitor(ns, "aa-second",
		route("/users/", "users-v2", 8080), route("/b", "b", 80)))
	squatter := createGateway(t, competitor(other, "squatter", route("/x", "x", 80)))
	waitCondition(t, second, v1.ConditionAccepted, "False", v1.ReasonRouteConflict)
	waitCondition(t, squatter, v1.ConditionAccepted, "False", v1.ReasonHostOwned)
	for _, gw := range []*v1.APIGateway{first, second, squatter} {
		waitObserved(t, gw)
	}

	want := []string{
		host + " /a Prefix " + ns + "/zz-first served=true",
		host + " /b Prefix " + ns + "/aa-second served=true",
		host + " /users Prefix " + ns + "/zz-first served=true contested by " + ns + "/aa-second",
		host + " /users/ Prefix " + ns + "/aa-second served=false held by " + ns + "/zz-first (RouteConflict)",
		host + " /x Prefix " + other + "/squatter served=false held by " + ns + "/zz-first (HostOwned)",
	}
	gws, classes, warnings, err := offline.ClusterRoutes(ctx, env.Kubeconfig, "")
	require.NoError(t, err)
	assert.Empty(t, warnings)
	rows := offline.Routes(gws, offline.RouteOptions{Classes: classes})
	assert.Equal(t, want, tableOf(rows, host), "the cluster's table")
	assertRowsAgreeWithClaims(t, rows, host)

	res := env.Kubectl(ctx, nil, "get", "agw", "-A", "-o", "yaml")
	require.NoError(t, res.Err, res.Stderr)
	docs, err := offline.Parse("-", []byte(res.Stdout))
	require.NoError(t, err)
	checker, err := offline.NewChecker()
	require.NoError(t, err)
	report := checker.Validate(ctx, docs, offline.Options{Defaults: defaults.Operator{Image: testImage, Replicas: 1}, EachAlone: true, KeepStatus: true})
	var exported []v1.APIGateway
	for _, o := range report.Objects {
		require.True(t, o.Valid, "%s/%s: %+v", o.Namespace, o.Name, o.Errors)
		exported = append(exported, *o.Gateway)
	}
	assert.Equal(t, want, tableOf(offline.Routes(exported, offline.RouteOptions{}), host), "the table of kubectl get -o yaml")
}

// tableOf is the rows of host as "host path type gateway verdict".
func tableOf(rows []offline.RouteRow, host string) []string {
	var out []string
	for _, r := range rows {
		if r.Host != host {
			continue
		}
		s := r.Host + " " + r.Path + " " + string(r.PathType) + " " + r.Gateway
		switch {
		case !r.Served:
			s += " served=false held by " + r.HeldBy + " (" + r.Reason + ")"
		case len(r.ContestedBy) > 0:
			s += " served=true contested by " + strings.Join(r.ContestedBy, ", ")
		default:
			s += " served=true"
		}
		out = append(out, s)
	}
	return out
}

// assertRowsAgreeWithClaims: each row of host is served exactly when its
// gateway's recorded claim on it is not lost.
func assertRowsAgreeWithClaims(t *testing.T, rows []offline.RouteRow, host string) {
	t.Helper()
	for _, r := range rows {
		if r.Host != host {
			continue
		}
		ns, name, _ := strings.Cut(r.Gateway, "/")
		gw := &v1.APIGateway{}
		require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, gw))
		match, ok := validation.RouteMatch(&gw.Spec.Routes[r.Index])
		require.True(t, ok)
		require.NotNil(t, gw.Status.Claims, r.Gateway)
		found := false
		for _, c := range gw.Status.Claims.Routes {
			if c.Route == match {
				found = true
				assert.Equal(t, !c.Lost, r.Served, "%s %s: the operator recorded lost=%v", r.Gateway, match, c.Lost)
			}
		}
		assert.True(t, found, "%s has no claim on %s", r.Gateway, match)
	}
}
