package policy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"

	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/manifests/policy"
)

// These tests evaluate hosts.yaml in process, compiled as the API server's
// ValidatingAdmissionPolicy plugin compiles a policy (compilePolicy in
// k8s.io/apiserver's plugin/policy/validating): the CEL form of
// validation.Covers against every case of its testdata, and the verdicts.
// manifests/hosts_policy_test.go runs the same policies in a real API
// server.

const operator = "system:serviceaccount:apigateway-operator-system:apigateway-operator"

// compiledPolicy is one policy of hosts.yaml, compiled twice: whole, as
// the plugin does, and its variables alone, to evaluate one of them.
type compiledPolicy struct {
	policy    *admissionregistrationv1.ValidatingAdmissionPolicy
	validator validating.Validator
	variables *plugincel.CompositedCompiler
}

func hostsPolicies(t *testing.T) (claims, domains compiledPolicy) {
	t.Helper()
	ps, bs, err := policy.HostsPolicies()
	require.NoError(t, err)
	for i, b := range bs {
		assert.Equal(t, ps[i].Name, b.Spec.PolicyName)
		assert.Equal(t, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, b.Spec.ValidationActions)
		require.NotNil(t, b.Spec.ParamRef)
		assert.Equal(t, &metav1.LabelSelector{}, b.Spec.ParamRef.Selector, "every param object")
		assert.Equal(t, admissionregistrationv1.AllowAction, *b.Spec.ParamRef.ParameterNotFoundAction)
		assert.Equal(t, admissionregistrationv1.Fail, *ps[i].Spec.FailurePolicy)
	}
	assert.Equal(t, "HostClaim", ps[0].Spec.ParamKind.Kind)
	assert.Equal(t, "DomainBinding", ps[1].Spec.ParamKind.Kind)
	return compile(t, ps[0]), compile(t, ps[1])
}

// compile is the plugin's compilePolicy, less audit annotations (the
// policies have none).
func compile(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy) compiledPolicy {
	t.Helper()
	require.Empty(t, p.Spec.AuditAnnotations)
	newCompiler := func() *plugincel.CompositedCompiler {
		c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
		require.NoError(t, err)
		vars := make([]plugincel.NamedExpressionAccessor, len(p.Spec.Variables))
		for i, v := range p.Spec.Variables {
			vars[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
		}
		c.CompileAndStoreVariables(vars, options(true), environment.StoredExpressions)
		return c
	}
	c := newCompiler()
	conditions := make([]plugincel.ExpressionAccessor, len(p.Spec.MatchConditions))
	for i := range p.Spec.MatchConditions {
		conditions[i] = (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i])
	}
	validations := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	validator := validating.NewValidator(
		c.CompileCondition(validations, options(true), environment.StoredExpressions),
		matchconditions.NewMatcher(c.CompileCondition(conditions, options(true), environment.StoredExpressions), p.Spec.FailurePolicy, "policy", "validate", p.Name),
		c.CompileCondition(nil, options(true), environment.StoredExpressions),
		c.CompileCondition(messages, options(false), environment.StoredExpressions),
		p.Spec.FailurePolicy, nil)
	require.NoError(t, validator.(interface{ CompileError() error }).CompileError())
	return compiledPolicy{policy: p, validator: validator, variables: newCompiler()}
}

func options(authorizer bool) plugincel.OptionalVariableDeclarations {
	return plugincel.OptionalVariableDeclarations{HasParams: true, HasAuthorizer: authorizer}
}

// write is one request the policies see.
type write struct {
	user      string
	operation admission.Operation
	obj, old  *unstructured.Unstructured
}

func (w write) attributes() (*admission.VersionedAttributes, schema.GroupVersionResource) {
	gvk := w.obj.GroupVersionKind()
	gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"}
	var old runtime.Object
	if w.old != nil {
		old = w.old
	}
	op := w.operation
	if op == "" {
		op = admission.Create
	}
	attrs := admission.NewAttributesRecord(w.obj, old, gvk, w.obj.GetNamespace(), w.obj.GetName(), gvr, "", op, nil, false,
		&user.DefaultInfo{Name: w.user})
	va := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: admission.NewLazyObject(w.obj)}
	if old != nil {
		va.VersionedOldObject = admission.NewLazyObject(old)
	}
	return va, gvr
}

// refusals are the messages of the policy's denials of w with param.
func (c compiledPolicy) refusals(t *testing.T, w write, param *unstructured.Unstructured) []string {
	t.Helper()
	va, gvr := w.attributes()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.obj.GetNamespace()}}
	result := c.validator.Validate(t.Context(), gvr, va, param, ns, celconfig.RuntimeCELCostBudget, nil)
	var out []string
	for _, d := range result.Decisions {
		require.NotEqual(t, validating.EvalError, d.Evaluation, "%s: %s", c.policy.Name, d.Message)
		if d.Action == validating.ActionDeny {
			out = append(out, d.Message)
		}
	}
	return out
}

// matchCondition is the expression of the policy's matchCondition name.
func (c compiledPolicy) matchCondition(t *testing.T, name string) string {
	t.Helper()
	for _, m := range c.policy.Spec.MatchConditions {
		if m.Name == name {
			return m.Expression
		}
	}
	t.Fatalf("%s has no matchCondition %s", c.policy.Name, name)
	return ""
}

// holds evaluates condition, a boolean CEL expression over the policy's
// variables, for w with param, and returns it with the evaluation's cost.
func (c compiledPolicy) holds(t *testing.T, condition string, w write, param *unstructured.Unstructured) (bool, int64) {
	t.Helper()
	e := c.variables.CompileCondition([]plugincel.ExpressionAccessor{&validating.ValidationCondition{Expression: condition}},
		options(false), environment.StoredExpressions)
	require.Empty(t, e.CompilationErrors())
	va, gvr := w.attributes()
	req := plugincel.CreateAdmissionRequest(va.Attributes, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(va.VersionedKind))
	results, left, err := e.ForInput(t.Context(), va, req, plugincel.OptionalVariableBindings{VersionedParams: param}, nil, celconfig.RuntimeCELCostBudget)
	require.NoError(t, err)
	require.Len(t, results, 1)
	require.NoError(t, results[0].Error)
	return results[0].EvalResult.Value().(bool), celconfig.RuntimeCELCostBudget - left
}

// hostClaim gives host to team-a.
func hostClaim(host string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "HostClaim", "metadata": map[string]any{"name": "claim"},
		"spec": map[string]any{"host": host, "namespace": "team-a"},
	}}
}

func domainBinding(domain string, namespaces ...string) *unstructured.Unstructured {
	ns := make([]any, len(namespaces))
	for i, n := range namespaces {
		ns[i] = n
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "DomainBinding", "metadata": map[string]any{"name": "binding"},
		"spec": map[string]any{"domain": domain, "namespaces": ns},
	}}
}

func httpRoute(namespace string, hostnames ...string) *unstructured.Unstructured {
	spec := map[string]any{"parentRefs": []any{map[string]any{"name": "shared"}}}
	if len(hostnames) > 0 {
		hs := make([]any, len(hostnames))
		for i, h := range hostnames {
			hs[i] = h
		}
		spec["hostnames"] = hs
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": "route", "namespace": namespace}, "spec": spec,
	}}
}

// ingress has a rule per host in rules ("" for a rule without a host) and
// one TLS entry with tlsHosts.
func ingress(namespace string, rules []string, tlsHosts ...string) *unstructured.Unstructured {
	backend := map[string]any{"service": map[string]any{"name": "web", "port": map[string]any{"number": int64(80)}}}
	var rs []any
	for _, h := range rules {
		r := map[string]any{"http": map[string]any{"paths": []any{map[string]any{"path": "/", "pathType": "Prefix", "backend": backend}}}}
		if h != "" {
			r["host"] = h
		}
		rs = append(rs, r)
	}
	spec := map[string]any{"rules": rs}
	if len(tlsHosts) > 0 {
		hs := make([]any, len(tlsHosts))
		for i, h := range tlsHosts {
			hs[i] = h
		}
		spec["tls"] = []any{map[string]any{"hosts": hs, "secretName": "tls"}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"name": "ingress", "namespace": namespace}, "spec": spec,
	}}
}

type coverCase struct {
	Owned  string `json:"owned"`
	Name   string `json:"name"`
	Covers bool   `json:"covers"`
}

// TestCoversCEL holds each CEL form of validation.Covers in hosts.yaml to
// every case of its testdata (which TestCovers holds the Go function to):
// each policy's first pass (a matchCondition), a claim's "below" (the
// claim covers the name), a claim's "above" (the name covers the claim)
// and a binding's "below" (its domain covers the name, or the name is a
// wildcard covering the domain).
func TestCoversCEL(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "api", "v1", "validation", "testdata", "covers.json"))
	require.NoError(t, err)
	var cases []coverCase
	require.NoError(t, json.Unmarshal(raw, &cases))
	require.NotEmpty(t, cases)
	claims, domains := hostsPolicies(t)
	claimsFirstPass, domainsFirstPass := claims.matchCondition(t, "another-namespace-overlaps"), domains.matchCondition(t, "outside-and-covers")
	for _, tc := range cases {
		require.Equal(t, tc.Covers, validation.Covers(tc.Owned, tc.Name), "the testdata and validation.Covers disagree")
		overlap := validation.Overlap(tc.Owned, tc.Name)
		// A binding keeps a namespace off the names below its domain, and
		// off a wildcard that would serve one of them
		// (ownership.Records.BoundOut).
		bound := tc.Covers || (validation.IsWildcard(tc.Name) && validation.Covers(tc.Name, tc.Owned))
		got, _ := claims.holds(t, claimsFirstPass, write{user: "alice", obj: httpRoute("team-b", tc.Name)}, hostClaim(tc.Owned))
		assert.Equal(t, overlap, got, "a claim on %s overlaps %s (matchCondition)", tc.Owned, tc.Name)
		got, _ = claims.holds(t, claimsFirstPass, write{user: "alice", obj: httpRoute("team-b", tc.Owned)}, hostClaim(tc.Name))
		assert.Equal(t, overlap, got, "a claim on %s overlaps %s (matchCondition)", tc.Name, tc.Owned)
		got, _ = domains.holds(t, domainsFirstPass, write{user: "alice", obj: httpRoute("team-b", tc.Name)}, domainBinding(tc.Owned, "team-a"))
		assert.Equal(t, bound, got, "a binding of %s covers %s (matchCondition)", tc.Owned, tc.Name)
		got, _ = claims.holds(t, "variables.below == [variables.added[0]]", write{obj: httpRoute("team-b", tc.Name)}, hostClaim(tc.Owned))
		assert.Equal(t, tc.Covers, got, "a claim on %s covers %s (variables.below)", tc.Owned, tc.Name)
		got, _ = claims.holds(t, "variables.above == [variables.added[0]]", write{obj: httpRoute("team-b", tc.Owned)}, hostClaim(tc.Name))
		assert.Equal(t, tc.Covers, got, "%s covers a claim on %s (variables.above)", tc.Owned, tc.Name)
		got, _ = domains.holds(t, "variables.below == [variables.added[0]]", write{obj: httpRoute("team-b", tc.Name)}, domainBinding(tc.Owned, "team-a"))
		assert.Equal(t, bound, got, "a binding of %s keeps off %s (variables.below)", tc.Owned, tc.Name)
	}
}

// TestHostClaimVerdicts: what the HostClaim policy refuses, and says.
func TestHostClaimVerdicts(t *testing.T) {
	claims, _ := hostsPolicies(t)
	shop := hostClaim("shop.example.com")
	cases := map[string]verdict{
		"the host, from another namespace": {write{obj: httpRoute("team-b", "shop.example.com")},
			"host shop.example.com belongs to another namespace: only that namespace may route it"},
		"a name below it": {write{obj: httpRoute("team-b", "api.example.com", "login.shop.example.com")},
			"host login.shop.example.com belongs to another namespace (it is below shop.example.com, which that namespace owns)"},
		"a wildcard below it": {write{obj: httpRoute("team-b", "*.shop.example.com")}, "host *.shop.example.com belongs to another namespace"},
		"a wildcard over it": {write{obj: httpRoute("team-b", "*.example.com")},
			"host *.example.com covers shop.example.com, which belongs to another namespace"},
		"no hostnames":                 {write{obj: httpRoute("team-b")}, "an HTTPRoute without hostnames takes every host that reaches it"},
		"the owner":                    {write{obj: httpRoute("team-a", "shop.example.com", "*.shop.example.com")}, ""},
		"the owner, without hostnames": {write{obj: httpRoute("team-a")}, ""},
		"other hosts":                  {write{obj: httpRoute("team-b", "myshop.example.com", "shop.example.com.evil.io", "*.api.example.com")}, ""},
		"the domain above it": {write{obj: ingress("team-b", []string{"example.com"})},
			"host example.com covers shop.example.com, which belongs to another namespace"},
		"the operator": {write{user: operator, obj: httpRoute("team-b", "shop.example.com")}, ""},
		"an Ingress rule": {write{obj: ingress("team-b", []string{"www.example.com", "login.shop.example.com"})},
			"host login.shop.example.com belongs to another namespace"},
		"an Ingress's TLS hosts": {write{obj: ingress("team-b", []string{"www.example.com"}, "www.example.com", "shop.example.com")},
			"host shop.example.com belongs to another namespace"},
		"an Ingress rule without a host": {write{obj: ingress("team-b", []string{""})},
			"an Ingress rule without a host, or a defaultBackend, takes every host"},
		"the owner's Ingress": {write{obj: ingress("team-a", []string{"shop.example.com", ""}, "shop.example.com")}, ""},
		"an update that keeps its names": {write{operation: admission.Update,
			obj: httpRoute("team-b", "shop.example.com", "www.example.com"), old: httpRoute("team-b", "shop.example.com")}, ""},
		"an update that keeps no hostnames": {write{operation: admission.Update, obj: httpRoute("team-b"), old: httpRoute("team-b")}, ""},
		"an update that adds one": {write{operation: admission.Update,
			obj: httpRoute("team-b", "www.example.com", "x.shop.example.com"), old: httpRoute("team-b", "www.example.com")},
			"host x.shop.example.com belongs to another namespace"},
		"an update that drops every hostname": {write{operation: admission.Update,
			obj: httpRoute("team-b"), old: httpRoute("team-b", "www.example.com")}, "an HTTPRoute without hostnames"},
	}
	checkVerdicts(t, claims, shop, cases)
}

// TestDomainBindingVerdicts: what the DomainBinding policy refuses. Each
// evaluation sees one binding: a name under two bindings is refused when
// either leaves the namespace out.
func TestDomainBindingVerdicts(t *testing.T) {
	_, domains := hostsPolicies(t)
	corp := domainBinding("corp.example.com", "team-a", "team-c")
	cases := map[string]verdict{
		"the domain": {write{obj: httpRoute("team-b", "corp.example.com")},
			"host corp.example.com is in corp.example.com, which a DomainBinding reserves for other namespaces"},
		"a wildcard below it": {write{obj: ingress("team-b", []string{"*.corp.example.com"})}, "host *.corp.example.com is in corp.example.com"},
		"a TLS host below it": {write{obj: ingress("team-b", []string{"www.example.com"}, "api.corp.example.com")}, "host api.corp.example.com is in corp.example.com"},
		"no hostnames":        {write{obj: httpRoute("team-b")}, "an HTTPRoute without hostnames takes every host that reaches it, and a DomainBinding reserves corp.example.com"},
		"a wildcard over it":  {write{obj: httpRoute("team-b", "*.example.com")}, "host *.example.com is in corp.example.com"},
		"a bound namespace":   {write{obj: httpRoute("team-c", "api.corp.example.com")}, ""},
		"outside the domain":  {write{obj: httpRoute("team-b", "corp.example.com.evil.io", "notcorp.example.com")}, ""},
		"the operator":        {write{user: operator, obj: httpRoute("team-b", "corp.example.com")}, ""},
	}
	checkVerdicts(t, domains, corp, cases)
}

// verdict is a write and what the policy answers: a refusal containing
// want, or none when want is "".
type verdict struct {
	w    write
	want string
}

// checkVerdicts runs each case against p with param, as alice unless the
// case names a user. A refusal never names the owner (team-a).
func checkVerdicts(t *testing.T, p compiledPolicy, param *unstructured.Unstructured, cases map[string]verdict) {
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.w.user == "" {
				tc.w.user = "alice"
			}
			got := p.refusals(t, tc.w, param)
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1, "one refusal")
			assert.Contains(t, got[0], tc.want)
			assert.NotContains(t, got[0], "team-a", "a refusal never names the owner")
		})
	}
}

// TestHostsPolicyCost measures the CEL cost of one evaluation (one param
// object) for the largest HTTPRoute the schema admits (16 hostnames of 253
// characters) on an update that changes every one: the figure
// docs/security.md gives. Each param object is evaluated with its own
// budget (celconfig.RuntimeCELCostBudget), so the number of HostClaims
// never reaches a cost limit; it costs time, linearly.
func TestHostsPolicyCost(t *testing.T) {
	claims, _ := hostsPolicies(t)
	// 16 names of 249 characters each.
	long := func(prefix string) []string {
		var out []string
		for i := range 16 {
			l := strings.Repeat("a", 60)
			out = append(out, fmt.Sprintf("%s%02d-%s.%s.%s.%s.example.com", prefix, i, strings.Repeat("a", 50), l, l, l))
		}
		return out
	}
	w := write{operation: admission.Update, obj: httpRoute("team-b", long("n")...), old: httpRoute("team-b", long("o")...)}
	for _, h := range w.obj.Object["spec"].(map[string]any)["hostnames"].([]any) {
		require.LessOrEqual(t, len(h.(string)), 253)
	}
	var total int64
	for _, v := range claims.policy.Spec.Validations {
		_, cost := claims.holds(t, v.Expression, w, hostClaim("shop.example.com"))
		total += cost
	}
	t.Logf("CEL cost of one HostClaim's evaluation, 16 long hostnames replaced: %d (per-evaluation budget %d)", total, celconfig.RuntimeCELCostBudget)
	assert.Less(t, total, int64(celconfig.PerCallLimit)/100, "an evaluation stays far within its budget")
}
