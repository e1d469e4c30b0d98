package manifests_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/test/operatortest"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

// These tests hold every manifest a user applies to the real kube-apiserver:
// the kustomize overlays through server-side dry runs, the manager's pod
// template through the API server's own PodSecurity admission, and the
// samples through the operator's webhooks, as in a cluster.

var env *testenv.Env

func TestMain(m *testing.M) {
	// Gateway API's CRDs: the hosts policy matches HTTPRoutes
	// (hosts_policy_test.go).
	testenv.Main(m, &env, testenv.Options{GatewayAPI: true, Webhooks: envtest.WebhookInstallOptions{
		// Tests run in this directory.
		Paths: []string{"webhook"},
		// The CRD is installed without conversion, as a cluster has it
		// before the operator is deployed: the overlays' dry runs then
		// apply the conversion webhook onto it as a first install would.
		// TestSamples points it at the test's webhook server.
	}})
}

const operatorNamespace = "apigateway-operator-system"

func TestDefaultOverlayServerDryRun(t *testing.T) {
	applyOperatorNamespace(t)
	res := env.Kubectl(t.Context(), nil, "apply", "--dry-run=server", "-k", manifestDir("default"))
	require.NoError(t, res.Err)
	assertDryRunOf(t, res.Stdout, append(slices.Clone(defaultObjects), selfSignedSecret)...)
}

// TestClientAuthOverlayServerDryRun: the client-auth overlay is the
// default install whose manager reads the client CA from the ConfigMap
// the cluster admin creates.
func TestClientAuthOverlayServerDryRun(t *testing.T) {
	applyOperatorNamespace(t)
	res := env.Kubectl(t.Context(), nil, "apply", "--dry-run=server", "-k", manifestDir("client-auth"))
	require.NoError(t, res.Err)
	assertDryRunOf(t, res.Stdout, append(slices.Clone(defaultObjects), selfSignedSecret)...)
	deploy := find(t, parseObjects(t, []byte(env.Kubectl(t.Context(), nil, "kustomize", manifestDir("client-auth")).Stdout)), "Deployment", "apigateway-operator")
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	assert.Contains(t, containers[0].(map[string]any)["args"], "--webhook-client-ca=/etc/apigateway-operator/client-ca/ca.crt")
}

func TestCertManagerOverlayServerDryRun(t *testing.T) {
	env.InstallCertManagerCRDs(t)
	applyOperatorNamespace(t)
	res := env.Kubectl(t.Context(), nil, "apply", "--dry-run=server", "-k", manifestDir("cert-manager"))
	require.NoError(t, res.Err)
	assert.NotContains(t, res.Stdout, selfSignedSecret, "cert-manager mode keeps its certificate in cert-manager's Secret")
	assertDryRunOf(t, res.Stdout, append(slices.Clone(defaultObjects),
		"issuer.cert-manager.io/apigateway-operator-selfsigned",
		"issuer.cert-manager.io/apigateway-operator-ca",
		"certificate.cert-manager.io/apigateway-operator-ca",
		"certificate.cert-manager.io/apigateway-operator-serving-cert",
	)...)
}

// TestFailurePolicies checks what each install does while no replica
// answers: the default fails open for validation (the API server's schema
// and defaults policy still apply), the fail-closed overlay refuses every
// write, and the mutating webhook is skipped either way.
func TestFailurePolicies(t *testing.T) {
	for overlay, want := range map[string]string{"default": "Ignore", "fail-closed": "Fail"} {
		t.Run(overlay, func(t *testing.T) {
			for _, o := range kustomize(t, overlay) {
				if o.GetKind() != "ValidatingWebhookConfiguration" && o.GetKind() != "MutatingWebhookConfiguration" {
					continue
				}
				hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
				require.NoError(t, err)
				require.Len(t, hooks, 1)
				policy, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "failurePolicy")
				if o.GetKind() == "MutatingWebhookConfiguration" {
					assert.Equal(t, "Ignore", policy, "%s: the mutating webhook", overlay)
				} else {
					assert.Equal(t, want, policy, "%s: the validating webhook", overlay)
				}
			}
		})
	}
	applyOperatorNamespace(t)
	res := env.Kubectl(t.Context(), nil, "apply", "--dry-run=server", "-k", manifestDir("fail-closed"))
	require.NoError(t, res.Err)
	assertDryRunOf(t, res.Stdout, append(slices.Clone(defaultObjects), selfSignedSecret)...)
}

// selfSignedSecret is the empty Secret the self-signed mode fills: the
// operator may not create Secrets (see TestRBACNamesWhatItWrites).
const selfSignedSecret = "secret/apigateway-operator-webhook-cert"

// defaultObjects are what `kubectl apply -k manifests/default` creates,
// besides selfSignedSecret, and the cert-manager overlay too.
var defaultObjects = []string{
	"customresourcedefinition.apiextensions.k8s.io/apigateways.example.com",
	"customresourcedefinition.apiextensions.k8s.io/hostclaims.example.com",
	"customresourcedefinition.apiextensions.k8s.io/domainbindings.example.com",
	"serviceaccount/apigateway-operator",
	"role.rbac.authorization.k8s.io/apigateway-operator",
	"clusterrole.rbac.authorization.k8s.io/apigateway-operator",
	"rolebinding.rbac.authorization.k8s.io/apigateway-operator",
	"clusterrolebinding.rbac.authorization.k8s.io/apigateway-operator",
	"service/apigateway-operator-webhook",
	"service/apigateway-operator-metrics",
	"deployment.apps/apigateway-operator",
	"poddisruptionbudget.policy/apigateway-operator",
	"networkpolicy.networking.k8s.io/apigateway-operator",
	"mutatingwebhookconfiguration.admissionregistration.k8s.io/apigateway-operator-mutating-webhook-configuration",
	"validatingwebhookconfiguration.admissionregistration.k8s.io/apigateway-operator-validating-webhook-configuration",
	"mutatingadmissionpolicy.admissionregistration.k8s.io/apigateway-operator-defaults",
	"mutatingadmissionpolicybinding.admissionregistration.k8s.io/apigateway-operator-defaults",
	"validatingadmissionpolicy.admissionregistration.k8s.io/apigateway-operator-limits",
	"validatingadmissionpolicybinding.admissionregistration.k8s.io/apigateway-operator-limits",
	"validatingadmissionpolicy.admissionregistration.k8s.io/apigateway-operator-host-claims",
	"validatingadmissionpolicybinding.admissionregistration.k8s.io/apigateway-operator-host-claims",
	"validatingadmissionpolicy.admissionregistration.k8s.io/apigateway-operator-domain-bindings",
	"validatingadmissionpolicybinding.admissionregistration.k8s.io/apigateway-operator-domain-bindings",
	"configmap/apigateway-operator-defaults",
}

// assertDryRunOf checks that kubectl's dry run went through the API server
// for each object.
func assertDryRunOf(t *testing.T, stdout string, objects ...string) {
	t.Helper()
	for _, o := range objects {
		assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(o)+` (created|configured|unchanged) \(server dry run\)$`, stdout)
	}
}

// TestCertManagerOverlayIsConsistent checks that the names the cert-manager
// overlay repeats agree: the Certificate the manager waits for, the one
// cainjector injects from, the Secret it writes and the Deployment mounts
// at --cert-dir, and the webhook Service's DNS name.
func TestCertManagerOverlayIsConsistent(t *testing.T) {
	objs := kustomize(t, "cert-manager")

	cert := find(t, objs, "Certificate", "apigateway-operator-serving-cert")
	certRef := cert.GetNamespace() + "/" + cert.GetName()
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	svc := find(t, objs, "Service", "apigateway-operator-webhook")
	assert.Contains(t, dnsNames, svc.GetName()+"."+svc.GetNamespace()+".svc", "the API server calls the webhook at this name")

	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "CustomResourceDefinition"} {
		for _, o := range objs {
			// Only a CRD with a conversion webhook calls the operator.
			strategy, _, _ := unstructured.NestedString(o.Object, "spec", "conversion", "strategy")
			if o.GetKind() == kind && (kind != "CustomResourceDefinition" || strategy == "Webhook") {
				assert.Equal(t, certRef, o.GetAnnotations()["cert-manager.io/inject-ca-from"], "%s %s", kind, o.GetName())
			}
		}
	}

	dep := find(t, objs, "Deployment", "apigateway-operator")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	require.Len(t, containers, 1)
	container := containers[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(container, "args")
	assert.Contains(t, args, "--cert-mode=cert-manager")
	assert.Contains(t, args, "--cert-manager-certificate="+certRef)
	assert.Contains(t, args, "--leader-elect", "the base's args are kept")

	certDir := flagValue(args, "--cert-dir")
	require.NotEmpty(t, certDir, "the overlay sets --cert-dir")
	mounts, _, _ := unstructured.NestedSlice(container, "volumeMounts")
	volumes, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "volumes")
	var mounted string
	for _, m := range mounts {
		if m := m.(map[string]any); m["mountPath"] == certDir {
			mounted = m["name"].(string)
		}
	}
	require.NotEmpty(t, mounted, "a volume is mounted at --cert-dir %s", certDir)
	var mountedSecret string
	for _, v := range volumes {
		if v := v.(map[string]any); v["name"] == mounted {
			mountedSecret, _, _ = unstructured.NestedString(v, "secret", "secretName")
		}
	}
	assert.Equal(t, secretName, mountedSecret, "the Certificate's Secret is what is mounted at --cert-dir")
}

func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// TestManagerPassesRestrictedPodSecurity creates the manager base for real
// and lets the API server's PodSecurity admission judge it: the namespace
// enforces (and warns about) the restricted standard, so the Deployment is
// judged when it is applied and a Pod of its template when it is created.
// The last case proves the judge is awake: a template without its security
// context is rejected.
func TestManagerPassesRestrictedPodSecurity(t *testing.T) {
	ctx := t.Context()
	rendered := kubectlKustomize(t, "manager")
	res := env.Kubectl(ctx, bytes.NewReader(rendered), "apply", "-f", "-")
	require.NoError(t, res.Err)
	assert.NotContains(t, res.Stderr, "PodSecurity", "the Deployment must not violate the restricted standard")

	ns := &corev1.Namespace{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: operatorNamespace}, ns))
	assert.Equal(t, "restricted", ns.Labels["pod-security.kubernetes.io/enforce"])

	dep := find(t, parseObjects(t, rendered), "Deployment", "apigateway-operator")
	template, _, err := unstructured.NestedMap(dep.Object, "spec", "template")
	require.NoError(t, err)

	t.Cleanup(func() {
		res := env.Kubectl(context.Background(), nil, "delete", "pod", "manager-pod", "-n", operatorNamespace, "--ignore-not-found")
		assert.NoError(t, res.Err)
	})
	res = env.Kubectl(ctx, podManifest(t, "manager-pod", template), "create", "-f", "-")
	require.NoError(t, res.Err, "a Pod of the manager's template must be admitted")
	assert.NotContains(t, res.Stderr, "PodSecurity")

	unstructured.RemoveNestedField(template, "spec", "securityContext")
	containers, _, _ := unstructured.NestedSlice(template, "spec", "containers")
	delete(containers[0].(map[string]any), "securityContext")
	require.NoError(t, unstructured.SetNestedSlice(template, containers, "spec", "containers"))
	res = env.Kubectl(ctx, podManifest(t, "insecure-pod", template), "create", "-f", "-")
	require.Error(t, res.Err, "PodSecurity admission must reject a pod without a security context")
	assert.Contains(t, res.Stderr, `violates PodSecurity "restricted:latest"`)
}

// podManifest is a Pod in the operator's namespace made of a pod template.
func podManifest(t *testing.T, name string, template map[string]any) *bytes.Reader {
	t.Helper()
	metadata, _ := template["metadata"].(map[string]any)
	if metadata == nil {
		metadata = map[string]any{}
	}
	metadata["name"] = name
	metadata["namespace"] = operatorNamespace
	data, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]})
	require.NoError(t, err)
	return bytes.NewReader(data)
}

// TestRBACHasNoWildcards: least privilege, so no rule in manifests/rbac may
// grant every group, resource, verb or name.
func TestRBACHasNoWildcards(t *testing.T) {
	objs := kustomize(t, "rbac")
	require.NotEmpty(t, objs)
	rules := 0
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		list, _, err := unstructured.NestedSlice(o.Object, "rules")
		require.NoError(t, err)
		for i, r := range list {
			rules++
			for _, field := range []string{"apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"} {
				values, _, _ := unstructured.NestedStringSlice(r.(map[string]any), field)
				for _, v := range values {
					assert.NotContains(t, v, "*", "%s %s rule %d: %s", o.GetKind(), o.GetName(), i, field)
				}
			}
		}
	}
	assert.Positive(t, rules, "the RBAC base has roles")
}

// namedOnly are the resources the operator may touch only by name
// (resourceNames): the cluster-scoped admission objects, which every write
// in the cluster goes through, and Secrets.
var namedOnly = map[string]string{
	"mutatingwebhookconfigurations":   "MutatingWebhookConfiguration",
	"validatingwebhookconfigurations": "ValidatingWebhookConfiguration",
	"customresourcedefinitions":       "CustomResourceDefinition",
	"secrets":                         "Secret",
}

// unnamedCreates are the justified exceptions, as "Kind name: resources"
// (comma-separated as the rule lists them): a
// rule granting only create on a namedOnly resource, which resourceNames
// cannot restrict (no name is known when a create is authorized). None:
// the operator's one Secret ships in manifests/rbac instead.
var unnamedCreates = []string{}

// unnamedSecrets is the one justified rule over Secrets without
// resourceNames: the reconciler gets the Secrets routes' basicAuth name
// and creates and patches each gateway's N-basic-auth, names RBAC cannot
// know in advance; never list, watch, update or delete. The operator
// policy (manifests/policy/operator.yaml) keeps its Secret writes to
// those it builds; docs/security.md says what the get costs.
var unnamedSecrets = map[string][]string{"ClusterRole apigateway-operator: secrets": {"create", "get", "patch"}}

// foreignReads are the justified exceptions to naming only objects the
// install ships, as "Kind name: resource/name": objects of others the
// operator only reads. Gateway API's HTTPRoute CRD tells it whether
// HTTPRoutes are served (controller.HTTPRouteCRD).
var foreignReads = []string{"ClusterRole apigateway-operator: customresourcedefinitions/httproutes.gateway.networking.k8s.io"}

// TestRBACNamesWhatItWrites: every rule over a namedOnly resource names
// its objects, grants no create (resourceNames cannot limit it), and names
// only objects the default overlay ships.
func TestRBACNamesWhatItWrites(t *testing.T) {
	shipped := kustomize(t, "default")
	named := 0
	for _, o := range kustomize(t, "rbac") {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		list, _, err := unstructured.NestedSlice(o.Object, "rules")
		require.NoError(t, err)
		for i, raw := range list {
			var r rbacv1.PolicyRule
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(raw.(map[string]any), &r))
			var kinds []string
			for _, res := range r.Resources {
				if kind, ok := namedOnly[res]; ok {
					kinds = append(kinds, kind)
				}
			}
			if len(kinds) == 0 {
				continue
			}
			where := fmt.Sprintf("%s %s rule %d (%v, verbs %v)", o.GetKind(), o.GetName(), i, r.Resources, r.Verbs)
			if len(r.ResourceNames) == 0 {
				rule := o.GetKind() + " " + o.GetName() + ": " + strings.Join(r.Resources, ",")
				exception := slices.Equal(r.Verbs, []string{"create"}) && slices.Contains(unnamedCreates, rule) ||
					unnamedSecrets[rule] != nil && slices.Equal(r.Verbs, unnamedSecrets[rule])
				assert.True(t, exception, "%s: no resourceNames; the operator may touch every %v", where, kinds)
				continue
			}
			named++
			assert.NotContains(t, r.Verbs, "create", "%s: resourceNames cannot restrict create", where)
			// A rule may cover several kinds (the two webhook
			// configuration kinds): each name is an object of one of them.
			for _, name := range r.ResourceNames {
				if slices.Contains(foreignReads, o.GetKind()+" "+o.GetName()+": "+strings.Join(r.Resources, ",")+"/"+name) {
					assert.Subset(t, []string{"get", "list", "watch"}, r.Verbs, "%s: %s is not the operator's to write", where, name)
					continue
				}
				assert.True(t, slices.ContainsFunc(kinds, func(kind string) bool { return ships(shipped, kind, o.GetNamespace(), name) }),
					"%s names %s, which manifests/default does not ship as any of %v", where, name, kinds)
			}
		}
	}
	assert.Positive(t, named, "the RBAC has rules over the named-only resources")
}

// ships reports whether objs hold an object of kind, namespace and name.
func ships(objs []*unstructured.Unstructured, kind, namespace, name string) bool {
	return slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool {
		return o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name
	})
}

// TestNetworkPolicy holds the manager's NetworkPolicy to the Deployment it
// guards: it selects the operator's pods, admits ingress only to the
// webhook port (rule 0, from anywhere until patched: docs/security.md's patch
// point) and to the metrics port from the monitoring namespace, and the
// named ports exist on the container.
func TestNetworkPolicy(t *testing.T) {
	objs := kustomize(t, "default")
	var policy networkingv1.NetworkPolicy
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, objs, "NetworkPolicy", "apigateway-operator").Object, &policy))
	var dep appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, objs, "Deployment", "apigateway-operator").Object, &dep))

	selector, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector)
	require.NoError(t, err)
	assert.True(t, selector.Matches(labels.Set(dep.Spec.Template.Labels)), "the policy selects the operator's pods")
	assert.Equal(t, dep.Namespace, policy.Namespace)
	assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, policy.Spec.PolicyTypes)

	tcp := ptr.To(corev1.ProtocolTCP)
	port := func(name string) []networkingv1.NetworkPolicyPort {
		return []networkingv1.NetworkPolicyPort{{Protocol: tcp, Port: ptr.To(intstr.FromString(name))}}
	}
	assert.Equal(t, []networkingv1.NetworkPolicyIngressRule{
		{Ports: port("webhook")},
		{Ports: port("metrics"), From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"},
		}}}},
	}, policy.Spec.Ingress)

	ports := map[string]int32{}
	for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	assert.Equal(t, int32(9443), ports["webhook"], "the webhook port the policy names (--webhook-port's default)")
	assert.Equal(t, int32(8443), ports["metrics"], "the metrics port the policy names (--metrics-bind-address's default)")
}

// webhookSourcePatch is the patch docs/security.md documents
// for restricting the webhook port to the control plane's addresses.
const webhookSourcePatch = `- op: add
  path: /spec/ingress/0/from
  value:
    - ipBlock:
        cidr: 10.0.0.0/24`

// TestNetworkPolicyPatchPointServerDryRun applies the default overlay with
// the patch of docs/security.md on top through a server-side dry run: rule 0 then
// admits the webhook port from that block only.
func TestNetworkPolicyPatchPointServerDryRun(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(env.Root, "docs", "security.md"))
	require.NoError(t, err)
	assert.Contains(t, string(doc), "path: /spec/ingress/0/from", "docs/security.md documents the patch point")

	applyOperatorNamespace(t)
	dir := t.TempDir()
	base, err := filepath.Rel(dir, manifestDir("default"))
	require.NoError(t, err)
	overlay := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + base + "\n" +
		"patches:\n  - target: {kind: NetworkPolicy, name: apigateway-operator}\n    patch: |-\n" +
		indent(webhookSourcePatch, "      ") + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o600))

	res := env.Kubectl(t.Context(), nil, "apply", "--dry-run=server", "-k", dir)
	require.NoError(t, res.Err)
	assertDryRunOf(t, res.Stdout, "networkpolicy.networking.k8s.io/apigateway-operator")

	res = env.Kubectl(t.Context(), nil, "kustomize", dir)
	require.NoError(t, res.Err)
	var policy networkingv1.NetworkPolicy
	np := find(t, parseObjects(t, []byte(res.Stdout)), "NetworkPolicy", "apigateway-operator")
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(np.Object, &policy))
	assert.Equal(t, []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/24"}}}, policy.Spec.Ingress[0].From)
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// TestSamples applies the valid samples and then each invalid one, with the
// operator's webhooks serving, and checks that each invalid sample fails
// with the error its "# error:" lines document.
func TestSamples(t *testing.T) {
	ctx := t.Context()
	mgr := operatortest.Start(t, env, operatortest.Options{Webhooks: &webhooks.Options{}})
	convertThroughTestServer(t)

	for _, sample := range []string{"apigateway_v1.yaml", "apigateway_v1alpha1.yaml", "apigateway_httproute.yaml"} {
		file := filepath.Join(manifestDir("samples"), sample)
		res := env.Kubectl(ctx, nil, "apply", "-f", file)
		require.NoError(t, res.Err, sample)
		assert.Contains(t, res.Stdout, " created", sample)
		t.Cleanup(func() {
			assert.NoError(t, env.Kubectl(context.Background(), nil, "delete", "-f", file, "--wait").Err)
		})
	}
	// The conflict check reads the webhook's cache: wait until it holds
	// the seed, as it would in a cluster a moment later.
	testenv.AwaitCached(t, mgr.GetClient(), client.ObjectKey{Namespace: "default", Name: "my-app-gateway"})

	legacy := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "legacy-gateway"}, legacy))
	require.Len(t, legacy.Spec.Routes, 1)
	assert.Equal(t, v1.Route{Host: "shop.example.com", Path: "/orders/", PathType: v1.PathTypePrefix,
		BackendService: v1.BackendService{Name: "order-service", Port: 8080}}, legacy.Spec.Routes[0],
		"the v1alpha1 sample reads back as v1 as its comment says")

	invalid, err := filepath.Glob(filepath.Join(manifestDir("samples"), "invalid", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, invalid)
	for _, file := range invalid {
		t.Run(filepath.Base(file), func(t *testing.T) {
			wantErrs, name := documentedErrors(t, file)
			res := env.Kubectl(ctx, nil, "apply", "-f", file)
			require.Error(t, res.Err, "the invalid sample was admitted: %s", res.Stdout)
			for _, want := range wantErrs {
				assert.Contains(t, res.Stderr, want)
			}
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &v1.APIGateway{})
			assert.True(t, apierrors.IsNotFound(err), "nothing is stored: %v", err)
		})
	}
}

// documentedErrors reads a sample's "# error:" lines and the name of the
// object it holds.
func documentedErrors(t *testing.T, file string) ([]string, string) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var wantErrs []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if want, ok := strings.CutPrefix(sc.Text(), "# error: "); ok {
			wantErrs = append(wantErrs, strings.TrimSpace(want))
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, wantErrs, "%s documents its error in a line '# error: <what kubectl prints>'", file)
	objs := parseObjects(t, data)
	require.Len(t, objs, 1, "one object per invalid sample")
	return wantErrs, objs[0].GetName()
}

// convertThroughTestServer points the CRD's conversion webhook at the
// test's webhook server until the test ends, and waits until the API server
// converts through it.
func convertThroughTestServer(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	key := client.ObjectKey{Name: "apigateways.example.com"}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, env.Client.Get(ctx, key, crd))
	before := crd.Spec.Conversion.DeepCopy()
	url := "https://" + net.JoinHostPort(env.Webhooks.LocalServingHost, strconv.Itoa(env.Webhooks.LocalServingPort)) + "/convert"
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: env.Webhooks.LocalServingCAData},
		},
	}
	require.NoError(t, env.Client.Update(ctx, crd))
	t.Cleanup(func() {
		// The other tests apply the overlays onto the CRD as first
		// installed; a retry covers a concurrent status update.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := env.Client.Get(context.Background(), key, crd); err != nil {
				return err
			}
			crd.Spec.Conversion = before
			return env.Client.Update(context.Background(), crd)
		})
		assert.NoError(t, err, "restoring the CRD's conversion")
	})

	// An object stored before the switch reads back through v1alpha1
	// converted only once the API server has loaded the new conversion.
	probe := &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "conversion-probe"},
		Spec: v1.APIGatewaySpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2), Routes: []v1.Route{{
			Host: "probe.example.com", Path: "/probe/", PathType: v1.PathTypePrefix,
			BackendService: v1.BackendService{Name: "probe", Port: 80},
		}}},
	}
	require.NoError(t, env.Client.Create(ctx, probe))
	t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(env.Client.Delete(context.Background(), probe))) })
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		alpha := &v1alpha1.APIGateway{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(probe), alpha); err != nil {
			return false, nil
		}
		return len(alpha.Spec.Routes) == 1 && alpha.Spec.Routes[0].Prefix == "/probe/", nil
	})
	require.NoError(t, err, "the API server never converted through the test's webhook server")
}

// applyOperatorNamespace creates the operator's Namespace for real: a
// server-side dry run of a namespaced object needs its namespace to exist,
// and a dry-run Namespace is never stored.
func applyOperatorNamespace(t *testing.T) {
	t.Helper()
	res := env.Kubectl(t.Context(), nil, "apply", "-f", filepath.Join(manifestDir("manager"), "namespace.yaml"))
	require.NoError(t, res.Err)
}

func manifestDir(name string) string { return filepath.Join(env.Root, "manifests", name) }

// kubectlKustomize renders a kustomization with the kubectl users run.
func kubectlKustomize(t *testing.T, name string) []byte {
	t.Helper()
	res := env.Kubectl(t.Context(), nil, "kustomize", manifestDir(name))
	require.NoError(t, res.Err)
	return []byte(res.Stdout)
}

func kustomize(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	return parseObjects(t, kubectlKustomize(t, name))
}

func parseObjects(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return objs
		}
		require.NoError(t, err)
		if len(o) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: o})
		}
	}
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	require.Failf(t, "object missing", "no %s %s", kind, name)
	return nil
}
