package charts

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// The operator flags the chart's values set: the chart's one spelling of
// each (TestChartFlagsExist holds every flag the chart renders to the
// binary's --help).
const (
	flagOwnership      = "--namespace-ownership"
	flagTrustedProxies = "--gateway-trusted-proxies"
	flagHostRelease    = "--host-release-after"
	flagWatch          = "--watch-namespaces"
	flagStatusFrom     = "--gateway-status-from-namespace"
	flagMetricsFrom    = "--gateway-metrics-from-namespace"
	flagBudget         = "--gateway-disruption-budget"
	flagPush           = "--gateway-push"
)

// WatchedRole names the Role and RoleBinding namespaced mode renders in
// each watched namespace: not the ClusterRole's name, which the release
// namespace's own Role (leases, events, the certificate Secret) holds.
const WatchedRole = "apigateway-operator-watched"

// builtinNamespaced says, for each resource outside the overlays' own CRDs
// that the ClusterRole may name, whether it is namespaced; the CRDs say so
// themselves. TestScopesMatchDiscovery holds it to the API server. A rule
// on a resource missing here fails `make chart` rather than be guessed.
var builtinNamespaced = map[schema.GroupResource]bool{
	{Resource: "configmaps"}: true,
	{Resource: "events"}:     true,
	{Resource: "namespaces"}: false,
	{Resource: "pods"}:       true,
	{Resource: "secrets"}:    true,
	{Resource: "services"}:   true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}:   false,
	{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}: false,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}:               false,
	{Group: "apps", Resource: "deployments"}:                                             true,
	{Group: "apps", Resource: "replicasets"}:                                             true,
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}:                           false,
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}:                    false,
	{Group: "coordination.k8s.io", Resource: "leases"}:                                   true,
	{Group: "discovery.k8s.io", Resource: "endpointslices"}:                              true,
	{Group: "events.k8s.io", Resource: "events"}:                                         true,
	{Group: "gateway.networking.k8s.io", Resource: "gateways"}:                           true,
	{Group: "gateway.networking.k8s.io", Resource: "httproutes"}:                         true,
	{Group: "networking.k8s.io", Resource: "ingressclasses"}:                             false,
	{Group: "networking.k8s.io", Resource: "ingresses"}:                                  true,
	{Group: "networking.k8s.io", Resource: "networkpolicies"}:                            true,
	{Group: "policy", Resource: "poddisruptionbudgets"}:                                  true,
}

// scopes says whether a resource is namespaced: builtinNamespaced, and the
// CRDs among objs.
func scopes(objs []*unstructured.Unstructured) map[schema.GroupResource]bool {
	m := map[schema.GroupResource]bool{}
	for gr, ns := range builtinNamespaced {
		m[gr] = ns
	}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(o.Object, "spec", "names", "plural")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		m[schema.GroupResource{Group: group, Resource: plural}] = scope == "Namespaced"
	}
	return m
}

// splitRule separates one PolicyRule into what stays in the ClusterRole in
// namespaced mode (nil when nothing does) and what moves to the Roles (nil
// when nothing does). A subresource has its resource's scope.
func splitRule(rule map[string]any, namespaced map[schema.GroupResource]bool) (cluster, local map[string]any, err error) {
	resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
	if len(resources) == 0 { // nonResourceURLs
		return rule, nil, nil
	}
	groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
	var clusterRes, localRes []any
	for _, r := range resources {
		base, _, _ := strings.Cut(r, "/")
		if len(groups) == 0 {
			return nil, nil, fmt.Errorf("the ClusterRole's rule on %s names no apiGroups", r)
		}
		var scope []bool
		for _, g := range groups {
			ns, ok := namespaced[schema.GroupResource{Group: g, Resource: base}]
			if !ok {
				return nil, nil, fmt.Errorf("the ClusterRole names %s: say in charts/namespaced.go (builtinNamespaced) whether it is namespaced",
					schema.GroupResource{Group: g, Resource: r})
			}
			if len(scope) > 0 && ns != scope[0] {
				return nil, nil, fmt.Errorf("the ClusterRole's rule on %s spans groups of different scopes: split it", r)
			}
			scope = append(scope, ns)
		}
		if scope[0] {
			localRes = append(localRes, r)
		} else {
			clusterRes = append(clusterRes, r)
		}
	}
	with := func(res []any) map[string]any {
		if len(res) == 0 {
			return nil
		}
		c := deepCopy(rule)
		c["resources"] = res
		return c
	}
	return with(clusterRes), with(localRes), nil
}

func deepCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

// namespacedMode prepares every overlay's ClusterRole for namespaced
// mode: each rule that grants namespaced resources becomes a placeholder
// whose action renders it whole without watchNamespaces and only its
// cluster-scoped part with them. It returns those actions and the
// template of the Role and RoleBinding that each watched namespace gets,
// holding the namespaced parts: the rules manifests/rbac/role.yaml
// generates, never a second list.
func namespacedMode(overlays map[string][]*unstructured.Unstructured) (map[*regexp.Regexp]func(string) string, string, error) {
	base := overlays["default"]
	cr, crb := find(base, "ClusterRole"), find(base, "ClusterRoleBinding")
	if cr == nil || crb == nil {
		return nil, "", errors.New("no ClusterRole or ClusterRoleBinding")
	}
	rules, _, _ := unstructured.NestedSlice(cr.Object, "rules")
	namespaced := scopes(base)
	actions := map[*regexp.Regexp]func(string) string{}
	withPlaceholders := make([]any, len(rules))
	var local []any
	for i, r := range rules {
		rule, _ := r.(map[string]any)
		cluster, l, err := splitRule(rule, namespaced)
		if err != nil {
			return nil, "", err
		}
		withPlaceholders[i] = r
		if l == nil {
			continue
		}
		local = append(local, l)
		p := fmt.Sprintf("__RULE_%d__", i)
		withPlaceholders[i] = p
		whole, err := yamlLines(rule)
		if err != nil {
			return nil, "", err
		}
		clusterPart, err := yamlLines(cluster)
		if err != nil {
			return nil, "", err
		}
		actions[regexp.MustCompile(`(?m)^( *)- `+p+`$`)] = func(in string) string {
			s := "{{- if not .Values.watchNamespaces }}\n" + indent(whole, in)
			if cluster != nil {
				s += "\n{{- else }}\n" + indent(clusterPart, in)
			}
			return s + "\n{{- end }}"
		}
	}
	for name, objs := range overlays {
		o := find(objs, "ClusterRole")
		if o == nil { // monitoring
			continue
		}
		if o != cr && !reflect.DeepEqual(o.Object, cr.Object) {
			return nil, "", fmt.Errorf("manifests/%s must ship manifests/default's ClusterRole", name)
		}
	}
	for _, objs := range overlays {
		if o := find(objs, "ClusterRole"); o != nil {
			if err := unstructured.SetNestedSlice(o.Object, withPlaceholders, "rules"); err != nil {
				return nil, "", err
			}
		}
	}
	tmpl, err := watchedRoles(actions, local, crb)
	return actions, tmpl, err
}

// watchedRoles renders the Role with rules and its RoleBinding to the
// ClusterRoleBinding's subjects, once per watched namespace.
func watchedRoles(actions map[*regexp.Regexp]func(string) string, rules []any, crb *unstructured.Unstructured) (string, error) {
	subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	meta := func() map[string]any {
		m := map[string]any{"name": WatchedRole, "namespace": "__WATCHED_NAMESPACE__"}
		if l := crb.GetLabels(); l != nil {
			m["labels"] = stringMap(l)
		}
		return m
	}
	role := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(), "rules": rules,
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta(),
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": WatchedRole},
		"subjects": subjects,
	}}
	var body strings.Builder
	for _, o := range []*unstructured.Unstructured{role, binding} {
		s, err := render(actions, o, "rbac (the ClusterRole's rules on namespaced resources)")
		if err != nil {
			return "", err
		}
		body.WriteString(s)
	}
	// Inside range, "." is the namespace; the release is $'s.
	s := strings.ReplaceAll(body.String(), "{{ .Release.Namespace }}", "{{ $.Release.Namespace }}")
	return Header + "{{- range .Values.watchNamespaces }}\n" + s + "{{- end }}\n", nil
}

func stringMap(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// yamlLines is v as the lines of a one-item YAML list, unindented.
func yamlLines(v map[string]any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	data, err := yaml.Marshal([]any{v})
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"), nil
}

func indent(lines []string, in string) string {
	return in + strings.Join(lines, "\n"+in)
}

// flagActions render the flags that the values set on the manager.
var flagActions = map[*regexp.Regexp]func(indent string) string{
	regexp.MustCompile(`(?m)^( *)- __TRUSTED_PROXIES__$`):  listFlag(flagTrustedProxies, "gatewayTrustedProxies"),
	regexp.MustCompile(`(?m)^( *)- __WATCH_NAMESPACES__$`): listFlag(flagWatch, "watchNamespaces"),
	regexp.MustCompile(`(?m)^( *)- __HOST_RELEASE_AFTER__$`): func(in string) string {
		return "{{- with .Values.hostReleaseAfter }}\n" + in +
			`- {{ printf "` + flagHostRelease + `=%s" . | quote }}` + "\n{{- end }}"
	},
	// The operator's pods, in the release namespace, read the status port;
	// Prometheus's the metrics port, when its namespace is given.
	regexp.MustCompile(`(?m)^( *)- __GATEWAY_NETWORK_POLICY__$`): func(in string) string {
		return "{{- if .Values.gatewayNetworkPolicy }}\n" + in +
			`- {{ printf "` + flagStatusFrom + `=%s" .Release.Namespace | quote }}` + "\n" +
			"{{- with .Values.gatewayMetricsFromNamespace }}\n" + in +
			`- {{ printf "` + flagMetricsFrom + `=%s" . | quote }}` + "\n{{- end }}\n{{- end }}"
	},
	// On by default in the operator too: only false is written out.
	regexp.MustCompile(`(?m)^( *)- __GATEWAY_DISRUPTION_BUDGET__$`): func(in string) string {
		return "{{- if not .Values.gatewayDisruptionBudget }}\n" + in +
			`- "` + flagBudget + `=false"` + "\n{{- end }}"
	},
	// On by default in the operator too: only false is written out.
	regexp.MustCompile(`(?m)^( *)- __GATEWAY_PUSH__$`): func(in string) string {
		return "{{- if not .Values.gatewayPush }}\n" + in +
			`- "` + flagPush + `=false"` + "\n{{- end }}"
	},
	// Each admission webhook sees only the watched namespaces' objects.
	regexp.MustCompile(`(?m)^( *)namespaceSelector: __WEBHOOK_NAMESPACES__$`): func(in string) string {
		return "{{- with .Values.watchNamespaces }}\n" +
			in + "namespaceSelector:\n" +
			in + "  matchExpressions:\n" +
			in + "  - key: kubernetes.io/metadata.name\n" +
			in + "    operator: In\n" +
			in + fmt.Sprintf("    values: {{- toYaml . | nindent %d }}\n", len(in)+4) +
			"{{- end }}"
	},
}

// listFlag renders flag with the value's list, comma-joined, when the list
// is not empty.
func listFlag(flag, value string) func(string) string {
	return func(in string) string {
		return "{{- with .Values." + value + " }}\n" + in +
			`- {{ printf "` + flag + `=%s" (join "," .) | quote }}` + "\n{{- end }}"
	}
}

// placeholdFlags puts the flag placeholders in the manager's args: the
// ownership flag the overlay writes out becomes the value's, and the list
// flags and --host-release-after, which it leaves to their defaults, are
// appended.
func placeholdFlags(c map[string]any) error {
	args, _ := c["args"].([]any)
	found := false
	for i, a := range args {
		if s, _ := a.(string); strings.HasPrefix(s, flagOwnership+"=") {
			args[i], found = "__NAMESPACE_OWNERSHIP__", true
		}
	}
	if !found {
		return fmt.Errorf("the manager's args do not write out %s", flagOwnership)
	}
	c["args"] = append(args, "__TRUSTED_PROXIES__", "__WATCH_NAMESPACES__", "__HOST_RELEASE_AFTER__", "__GATEWAY_NETWORK_POLICY__", "__GATEWAY_DISRUPTION_BUDGET__", "__GATEWAY_PUSH__")
	return nil
}

// placeholdSelectors marks where each admission webhook's namespaceSelector
// goes; the overlays set none, which the chart would otherwise override.
func placeholdSelectors(o *unstructured.Unstructured) error {
	hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
	for _, h := range hooks {
		m := h.(map[string]any)
		if _, ok := m["namespaceSelector"]; ok {
			return fmt.Errorf("%s sets a namespaceSelector, which namespaced mode would replace", key(o))
		}
		m["namespaceSelector"] = "__WEBHOOK_NAMESPACES__"
	}
	return unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
}

// ownershipOf reads the overlay's --namespace-ownership, the value's default.
func ownershipOf(c map[string]any) string {
	args, _ := c["args"].([]any)
	for _, a := range args {
		if s, _ := a.(string); strings.HasPrefix(s, flagOwnership+"=") {
			return strings.TrimPrefix(s, flagOwnership+"=")
		}
	}
	return ""
}
