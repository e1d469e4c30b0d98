package charts

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"

	"example.com/apigateway-operator/ownership"
	nginxrender "example.com/apigateway-operator/render"
)

// grant is one verb on one resource (or subresource), by name when the
// rule names some.
type grant struct {
	group, resource, verb, name string
}

// grants flattens PolicyRules.
func grants(t *testing.T, rules []any) []grant {
	t.Helper()
	var out []grant
	for _, r := range rules {
		rule := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
		names, _, _ := unstructured.NestedStringSlice(rule, "resourceNames")
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range groups {
			for _, res := range resources {
				for _, v := range verbs {
					for _, n := range names {
						out = append(out, grant{g, res, v, n})
					}
				}
			}
		}
	}
	return out
}

func rulesOf(t *testing.T, objs map[string]*unstructured.Unstructured, key string) []any {
	t.Helper()
	require.Contains(t, objs, key)
	rules, _, err := unstructured.NestedSlice(objs[key].Object, "rules")
	require.NoError(t, err)
	return rules
}

// scopeOf is the test's view of scopes: what the chart's overlays and
// builtinNamespaced say, which TestScopesMatchDiscovery holds to the API
// server. It reports whether a grant's resource is namespaced.
func scopeOf(t *testing.T) func(grant) bool {
	t.Helper()
	data, err := kustomize("default")
	require.NoError(t, err)
	m := scopes(objects(t, string(data)))
	return func(g grant) bool {
		t.Helper()
		base, _, _ := strings.Cut(g.resource, "/")
		ns, ok := m[schema.GroupResource{Group: g.group, Resource: base}]
		require.True(t, ok, "no scope for %+v", g)
		return ns
	}
}

const clusterRole = "ClusterRole//apigateway-operator"

// TestNamespacedMode renders watchNamespaces=[team-a, team-b] and checks
// what a cluster admin reviewing the install would: the ClusterRole keeps
// no namespaced grant, each namespace gets exactly the cluster mode's
// namespaced grants, bound to the operator's ServiceAccount, and the
// webhooks and the flag name the two namespaces.
func TestNamespacedMode(t *testing.T) {
	cluster := byKey(objects(t, helmTemplate(t)))
	objs := byKey(objects(t, helmTemplate(t, "watchNamespaces={team-a,team-b}")))

	namespacedScope := scopeOf(t)
	var wantCluster, wantLocal []grant
	for _, g := range grants(t, rulesOf(t, cluster, clusterRole)) {
		if namespacedScope(g) {
			wantLocal = append(wantLocal, g)
		} else {
			wantCluster = append(wantCluster, g)
		}
	}
	require.NotEmpty(t, wantLocal)
	require.NotEmpty(t, wantCluster)
	assert.ElementsMatch(t, wantCluster, grants(t, rulesOf(t, objs, clusterRole)), "the ClusterRole keeps its cluster-scoped grants only")
	assert.Contains(t, wantLocal, grant{"apps", "deployments", "create", ""})

	for _, ns := range []string{"team-a", "team-b"} {
		assert.ElementsMatch(t, wantLocal, grants(t, rulesOf(t, objs, "Role/"+ns+"/"+WatchedRole)), ns)
		rb := objs["RoleBinding/"+ns+"/"+WatchedRole]
		require.NotNil(t, rb, ns)
		assert.Equal(t, map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": WatchedRole}, rb.Object["roleRef"])
		assert.Equal(t, []any{map[string]any{"kind": "ServiceAccount", "name": "apigateway-operator", "namespace": release}}, rb.Object["subjects"])
	}
	assert.Equal(t, grants(t, rulesOf(t, cluster, "Role/"+release+"/apigateway-operator")),
		grants(t, rulesOf(t, objs, "Role/"+release+"/apigateway-operator")), "the release namespace's own Role is the same in both modes")

	selector := map[string]any{"matchExpressions": []any{map[string]any{
		"key": "kubernetes.io/metadata.name", "operator": "In", "values": []any{"team-a", "team-b"}}}}
	for _, k := range []string{
		"MutatingWebhookConfiguration//apigateway-operator-mutating-webhook-configuration",
		"ValidatingWebhookConfiguration//apigateway-operator-validating-webhook-configuration",
	} {
		hooks, _, _ := unstructured.NestedSlice(objs[k].Object, "webhooks")
		require.NotEmpty(t, hooks, k)
		for _, h := range hooks {
			assert.Equal(t, selector, h.(map[string]any)["namespaceSelector"], k)
		}
		hooks, _, _ = unstructured.NestedSlice(cluster[k].Object, "webhooks")
		for _, h := range hooks {
			assert.NotContains(t, h, "namespaceSelector", "cluster mode: %s sees every namespace", k)
		}
	}
	assert.Contains(t, managerOf(t, objs)["args"], "--watch-namespaces=team-a,team-b")
	for _, a := range managerOf(t, cluster)["args"].([]any) {
		assert.NotContains(t, a, flagWatch)
	}
	assert.NotContains(t, cluster, "Role/team-a/"+WatchedRole)
}

// TestScopesMatchDiscovery holds builtinNamespaced to the real API server
// (Gateway API's CRDs installed): a wrong entry would put a cluster-scoped
// grant in a Role, where it grants nothing, or keep a namespaced one
// cluster-wide.
func TestScopesMatchDiscovery(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	require.NoError(t, err)
	lists, err := dc.ServerPreferredResources()
	require.NoError(t, err)
	served := map[schema.GroupResource]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		require.NoError(t, err)
		for _, r := range l.APIResources {
			served[schema.GroupResource{Group: gv.Group, Resource: r.Name}] = r.Namespaced
		}
	}
	data, err := kustomize("default")
	require.NoError(t, err)
	for gr, want := range scopes(objects(t, string(data))) {
		got, ok := served[gr]
		if assert.True(t, ok, "the API server serves no %s", gr) {
			assert.Equal(t, want, got, "%s namespaced", gr)
		}
	}
}

// TestNamespacedModeRBAC applies namespaced mode's RBAC to the real API
// server and asks it (SubjectAccessReview) what the operator's
// ServiceAccount may do: every grant of cluster mode in the watched
// namespace, none of the namespaced ones in another namespace or in
// kube-system, the cluster-scoped ones still, and the defaults parameter
// ConfigMap in its own namespace.
func TestNamespacedModeRBAC(t *testing.T) {
	createNamespace(t)
	for _, ns := range []string{"team-a", "team-b"} {
		res := env.Kubectl(t.Context(), nil, "create", "namespace", ns)
		require.NoError(t, res.Err)
		t.Cleanup(func() { env.Kubectl(t.Context(), nil, "delete", "namespace", ns, "--wait=false") })
	}
	rendered := helmTemplate(t, "watchNamespaces={team-a}")
	res := env.Kubectl(t.Context(), strings.NewReader(rendered), "apply", "--dry-run=server", "-f", "-")
	require.NoError(t, res.Err, "the whole namespaced install passes the API server's validation")
	var rbac strings.Builder
	for _, o := range objects(t, rendered) {
		if strings.HasPrefix(o.GetAPIVersion(), "rbac.authorization.k8s.io/") {
			data, err := json.Marshal(o.Object)
			require.NoError(t, err)
			rbac.WriteString(string(data) + "\n")
		}
	}
	res = env.Kubectl(t.Context(), strings.NewReader(rbac.String()), "apply", "-f", "-")
	require.NoError(t, res.Err)
	t.Cleanup(func() {
		// The release's install tests own these names through Helm.
		env.Kubectl(t.Context(), strings.NewReader(rbac.String()), "delete", "-f", "-", "--ignore-not-found")
	})

	can := func(g grant, ns string) bool {
		t.Helper()
		resource, sub, _ := strings.Cut(g.resource, "/")
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + release + ":apigateway-operator",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + release, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: g.verb, Group: g.group, Resource: resource, Subresource: sub, Name: g.name,
			},
		}}
		require.NoError(t, env.Client.Create(t.Context(), sar))
		return sar.Status.Allowed
	}
	cluster := byKey(objects(t, helmTemplate(t)))
	all := grants(t, rulesOf(t, cluster, clusterRole))
	// RBAC authorizes from its informers: wait (bounded) for them to see
	// the bindings just applied.
	deploy := grant{"apps", "deployments", "create", ""}
	require.Eventually(t, func() bool { return can(deploy, "team-a") }, 30*time.Second, 100*time.Millisecond)

	// What the release namespace's own Role grants (reading its own pod,
	// say) is the operator's there whatever it watches.
	own := map[grant]bool{}
	for _, g := range grants(t, rulesOf(t, cluster, "Role/"+release+"/apigateway-operator")) {
		own[g] = true
	}
	namespacedScope := scopeOf(t)
	for _, g := range all {
		if namespacedScope(g) {
			assert.True(t, can(g, "team-a"), "%+v in the watched namespace", g)
			for _, ns := range []string{"team-b", "kube-system", release} {
				if ns != release || !own[g] {
					assert.False(t, can(g, ns), "%+v in %s", g, ns)
				}
			}
		} else {
			assert.True(t, can(g, ""), "%+v cluster-wide", g)
		}
	}
	for _, verb := range []string{"get", "patch"} {
		assert.True(t, can(grant{"", "configmaps", verb, "apigateway-operator-defaults"}, release), "%s the defaults parameters", verb)
		assert.False(t, can(grant{"", "configmaps", verb, "other"}, release), "%s another ConfigMap of its namespace", verb)
	}
}

// TestSchemaRefusesBadOperatorValues: a typo fails helm, naming the value,
// rather than the operator's start.
func TestSchemaRefusesBadOperatorValues(t *testing.T) {
	for set, want := range map[string]string{
		"namespaceOwnership=strict":              "/namespaceOwnership",
		"namespaceOwnership=":                    "/namespaceOwnership",
		"gatewayTrustedProxies={10.0.0.0/33}":    "/gatewayTrustedProxies/0",
		"gatewayTrustedProxies={10.0.0.1,proxy}": "/gatewayTrustedProxies/1",
		"watchNamespaces={Team_A}":               "/watchNamespaces/0",
		"watchNamespaces={team-a,team-a}":        "/watchNamespaces",
		"watchNamespaces={team-a,kube-system/x}": "/watchNamespaces/1",
		"watchNamespaces=team-a":                 "/watchNamespaces",
		"gatewayTrustedProxies=10.0.0.0/8":       "/gatewayTrustedProxies",
	} {
		_, err := helm(t, "template", "apigateway-operator", chartDir(), "--set", set)
		if assert.Error(t, err, set) {
			assert.Contains(t, err.Error(), "at '"+want+"'", set)
		}
	}
}

// TestSchemaNoLooserThanOperator: whatever the schema accepts for a
// trusted proxy or a watched namespace the operator's own checks accept
// too, so an install that passes helm does not crash-loop on its flags;
// and the common forms pass. The schema cannot call Go, so this holds the
// copy to the original.
func TestSchemaNoLooserThanOperator(t *testing.T) {
	accepted := func(value, item string) bool {
		_, err := helm(t, "template", "apigateway-operator", chartDir(), "--show-only", "templates/serviceaccount-apigateway-operator.yaml",
			"--set-json", fmt.Sprintf("%s=[%q]", value, item))
		return err == nil
	}
	proxies := map[string]bool{ // item: a common form, which must pass
		"10.0.0.1": true, "10.0.0.0/8": true, "192.168.1.0/24": true, "0.0.0.0/0": true, "10.0.0.1/32": true,
		"fd00::/8": true, "::1": true, "2001:db8::1": true, "2001:db8:0:0:0:0:0:1/128": true, "::/0": true, "fe80::/10": true,
		"10.0.0.0/33": false, "10.0.0.256": false, "10.0.0.0/": false, "010.0.0.1": false, "10.0.0.0/8/8": false,
		"fd00:::/8": false, "fd00::/129": false, "fe80::1%eth0": false, "10.0.0.0/-1": false, "": false, "10.0.0.0 /8": false,
		"::ffff:10.0.0.1": false, "1:2:3:4:5:6:7:8:9/64": false, "proxy.example": false,
	}
	for item, common := range proxies {
		_, goErr := nginxrender.TrustedProxies([]string{item})
		if accepted("gatewayTrustedProxies", item) {
			assert.NoError(t, goErr, "the schema accepts trusted proxy %q, the operator refuses it", item)
		} else {
			assert.False(t, common, "the schema refuses the common trusted proxy %q", item)
		}
	}
	namespaces := map[string]bool{
		"team-a": true, "a": true, "0team": true, strings.Repeat("a", 63): true,
		strings.Repeat("a", 64): false, "Team": false, "team_a": false, "-team": false, "team-": false, "team.a": false, "": false,
	}
	for item, common := range namespaces {
		if accepted("watchNamespaces", item) {
			assert.Empty(t, validation.IsDNS1123Label(item), "the schema accepts namespace %q, the operator refuses it", item)
		} else {
			assert.False(t, common, "the schema refuses the namespace %q", item)
		}
	}
}

// TestOwnershipValues holds the schema's enum to the operator's policies
// and the default to the overlay's flag.
func TestOwnershipValues(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir(), "values.schema.json"))
	require.NoError(t, err)
	var s struct {
		Properties struct {
			NamespaceOwnership struct {
				Enum []string `json:"enum"`
			} `json:"namespaceOwnership"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(data, &s))
	assert.ElementsMatch(t, []string{string(ownership.Strict), string(ownership.InterNamespaceAllowed)}, s.Properties.NamespaceOwnership.Enum)

	args := managerOf(t, byKey(objects(t, helmTemplate(t))))["args"]
	assert.Contains(t, args, flagOwnership+"="+string(ownership.Strict), "Strict by default")
	assert.Contains(t, managerOf(t, byKey(objects(t, helmTemplate(t, "namespaceOwnership=InterNamespaceAllowed"))))["args"],
		flagOwnership+"=InterNamespaceAllowed")
	assert.Contains(t, managerOf(t, byKey(objects(t, helmTemplate(t, "gatewayTrustedProxies={10.0.0.0/8,fd00::/8}"))))["args"],
		flagTrustedProxies+"=10.0.0.0/8,fd00::/8")
	assert.Contains(t, managerOf(t, byKey(objects(t, helmTemplate(t, "gatewayNetworkPolicy=true"))))["args"],
		flagStatusFrom+"="+release, "the operator's pods, in the release namespace, read the status port")
	withMetrics := managerOf(t, byKey(objects(t, helmTemplate(t, "gatewayNetworkPolicy=true", "gatewayMetricsFromNamespace=monitoring"))))["args"]
	assert.Contains(t, withMetrics, flagMetricsFrom+"=monitoring", "Prometheus's pods read the metrics port")
	assert.NotContains(t, managerOf(t, byKey(objects(t, helmTemplate(t, "gatewayMetricsFromNamespace=monitoring"))))["args"],
		flagMetricsFrom+"=monitoring", "no metrics rule without the policy: the operator would refuse to start")
	assert.Contains(t, managerOf(t, byKey(objects(t, helmTemplate(t, "gatewayDisruptionBudget=false"))))["args"],
		flagBudget+"=false")
	assert.Contains(t, managerOf(t, byKey(objects(t, helmTemplate(t, "gatewayPush=false"))))["args"],
		flagPush+"=false")
	for _, a := range args.([]any) {
		assert.NotContains(t, a, flagTrustedProxies, "no trusted proxy by default")
		assert.NotContains(t, a, flagStatusFrom, "no gateway NetworkPolicy by default: it would widen an admin's own")
		assert.NotContains(t, a, flagBudget, "the operator's default, budgets on")
	}
}

// TestChartFlagsExist runs the operator's --help and checks that every
// flag the chart renders, with every value that adds one set, is the
// binary's: a renamed flag fails here, not in a crash-looping pod.
func TestChartFlagsExist(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "apigateway-operator")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/apigateway-operator")
	build.Dir = env.Root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	help, err := exec.CommandContext(t.Context(), bin, "--help").CombinedOutput()
	require.NoError(t, err, "%s", help)

	for _, mode := range []string{"selfSigned", "certManager"} {
		args := managerOf(t, byKey(objects(t, helmTemplate(t, "certificates.mode="+mode, "webhook.clientAuth.enabled=true",
			"tracing.otlpEndpoint=collector:4317", "namespaceOwnership=InterNamespaceAllowed",
			"gatewayTrustedProxies={10.0.0.0/8}", "watchNamespaces={team-a}", "gatewayNetworkPolicy=true",
			"gatewayMetricsFromNamespace=monitoring", "gatewayDisruptionBudget=false"))))["args"].([]any)
		var names []string
		for _, a := range args {
			name, _, _ := strings.Cut(a.(string), "=")
			names = append(names, strings.TrimPrefix(name, "--"))
		}
		for _, want := range []string{flagOwnership, flagTrustedProxies, flagWatch, flagStatusFrom, flagMetricsFrom, flagBudget} {
			assert.Contains(t, names, strings.TrimPrefix(want, "--"), mode)
		}
		for _, n := range names {
			assert.Regexp(t, regexp.MustCompile(`(?m)^  -`+regexp.QuoteMeta(n)+`\b`), string(help), "%s: the chart passes --%s, which the operator does not have", mode, n)
		}
	}
}
