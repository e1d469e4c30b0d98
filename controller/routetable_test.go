package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/offline"
)

// The routes command's table (package offline) held to what the reconciler
// decided. It lived in test/routetable while offline's admission imported
// the controller for the renderer; admission now imports package render,
// so the controller's own tests can read the table.

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
	const host = "route-table.example.com"
	route := func(path, svc string, port int32) v1.Route { return route(host, path, v1.PathTypePrefix, svc, port) }
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
