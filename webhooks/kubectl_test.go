package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/testenv"
)

// The real kube-apiserver calls the webhooks over TLS through the generated
// configurations, and every case is driven through the real kubectl, so
// the tests see what a user sees.

const flagImage = "flag.example/nginx-unprivileged:1.0"

func TestAdmissionThroughKubectl(t *testing.T) {
	startWebhooks(t, Options{DefaultImage: flagImage, DefaultReplicas: 1})

	t.Run("defaults", testKubectlDefaults)
	t.Run("dry run", testDryRun)
	t.Run("invalid", testInvalid)
	t.Run("conflicts", testConflicts)
	t.Run("warnings", testWarnings)
}

func testKubectlDefaults(t *testing.T) {
	ctx := t.Context()
	createNamespace(t, "defaults", "")
	createNamespace(t, "annotated", "team.example/nginx:2.0")

	// No image, replicas, path or pathType, and a host as a user may type it.
	spec := "routes:\n- host: API.Example.COM.\n  backendService: {name: svc, port: 80}\ntls:\n- hosts: [Api.Example.Com]\n  secretName: api-tls\n"
	res := kubectl(ctx, manifest("defaults", "gw", spec), "apply", "-f", "-")
	require.NoError(t, res.Err)
	assert.Contains(t, res.Stdout, "apigateway.example.com/gw created")
	// The single replica's warning is the warnings policy's, not installed
	// in this suite (policy_warnings_test.go).
	assert.NotContains(t, res.Stderr, "Warning: spec.replicas")

	gw := get(t, "defaults", "gw")
	assert.Equal(t, flagImage, string(gw.Spec.Image))
	require.NotNil(t, gw.Spec.Replicas)
	assert.Equal(t, int32(1), *gw.Spec.Replicas)
	assert.Equal(t, []v1.Route{{Host: "api.example.com", Path: "/", PathType: v1.PathTypePrefix,
		BackendService: v1.BackendService{Name: "svc", Port: 80}}}, gw.Spec.Routes)
	assert.Equal(t, []string{"api.example.com"}, gw.Spec.TLS[0].Hosts)

	// The namespace's annotation wins over the flag default. (Another host:
	// the same route in another namespace would conflict.)
	require.NoError(t, kubectl(ctx, manifest("annotated", "gw", strings.ReplaceAll(spec, "Example", "Annotated")), "apply", "-f", "-").Err)
	assert.Equal(t, v1.Image("team.example/nginx:2.0"), get(t, "annotated", "gw").Spec.Image)

	// An image the user sets is kept, and applying again does not change
	// the spec (the generation stays).
	own := manifest("annotated", "own", "image: mine:1.0\nroutes:\n- host: own.example.com\n  backendService: {name: svc, port: 80}\n")
	require.NoError(t, kubectl(ctx, own, "apply", "-f", "-").Err)
	assert.Equal(t, v1.Image("mine:1.0"), get(t, "annotated", "own").Spec.Image)
	require.NoError(t, kubectl(ctx, own, "apply", "-f", "-").Err)
	assert.Equal(t, int64(1), get(t, "annotated", "own").Generation)
}

func testDryRun(t *testing.T) {
	ctx := t.Context()
	createNamespace(t, "dry-run", "")
	res := kubectl(ctx, manifest("dry-run", "gw", "routes:\n- host: dry-run.example.com\n  backendService: {name: svc, port: 80}\n"),
		"apply", "--dry-run=server", "-o", "yaml", "-f", "-")
	require.NoError(t, res.Err)
	assert.Contains(t, res.Stdout, "image: "+flagImage)
	assert.Contains(t, res.Stdout, "replicas: 1")
	assert.Contains(t, res.Stdout, "pathType: Prefix")

	res = kubectl(ctx, nil, "get", "apigateway", "gw", "-n", "dry-run")
	require.Error(t, res.Err, "a server-side dry run must write nothing")
	assert.Contains(t, res.Stderr, `apigateways.example.com "gw" not found`)
}

// The cases pass the CRD schema, which runs before the validating webhook
// and already rejects every malformed name, host and path (validation's
// TestRuleCases holds it to package validation): these are the
// rules only the webhook can check.
func testInvalid(t *testing.T) {
	createNamespace(t, "invalid", "")
	const backend = "  backendService: {name: svc, port: 80}\n"
	tests := map[string]struct {
		spec string
		want []string
	}{
		"tls host that no route serves": {
			spec: "routes:\n- host: invalid.example.com\n" + backend + "tls:\n- hosts: [www.invalid.example.com]\n  secretName: tls\n",
			// The schema's rule, checked before the webhook is called.
			want: []string{`spec.tls: Invalid value: host www.invalid.example.com is not the host of any of the gateway's routes: every TLS host must be one`},
		},
		"tls host listed twice": {
			spec: "routes:\n- host: invalid.example.com\n" + backend + "tls:\n- hosts: [invalid.example.com]\n  secretName: a\n- hosts: [invalid.example.com]\n  secretName: b\n",
			want: []string{`spec.tls: Invalid value: a host may be listed once, in one TLS entry: a host can have only one certificate`},
		},
		"secretName that cannot name a Secret": {
			spec: "routes:\n- host: invalid.example.com\n" + backend + "tls:\n- hosts: [invalid.example.com]\n  secretName: Api_TLS\n",
			want: []string{`spec.tls[0].secretName: Invalid value: "Api_TLS": must be the name of a Secret`},
		},
		// The schema's errors come together; the webhook is called only
		// for an object the schema admits, and then reports all of its own.
		"two schema problems reported together": {
			spec: "routes:\n- host: invalid.example.com\n" + backend + "tls:\n- hosts: [shop.invalid.example.com]\n  secretName: No_Such_Name\n",
			want: []string{
				`spec.tls: Invalid value: host shop.invalid.example.com is not the host of any of the gateway's routes`,
				`spec.tls[0].secretName: Invalid value: "No_Such_Name"`,
			},
		},
		"two webhook problems reported together": {
			spec: "routes:\n- host: invalid.example.com\n  path: /users\n" + backend + "- host: invalid.example.com\n  path: /users/\n" + backend +
				"- host: invalid.example.com\n  path: /%6frders\n" + backend + "- host: invalid.example.com\n  path: /orders\n" + backend,
			want: []string{
				`spec.routes[1]: Duplicate value: "invalid.example.com/users/ (Prefix)": same host, path and pathType as spec.routes[0] once normalised`,
				`spec.routes[3]: Duplicate value: "invalid.example.com/orders (Prefix)": same host, path and pathType as spec.routes[2] once normalised`,
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := kubectl(t.Context(), manifest("invalid", "bad", "image: nginx:1.27\nreplicas: 2\n"+tc.spec), "apply", "-f", "-")
			require.Error(t, res.Err, "kubectl apply must fail; it printed %q", res.Stdout)
			assert.Contains(t, res.Stderr, `The APIGateway "bad" is invalid: `)
			for _, want := range tc.want {
				assert.Contains(t, res.Stderr, want)
			}
			assert.Equal(t, len(tc.want), countErrors(res.Stderr), "exactly the expected errors: %s", res.Stderr)
		})
	}
}

// Routes conflict as the Ingress controller sees them: by ingress class,
// host, pathType and normalised path, across namespaces.
func testConflicts(t *testing.T) {
	ctx := t.Context()
	createNamespace(t, "conflicts", "")
	createNamespace(t, "conflicts-other", "")
	const backend = "  backendService: {name: svc, port: 80}\n"
	routes := "routes:\n- host: conflicts.example.com\n  path: /users\n" + backend +
		"- host: conflicts.example.com\n  path: /q,a=b/\n" + backend
	require.NoError(t, kubectl(ctx, manifest("conflicts", "first", "replicas: 2\n"+routes), "apply", "-f", "-").Err)

	// The webhook reads gateways from the manager's cache: wait until it
	// has seen the first one. A dry run writes nothing.
	probe := manifest("conflicts", "probe", "replicas: 2\n"+routes)
	eventually(t, "the webhook to see the first gateway", func() bool {
		return kubectl(ctx, probe(), "apply", "--dry-run=server", "-f", "-").Err != nil
	})

	t.Run("the same routes in another namespace", func(t *testing.T) {
		res := kubectl(ctx, manifest("conflicts-other", "second", "replicas: 2\n"+routes), "apply", "-f", "-")
		require.Error(t, res.Err)
		assert.Contains(t, res.Stderr, `The APIGateway "second" is invalid: `)
		assert.Equal(t, 2, countErrors(res.Stderr), res.Stderr)
		assert.Contains(t, res.Stderr, `spec.routes[0].host: Forbidden: host conflicts.example.com belongs to namespace conflicts `+
			`(APIGateway conflicts/first claimed it first), which lends namespace conflicts-other no path prefix covering conflicts.example.com/users (Prefix)`)
		assert.Contains(t, res.Stderr, `spec.routes[1].host: Forbidden: host conflicts.example.com belongs to namespace conflicts`)
	})

	// Overlapping routes would take requests from the owner: a longer
	// prefix, an Exact path on its Prefix path, any path at all.
	for name, path := range map[string]string{
		"a longer prefix under the owner's": "/users/admin\n  pathType: Prefix",
		"an Exact path on the owner's":      "/users\n  pathType: Exact",
		"another path of the host":          "/login",
	} {
		t.Run(name+", from another namespace", func(t *testing.T) {
			res := kubectl(ctx, manifest("conflicts-other", "second", "replicas: 2\nroutes:\n- host: conflicts.example.com\n  path: "+path+"\n"+backend), "apply", "-f", "-")
			require.Error(t, res.Err)
			assert.Equal(t, 1, countErrors(res.Stderr), res.Stderr)
			assert.Contains(t, res.Stderr, `spec.routes[0].host: Forbidden: host conflicts.example.com belongs to namespace conflicts`)
		})
	}

	t.Run("a user who may not read the owner's namespace is not told who it is", func(t *testing.T) {
		allowWriting(t, "conflicts-other", "tenant-b")
		res := kubectl(ctx, manifest("conflicts-other", "second", "replicas: 2\n"+routes), "apply", "--as=tenant-b", "-f", "-")
		require.Error(t, res.Err)
		assert.Equal(t, 2, countErrors(res.Stderr), res.Stderr)
		assert.Contains(t, res.Stderr, `spec.routes[0].host: Forbidden: host conflicts.example.com belongs to another namespace, which lends namespace conflicts-other no path prefix`)
		assert.NotContains(t, res.Stderr, "conflicts/first")
		assert.NotContains(t, res.Stderr, "namespace conflicts ")
	})

	t.Run("a path the owner lends", func(t *testing.T) {
		lend := manifest("conflicts", "first", "replicas: 2\n"+routes+"delegations:\n- host: conflicts.example.com\n  namespace: conflicts-other\n  pathPrefixes: [/shop/]\n")
		require.NoError(t, kubectl(ctx, lend, "apply", "-f", "-").Err)
		shop := manifest("conflicts-other", "shop", "replicas: 2\nroutes:\n- host: conflicts.example.com\n  path: /shop/cart\n"+backend)
		eventually(t, "the webhook to see the delegation", func() bool {
			return kubectl(ctx, shop(), "apply", "--dry-run=server", "-f", "-").Err == nil
		})
		res := kubectl(ctx, shop, "apply", "-f", "-")
		require.NoError(t, res.Err, res.Stderr)
		res = kubectl(ctx, manifest("conflicts-other", "beside", "replicas: 2\nroutes:\n- host: conflicts.example.com\n  path: /shopping\n"+backend), "apply", "-f", "-")
		require.Error(t, res.Err, "/shopping is not below /shop/")
		assert.Contains(t, res.Stderr, `spec.routes[0].host: Forbidden: host conflicts.example.com belongs to namespace conflicts`)
	})

	t.Run("an Ingress without a class competes with the default class's", func(t *testing.T) {
		class := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "conflicts-default",
			Annotations: map[string]string{"ingressclass.kubernetes.io/is-default-class": "true"}},
			Spec: networkingv1.IngressClassSpec{Controller: "example.com/test"}}
		require.NoError(t, env.Client.Create(ctx, class))
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
		named := manifest("conflicts", "named-default", "replicas: 2\ningressClassName: conflicts-default\n"+routes)
		eventually(t, "the webhook to see the default IngressClass", func() bool {
			return kubectl(ctx, named(), "apply", "--dry-run=server", "-f", "-").Err != nil
		})
		res := kubectl(ctx, named, "apply", "-f", "-")
		require.Error(t, res.Err)
		assert.Contains(t, res.Stderr, `spec.routes[0]: Duplicate value: "conflicts.example.com/users (Prefix)": host and path already served by APIGateway conflicts/first`)
	})

	t.Run("a wildcard over a public suffix", func(t *testing.T) {
		res := kubectl(ctx, manifest("conflicts", "suffix", "replicas: 2\nroutes:\n- host: '*.co.uk'\n"+backend), "apply", "-f", "-")
		require.Error(t, res.Err)
		assert.Contains(t, res.Stderr, `spec.routes[0].host: Invalid value: "*.co.uk": a wildcard may not cover a public suffix`)
	})

	conflicting := map[string]string{
		"a trailing slash on a Prefix path": "/users/",
		"a percent-encoded letter":          "/%75sers",
	}
	for name, path := range conflicting {
		t.Run(name+", in the same namespace", func(t *testing.T) {
			res := kubectl(ctx, manifest("conflicts", "second", "replicas: 2\nroutes:\n- host: conflicts.example.com\n  path: "+path+"\n"+backend), "apply", "-f", "-")
			require.Error(t, res.Err)
			assert.Equal(t, 1, countErrors(res.Stderr), res.Stderr)
			assert.Contains(t, res.Stderr, `spec.routes[0]: Duplicate value: "conflicts.example.com`+path+` (Prefix)": host and path already served by APIGateway conflicts/first, `+
				`which claimed conflicts.example.com/users (Prefix) first for the cluster's default ingress class; Ingress controllers merge a host's paths across namespaces`)
		})
	}

	// In the first gateway's namespace, so that a check blind to pathType
	// or class would refuse them at once.
	admitted := map[string]struct{ name, spec string }{
		"an Exact route on a Prefix route's path":  {"exact", "routes:\n- host: conflicts.example.com\n  path: /users\n  pathType: Exact\n" + backend},
		"the same routes in another ingress class": {"other-class", "ingressClassName: internal\n" + routes},
		"another path": {"orders", "routes:\n- host: conflicts.example.com\n  path: /orders/\n" + backend},
	}
	for name, tc := range admitted {
		t.Run(name, func(t *testing.T) {
			res := kubectl(ctx, manifest("conflicts", tc.name, "replicas: 2\n"+tc.spec), "apply", "-f", "-")
			require.NoError(t, res.Err, res.Stderr)
			assert.Contains(t, res.Stdout, "apigateway.example.com/"+tc.name+" created")
		})
	}

	t.Run("one route twice in a gateway, once percent-encoded", func(t *testing.T) {
		res := kubectl(ctx, manifest("conflicts", "twice", "replicas: 2\nroutes:\n- host: twice.example.com\n  path: /users\n"+backend+
			"- host: twice.example.com\n  path: /%75sers\n"+backend), "apply", "-f", "-")
		require.Error(t, res.Err)
		assert.Equal(t, 1, countErrors(res.Stderr), res.Stderr)
		assert.Contains(t, res.Stderr, `spec.routes[1]: Duplicate value: "twice.example.com/%75sers (Prefix)": `+
			`same host, path and pathType as spec.routes[0] once normalised ("/users" and "/%75sers" both match twice.example.com/users (Prefix))`)
	})

	t.Run("one route twice in a gateway, as written (schema)", func(t *testing.T) {
		res := kubectl(ctx, manifest("conflicts", "twice", "replicas: 2\nroutes:\n- host: twice.example.com\n  path: /users\n"+backend+
			"- host: twice.example.com\n  path: /orders\n"+backend+"- host: twice.example.com\n  path: /users\n  backendService: {name: other, port: 81}\n"), "apply", "-f", "-")
		require.Error(t, res.Err)
		assert.Equal(t, 1, countErrors(res.Stderr), res.Stderr)
		assert.Contains(t, res.Stderr, `spec.routes[2]: Duplicate value: {"host":"twice.example.com","path":"/users","pathType":"Prefix"}`)
	})

	// Updating a gateway without changing its routes does not conflict
	// with itself.
	res := kubectl(ctx, manifest("conflicts", "first", "replicas: 3\n"+routes), "apply", "-f", "-")
	require.NoError(t, res.Err)
	assert.Contains(t, res.Stdout, "apigateway.example.com/first configured")
	res = kubectl(ctx, nil, "label", "apigateway", "first", "-n", "conflicts", "team=a")
	require.NoError(t, res.Err)
}

func testWarnings(t *testing.T) {
	ctx := t.Context()
	createNamespace(t, "warnings", "")
	res := kubectl(ctx, manifest("warnings", "latest",
		"image: nginx:latest\nreplicas: 2\nroutes:\n- host: warnings.example.com\n  backendService: {name: svc, port: 80}\n"), "apply", "-f", "-")
	require.NoError(t, res.Err, "a warning does not reject")
	assert.Contains(t, res.Stdout, "apigateway.example.com/latest created")
	// The warnings policy, not installed here, sends the image's warning
	// (policy_warnings_test.go); the webhook keeps the one that needs the
	// Service.
	assert.NotContains(t, res.Stderr, "spec.image")

	// A backend Service that exists without the route's port.
	require.NoError(t, kubectl(ctx, strings.NewReader(`apiVersion: v1
kind: Service
metadata: {name: users, namespace: warnings}
spec:
  ports: [{name: http, port: 80}, {name: admin, port: 9000}]
`), "apply", "-f", "-").Err)
	gw := manifest("warnings", "ports",
		"image: nginx:1.27\nreplicas: 2\nroutes:\n- host: users.example.com\n  backendService: {name: users, port: 8080}\n")
	const want = `Warning: spec.routes[0].backendService: Service "users" has no port 8080 (its ports: 80, 9000)`
	// The Service cache syncs after the manager starts, and sees the new
	// Service a moment after it is written.
	eventually(t, "the port warning", func() bool {
		return strings.Contains(kubectl(ctx, gw(), "apply", "--dry-run=server", "-f", "-").Stderr, want)
	})
	res = kubectl(ctx, gw, "apply", "-f", "-")
	require.NoError(t, res.Err)
	assert.Contains(t, res.Stderr, want)
}

// countErrors counts the field errors kubectl printed.
func countErrors(stderr string) int {
	n := 0
	for _, typ := range []string{": Invalid value: ", ": Duplicate value: ", ": Required value", ": Unsupported value: ", ": Forbidden: "} {
		n += strings.Count(stderr, typ)
	}
	return n
}

// manifest returns a function giving a fresh reader of an APIGateway
// manifest each time, since kubectl consumes its stdin.
func manifest(namespace, name, spec string) func() *strings.Reader {
	m := fmt.Sprintf("apiVersion: example.com/v1\nkind: APIGateway\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  %s\n",
		name, namespace, strings.ReplaceAll(strings.TrimSuffix(spec, "\n"), "\n", "\n  "))
	return func() *strings.Reader { return strings.NewReader(m) }
}

func kubectl(ctx context.Context, stdin any, args ...string) testenv.Result {
	switch in := stdin.(type) {
	case func() *strings.Reader:
		return env.Kubectl(ctx, in(), args...)
	case *strings.Reader:
		return env.Kubectl(ctx, in, args...)
	}
	return env.Kubectl(ctx, nil, args...)
}

func createNamespace(t *testing.T, name, defaultImage string) {
	t.Helper()
	ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + name + "\n"
	if defaultImage != "" {
		ns += "  annotations:\n    " + v1.DefaultImageAnnotation + ": " + defaultImage + "\n"
	}
	require.NoError(t, kubectl(t.Context(), strings.NewReader(ns), "apply", "-f", "-").Err)
}

func get(t *testing.T, namespace, name string) *v1.APIGateway {
	t.Helper()
	res := kubectl(t.Context(), nil, "get", "apigateways.v1.example.com", name, "-n", namespace, "-o", "json")
	require.NoError(t, res.Err)
	var gw v1.APIGateway
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &gw))
	return &gw
}

// eventually waits up to 30 s for cond, which must not write anything.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	require.NoError(t, err, "waiting for %s", what)
}

// allowWriting lets user write APIGateways in namespace, and nothing else:
// a tenant of that namespace.
func allowWriting(t *testing.T, namespace, user string) {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "gateway-writer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1.GroupVersion.Group}, Resources: []string{"apigateways"},
			Verbs: []string{"get", "list", "create", "patch", "update"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "gateway-writer-" + user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	for _, obj := range []client.Object{role, binding} {
		require.NoError(t, client.IgnoreAlreadyExists(env.Client.Create(t.Context(), obj)))
	}
}
