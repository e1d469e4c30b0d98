package charts

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"example.com/apigateway-operator/test/testenv"
)

// These tests hold the chart to the kustomize overlays it is generated from
// and to the real kube-apiserver: each mode renders what its overlay
// renders, passes a server-side dry run, and installs and uninstalls with
// the pinned helm without leaving an admission hook behind.

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{GatewayAPI: true})
}

// release is the namespace the tests install into: the overlays', so that
// the chart's output is comparable to theirs as is.
const release = Namespace

// helmBin is the pinned helm (testenv.HelmBin).
func helmBin(t *testing.T) string {
	t.Helper()
	bin, err := testenv.HelmBin(env.Root)
	require.NoError(t, err)
	return bin
}

// helm runs the pinned helm against the test's API server, with its own
// configuration and cache directories, and returns its output.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), helmBin(t), append(args, "--kubeconfig", env.Kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = errors.New(strings.Join(args, " ") + ": " + err.Error() + ": " + stderr.String())
	}
	return stdout.String(), err
}

func chartDir() string { return filepath.Join(env.Root, Dir) }

// helmTemplate runs `helm template` with the --set values given.
func helmTemplate(t *testing.T, set ...string) string {
	t.Helper()
	args := []string{"template", "apigateway-operator", chartDir(), "--namespace", release}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := helm(t, args...)
	require.NoError(t, err)
	return out
}

func kustomize(overlay string) ([]byte, error) {
	res := env.Kubectl(context.Background(), nil, "kustomize", filepath.Join(env.Root, "manifests", overlay))
	return []byte(res.Stdout), res.Err
}

// TestChartIsGenerated fails when the chart on disk is not what `make chart`
// writes from the overlays now: a manifest changed without the chart.
func TestChartIsGenerated(t *testing.T) {
	want, err := Files(kustomize)
	require.NoError(t, err)
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(chartDir(), name))
		require.NoError(t, err, "run `make chart`")
		if d := cmp.Diff(strings.Split(string(data), "\n"), strings.Split(string(got), "\n")); d != "" {
			t.Errorf("%s is stale: run `make chart` (-generated +on disk):\n%s", name, d)
		}
	}
	onDisk, err := filepath.Glob(filepath.Join(chartDir(), "templates", "*.yaml"))
	require.NoError(t, err)
	for _, f := range onDisk {
		assert.Contains(t, want, "templates/"+filepath.Base(f), "no overlay ships %s: run `make chart`", f)
	}
}

// modes are the installs the chart offers beside the default, each with the
// overlays whose objects it must render.
var modes = map[string]struct {
	set      []string
	overlays []string
}{
	"self-signed (default values)": {overlays: []string{"default"}},
	"cert-manager":                 {set: []string{"certificates.mode=certManager"}, overlays: []string{"cert-manager"}},
	"fail-closed":                  {set: []string{"webhook.failurePolicy=Fail"}, overlays: []string{"fail-closed"}},
	"client-auth":                  {set: []string{"webhook.clientAuth.enabled=true"}, overlays: []string{"client-auth"}},
	"monitoring":                   {set: []string{"metrics.prometheusRule.enabled=true", "metrics.gatewayPodMonitor.enabled=true"}, overlays: []string{"default", "monitoring"}},
}

// TestModesRenderTheirOverlays proves the chart is the kustomize install:
// object for object, each mode renders what its overlays render, less the
// Namespace (the release's namespace is not the chart's) and the CRD's
// resource-policy annotation (Helm's own).
func TestModesRenderTheirOverlays(t *testing.T) {
	for name, tc := range modes {
		t.Run(name, func(t *testing.T) {
			var want []*unstructured.Unstructured
			for _, overlay := range tc.overlays {
				data, err := kustomize(overlay)
				require.NoError(t, err)
				want = append(want, objects(t, string(data))...)
			}
			want = slices.DeleteFunc(want, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Namespace" })
			got := objects(t, helmTemplate(t, tc.set...))
			crds := 0
			for _, o := range got {
				if o.GetKind() == "CustomResourceDefinition" {
					crds++
					assert.Equal(t, "keep", o.GetAnnotations()["helm.sh/resource-policy"], o.GetName())
					unstructured.RemoveNestedField(o.Object, "metadata", "annotations", "helm.sh/resource-policy")
				}
			}
			require.Equal(t, len(crdNames), crds, "the chart's CRDs")

			assert.ElementsMatch(t, slices.Collect(maps.Keys(byKey(want))), slices.Collect(maps.Keys(byKey(got))))
			for k, w := range byKey(want) {
				if g := byKey(got)[k]; g != nil {
					if d := cmp.Diff(w.Object, g.Object); d != "" {
						t.Errorf("%s differs from the overlay (-kustomize +helm):\n%s", k, d)
					}
				}
			}
		})
	}
}

// TestValues checks each value a user sets against what lands in the
// rendered objects.
func TestValues(t *testing.T) {
	tests := map[string]struct {
		set   []string
		check func(t *testing.T, objs map[string]*unstructured.Unstructured)
	}{
		"image and replicas": {
			set: []string{"image.repository=registry.example/op", "image.tag=v1.2.3", "replicas=3"},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				c := managerOf(t, objs)
				assert.Equal(t, "registry.example/op:v1.2.3", c["image"])
				replicas, _, _ := unstructured.NestedFieldNoCopy(objs[deployment].Object, "spec", "replicas")
				assert.EqualValues(t, 3, replicas)
			},
		},
		"resources": {
			set: []string{"resources.limits.memory=1Gi", "resources.requests.cpu=250m"},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				res := managerOf(t, objs)["resources"].(map[string]any)
				assert.Equal(t, "1Gi", res["limits"].(map[string]any)["memory"])
				assert.Equal(t, "250m", res["requests"].(map[string]any)["cpu"])
			},
		},
		"no NetworkPolicy": {
			set: []string{"networkPolicy.enabled=false"},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				assert.NotContains(t, objs, "NetworkPolicy/"+release+"/apigateway-operator")
			},
		},
		"client authentication with cert-manager": {
			set: []string{"webhook.clientAuth.enabled=true", "certificates.mode=certManager"},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				c := managerOf(t, objs)
				assert.Contains(t, c["args"], "--webhook-client-ca=/etc/apigateway-operator/client-ca/ca.crt")
				assert.Contains(t, c["args"], "--cert-mode=cert-manager")
				volumes, _, _ := unstructured.NestedSlice(objs[deployment].Object, "spec", "template", "spec", "volumes")
				assert.Contains(t, volumes, map[string]any{"name": "webhook-client-ca",
					"configMap": map[string]any{"name": "apigateway-operator-webhook-client-ca"}})
			},
		},
		"the webhook port's sources": {
			set: []string{"networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/24"},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				np := objs["NetworkPolicy/"+release+"/apigateway-operator"]
				require.NotNil(t, np)
				rules, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
				// What the README's kustomize patch gives (manifests tests
				// TestNetworkPolicyPatchPointServerDryRun).
				assert.Equal(t, []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/24"}}}, rules[0].(map[string]any)["from"])
				assert.NotNil(t, rules[0].(map[string]any)["ports"])
			},
		},
		"tracing off by default": {
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				for _, a := range managerOf(t, objs)["args"].([]any) {
					assert.NotContains(t, a, "--otlp-endpoint")
				}
			},
		},
		"tracing endpoint": {
			set: []string{"tracing.otlpEndpoint=http://collector.tracing:4318"},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				assert.Contains(t, managerOf(t, objs)["args"], "--otlp-endpoint=http://collector.tracing:4318")
			},
		},
		"CRD deleted on uninstall when asked": {
			set: []string{"crds.keep=false"},
			check: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				for _, name := range crdNames {
					assert.NotContains(t, objs["CustomResourceDefinition//"+name].GetAnnotations(), "helm.sh/resource-policy", name)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.check(t, byKey(objects(t, helmTemplate(t, tc.set...))))
		})
	}
}

// TestSchemaRefusesUnknownValues: a misspelt mode or policy fails the
// install instead of silently rendering the default.
func TestSchemaRefusesUnknownValues(t *testing.T) {
	for _, set := range []string{"certificates.mode=cert-manager", "webhook.failurePolicy=fail", "replicas=0", "tracing.endpoint=x"} {
		_, err := helm(t, "template", "apigateway-operator", chartDir(), "--set", set)
		assert.Error(t, err, set)
	}
}

func TestLint(t *testing.T) {
	all := map[string][]string{"namespaced": {"watchNamespaces={team-a,team-b}", "gatewayTrustedProxies={10.0.0.0/8}", "gatewayNetworkPolicy=true", "gatewayMetricsFromNamespace=monitoring"}}
	for name, tc := range modes {
		all[name] = tc.set
	}
	for name, set := range all {
		args := []string{"lint", "--strict", chartDir(), "--namespace", release}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		out, err := helm(t, args...)
		assert.NoError(t, err, "%s:\n%s", name, out)
	}
}

// TestModesServerDryRun sends each mode's objects through the real API
// server's validation and admission, as `kubectl apply` would.
func TestModesServerDryRun(t *testing.T) {
	createNamespace(t)
	env.InstallCertManagerCRDs(t)
	installMonitoringCRDs(t)
	for name, tc := range modes {
		t.Run(name, func(t *testing.T) {
			res := env.Kubectl(t.Context(), strings.NewReader(helmTemplate(t, tc.set...)), "apply", "--dry-run=server", "-f", "-")
			require.NoError(t, res.Err)
			assert.Contains(t, res.Stdout, "validatingwebhookconfiguration.admissionregistration.k8s.io/apigateway-operator-validating-webhook-configuration")
		})
	}
}

// crdNames are the chart's CustomResourceDefinitions, each kept on
// uninstall unless crds.keep=false.
var crdNames = []string{"apigateways.example.com", "hostclaims.example.com", "domainbindings.example.com"}

// admissionKinds are what makes a leftover dangerous: a webhook whose
// Service is gone fails (or, with Ignore, slows) every write it matches.
const admissionKinds = "mutatingwebhookconfigurations,validatingwebhookconfigurations," +
	"mutatingadmissionpolicies,mutatingadmissionpolicybindings," +
	"validatingadmissionpolicies,validatingadmissionpolicybindings"

// TestInstallUninstallLeavesNoAdmission installs the chart fail-closed
// (the worst leftover) with the pinned helm, upgrades it, then uninstalls
// it: every webhook configuration and admission policy goes, the CRD stays.
func TestInstallUninstallLeavesNoAdmission(t *testing.T) {
	env.InstallCertManagerCRDs(t)
	for _, mode := range []string{"selfSigned", "certManager"} {
		t.Run(mode, func(t *testing.T) {
			// testenv installed the CRD without Helm's ownership, which a
			// fresh cluster does not have.
			res := env.Kubectl(t.Context(), nil, append([]string{"delete", "crd", "--ignore-not-found"}, crdNames...)...)
			require.NoError(t, res.Err)

			// No --wait: no operator image runs here, and nothing in the
			// install needs it to.
			out, err := helm(t, "install", "apigateway-operator", chartDir(), "--namespace", release, "--create-namespace",
				"--set", "webhook.failurePolicy=Fail", "--set", "certificates.mode="+mode)
			require.NoError(t, err, out)
			assert.Len(t, ours(t, admissionKinds), 16, "the install ships two webhook configurations, the defaults MutatingAdmissionPolicy and six ValidatingAdmissionPolicies (warnings, limits, writes, claims, host-claims, domain-bindings), each with its binding")
			assertUpgradeKeepsInjected(t, mode)

			out, err = helm(t, "uninstall", "apigateway-operator", "--namespace", release)
			require.NoError(t, err, out)
			assert.Empty(t, ours(t, admissionKinds), "left behind by helm uninstall")
			res = env.Kubectl(t.Context(), nil, append([]string{"get", "crd", "-o", "name"}, crdNames...)...)
			assert.NoError(t, res.Err, "crds.keep keeps the CRDs, every APIGateway and every host's owner")
		})
	}
}

// TestHostsPolicyFollowsRelease: the policies that bind HTTPRoutes and
// Ingresses to host ownership ship in every mode and exempt the
// operator's ServiceAccount in the release's namespace, whatever it is;
// namespaced mode keeps them cluster-wide (a host is one name whichever
// namespace the operator watches).
func TestHostsPolicyFollowsRelease(t *testing.T) {
	for _, set := range [][]string{nil, {"watchNamespaces={team-a}"}, {"certificates.mode=certManager"}} {
		out, err := helm(t, append([]string{"template", "apigateway-operator", chartDir(), "--namespace", "ops"}, setArgs(set)...)...)
		require.NoError(t, err)
		objs := byKey(objects(t, out))
		for _, name := range []string{"apigateway-operator-host-claims", "apigateway-operator-domain-bindings"} {
			p := objs["ValidatingAdmissionPolicy//"+name]
			require.NotNil(t, p, "%v: %s", set, name)
			conditions, _, _ := unstructured.NestedSlice(p.Object, "spec", "matchConditions")
			require.NotEmpty(t, conditions)
			assert.Equal(t, "request.userInfo.username != 'system:serviceaccount:ops:apigateway-operator'", conditions[0].(map[string]any)["expression"], "%v", set)
			_, selects := p.Object["spec"].(map[string]any)["matchConstraints"].(map[string]any)["namespaceSelector"]
			assert.False(t, selects, "%v: %s sees every namespace", set, name)
			b := objs["ValidatingAdmissionPolicyBinding//"+name]
			require.NotNil(t, b, "%v: %s binding", set, name)
			ref, _, _ := unstructured.NestedMap(b.Object, "spec", "paramRef")
			assert.Equal(t, map[string]any{"selector": map[string]any{}, "parameterNotFoundAction": "Allow"}, ref)
		}
	}
}

func setArgs(set []string) []string {
	var args []string
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return args
}

// assertUpgradeKeepsInjected plays the operator (or cainjector) writing the
// caBundle and, in self-signed mode, the certificate Secret, then upgrades:
// Helm's three-way merge must keep what the chart does not set, or every
// upgrade would break the webhooks until the next injection.
func assertUpgradeKeepsInjected(t *testing.T, mode string) {
	t.Helper()
	const vwc = "validatingwebhookconfiguration/apigateway-operator-validating-webhook-configuration"
	const secret = "secret/apigateway-operator-webhook-cert"
	kubectl := func(args ...string) string {
		t.Helper()
		res := env.Kubectl(t.Context(), nil, args...)
		require.NoError(t, res.Err)
		return res.Stdout
	}
	kubectl("patch", vwc, "--type=json", "-p", `[{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":"aW5qZWN0ZWQ="}]`)
	if mode == "selfSigned" {
		kubectl("-n", release, "patch", secret, "-p", `{"data":{"ca.crt":"aW5qZWN0ZWQ="}}`)
	}

	out, err := helm(t, "upgrade", "apigateway-operator", chartDir(), "--namespace", release, "--reuse-values", "--set", "replicas=3")
	require.NoError(t, err, out)
	assert.Equal(t, "3", kubectl("-n", release, "get", "deployment/apigateway-operator", "-o", "jsonpath={.spec.replicas}"), "the upgrade applied")
	assert.Equal(t, "aW5qZWN0ZWQ=", kubectl("get", vwc, "-o", "jsonpath={.webhooks[0].clientConfig.caBundle}"), "the upgrade dropped the injected caBundle")
	if mode == "selfSigned" {
		assert.Equal(t, "aW5qZWN0ZWQ=", kubectl("-n", release, "get", secret, "-o", "jsonpath={.data.ca\\.crt}"), "the upgrade emptied the certificate Secret")
	}
}

// ours lists the objects of kinds whose name is the operator's.
func ours(t *testing.T, kinds string) []string {
	t.Helper()
	res := env.Kubectl(t.Context(), nil, "get", kinds, "-o", "name")
	require.NoError(t, res.Err)
	var names []string
	for _, n := range strings.Fields(res.Stdout) {
		if strings.Contains(n, "apigateway") {
			names = append(names, n)
		}
	}
	return names
}

const deployment = "Deployment/" + release + "/apigateway-operator"

func managerOf(t *testing.T, objs map[string]*unstructured.Unstructured) map[string]any {
	t.Helper()
	require.Contains(t, objs, deployment)
	c, err := manager(objs[deployment])
	require.NoError(t, err)
	return c
}

// objects parses rendered YAML the way the generator does (parse).
func objects(t *testing.T, data string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := parse([]byte(data))
	require.NoError(t, err)
	return objs
}

func byKey(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o
	}
	return m
}

func createNamespace(t *testing.T) {
	t.Helper()
	res := env.Kubectl(t.Context(), nil, "create", "namespace", release, "--dry-run=client", "-o", "yaml")
	require.NoError(t, res.Err)
	res = env.Kubectl(t.Context(), strings.NewReader(res.Stdout), "apply", "-f", "-")
	require.NoError(t, res.Err)
}

// monitoringCRD is a minimal CRD of the Prometheus Operator's kind (its
// plural, lower case) in monitoring.coreos.com/v1, whose spec is spec (YAML
// indented under openAPIV3Schema's properties.spec). The Prometheus
// Operator's module is not a dependency, so its CRDs are not at hand: each
// types what our objects use and keeps the rest open, so the dry run checks
// the kind, the scope and our objects' shape, not every field the real CRD
// knows.
func monitoringCRD(kind, plural, spec string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + plural + `.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ` + kind + `, listKind: ` + kind + `List, plural: ` + plural + `, singular: ` + strings.ToLower(kind) + `}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        required: [spec]
        properties:
          spec:
` + spec
}

// prometheusRuleSpec types what our rule uses: groups of named rules with
// an expression.
const prometheusRuleSpec = `            type: object
            properties:
              groups:
                type: array
                items:
                  type: object
                  required: [name, rules]
                  properties:
                    name: {type: string}
                    interval: {type: string}
                    rules:
                      type: array
                      items:
                        type: object
                        required: [expr]
                        properties:
                          alert: {type: string}
                          record: {type: string}
                          expr: {x-kubernetes-int-or-string: true}
                          for: {type: string}
                          labels: {type: object, additionalProperties: {type: string}}
                          annotations: {type: object, additionalProperties: {type: string}}
`

// podMonitorSpec types what our PodMonitor uses.
const podMonitorSpec = `            type: object
            required: [selector]
            properties:
              namespaceSelector:
                type: object
                properties:
                  any: {type: boolean}
                  matchNames: {type: array, items: {type: string}}
              selector:
                type: object
                properties:
                  matchLabels: {type: object, additionalProperties: {type: string}}
              podMetricsEndpoints:
                type: array
                items:
                  type: object
                  properties:
                    port: {type: string}
                    path: {type: string}
                    interval: {type: string}
                    relabelings:
                      type: array
                      items: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// installMonitoringCRDs installs the Prometheus Operator's kinds the
// monitoring overlay uses.
func installMonitoringCRDs(t *testing.T) {
	t.Helper()
	for _, c := range []struct{ kind, plural, spec string }{
		{"PrometheusRule", "prometheusrules", prometheusRuleSpec},
		{"PodMonitor", "podmonitors", podMonitorSpec},
	} {
		res := env.Kubectl(t.Context(), strings.NewReader(monitoringCRD(c.kind, c.plural, c.spec)), "apply", "-f", "-")
		require.NoError(t, res.Err)
		res = env.Kubectl(t.Context(), nil, "wait", "--for=condition=Established", "crd/"+c.plural+".monitoring.coreos.com")
		require.NoError(t, res.Err)
	}
}
