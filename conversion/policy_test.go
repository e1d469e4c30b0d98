package conversion

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	celgo "github.com/google/cel-go/cel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/manifests/policy"
)

// limitsPolicy is manifests/policy/limits.yaml's policy compiled as the
// API server's plugin compiles it, to evaluate its bound in process.
type limitsPolicy struct {
	compiler *plugincel.CompositedCompiler
	bound    plugincel.ConditionEvaluator
}

// intExpression is an expression of type int.
type intExpression string

func (e intExpression) GetExpression() string      { return string(e) }
func (e intExpression) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.IntType} }

func newLimitsPolicy(t *testing.T) *limitsPolicy {
	t.Helper()
	p, _, err := policy.LimitsPolicy()
	require.NoError(t, err)
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	require.NoError(t, err)
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	variables := make([]plugincel.NamedExpressionAccessor, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		variables[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(variables, opts, environment.StoredExpressions)
	bound := compiler.CompileCondition([]plugincel.ExpressionAccessor{intExpression("variables.bound")}, opts, environment.StoredExpressions)
	require.Empty(t, bound.CompilationErrors())
	return &limitsPolicy{compiler: compiler, bound: bound}
}

// boundOf is the policy's bound for gw, evaluated on gw as JSON, as the
// API server holds it; cost is what the evaluation cost, of the API
// server's budget for one policy (celconfig.RuntimeCELCostBudget).
func (p *limitsPolicy) boundOf(t testing.TB, gw *v1.APIGateway) (bound, cost int64) {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(gw)
	require.NoError(t, err)
	// The API server drops the nulls of fields the schema does not make
	// nullable (a nil list encodes as one).
	u := &unstructured.Unstructured{Object: dropNulls(obj).(map[string]any)}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("APIGateway")
	gvk := v1.GroupVersion.WithKind("APIGateway")
	gvr := v1.GroupVersion.WithResource("apigateways")
	attrs := admission.NewAttributesRecord(u, nil, gvk, gw.Namespace, gw.Name, gvr, "", admission.Create,
		&metav1.CreateOptions{}, false, &user.DefaultInfo{})
	ctx := p.compiler.CreateContext(context.Background())
	results, remaining, err := p.bound.ForInput(ctx, &admission.VersionedAttributes{Attributes: attrs, VersionedObject: admission.NewLazyObject(u), VersionedKind: gvk},
		&admissionv1.AdmissionRequest{}, plugincel.OptionalVariableBindings{}, &corev1.Namespace{}, celconfig.RuntimeCELCostBudget)
	require.NoError(t, err)
	require.Len(t, results, 1)
	require.NoError(t, results[0].Error)
	v, ok := results[0].EvalResult.Value().(int64)
	require.True(t, ok, "the bound is %v", results[0].EvalResult)
	return v, celconfig.RuntimeCELCostBudget - remaining
}

// dropNulls is v without the null members of its objects, at any depth.
func dropNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
			} else {
				v[k] = dropNulls(e)
			}
		}
	case []any:
		for i, e := range v {
			v[i] = dropNulls(e)
		}
	}
	return v
}

// TestPolicyBoundIsAboveTheExactSize measures how far the limits policy's
// CEL bound is above the exact size of the v1alpha1 form's annotations
// (V1alpha1AnnotationBytes) for the largest gateways the schema admits,
// which it must not refuse (TestV1alpha1AnnotationBytesBound holds it
// above the exact size for random objects), and what it costs of the API
// server's CEL budget.
func TestPolicyBoundIsAboveTheExactSize(t *testing.T) {
	p := newLimitsPolicy(t)
	for name, gw := range largestGateways() {
		t.Run(name, func(t *testing.T) {
			exact, err := V1alpha1AnnotationBytes(gw)
			require.NoError(t, err)
			bound, cost := p.boundOf(t, gw)
			t.Logf("exact %d bytes, bound %d (%d more), CEL cost %d of %d", exact, bound, bound-int64(exact), cost, celconfig.RuntimeCELCostBudget)
			assert.GreaterOrEqual(t, bound, int64(exact))
			assert.LessOrEqual(t, bound-int64(exact), int64(6<<10), "the slack, which the policy refuses and the webhook admits")
		})
	}
}

// largestGateways are the gateways with the most v1-only data the v1
// schema admits, with the longest names.
func largestGateways() map[string]*v1.APIGateway {
	long := func(n int, c string) string { return strings.Repeat(c, n) }
	host := func(i int) string { return fmt.Sprintf("h%03d.%s.example.com", i, long(60, "a")) }
	routes := func(pt v1.PathType) []v1.Route {
		var rs []v1.Route
		for i := range 100 {
			rs = append(rs, hubRoute(host(i), fmt.Sprintf("/%03d/%s", i, long(1000, "p")), pt, "svc", 80))
		}
		return rs
	}
	tls := func() []v1.GatewayTLS {
		var ts []v1.GatewayTLS
		for i := range 16 {
			t := v1.GatewayTLS{SecretName: fmt.Sprintf("s%02d-%s", i, long(240, "s"))}
			for j := range 100 {
				t.Hosts = append(t.Hosts, host((i*100+j)%100))
			}
			ts = append(ts, t)
		}
		return ts
	}
	parents := func() *v1.Exposure {
		e := &v1.Exposure{Type: v1.ExposureHTTPRoute, HTTPRoute: &v1.HTTPRouteExposure{}}
		for i := range 32 {
			e.HTTPRoute.ParentRefs = append(e.HTTPRoute.ParentRefs, v1.ParentGatewayReference{
				Name: fmt.Sprintf("g%02d-%s", i, long(240, "g")), Namespace: ptr.To(long(63, "n")), SectionName: ptr.To(long(253, "l"))})
		}
		return e
	}
	return map[string]*v1.APIGateway{
		"100 long Exact routes": hubGateway(nil, v1.APIGatewaySpec{Routes: routes(v1.PathTypeExact)}),
		"16 TLS entries of 100 hosts": hubGateway(nil, v1.APIGatewaySpec{Routes: routes(v1.PathTypePrefix), TLS: tls(),
			IngressClassName: ptr.To(long(253, "c")),
			Resources: &corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.5")},
				Claims:   []corev1.ResourceClaim{{Name: "gpu", Request: "a"}}}}),
		"32 parent Gateways": hubGateway(nil, v1.APIGatewaySpec{Routes: routes(v1.PathTypeExact), Exposure: parents()}),
	}
}

// LimitsPolicyBound is the limits policy's bound for gw, for the tests
// of package conversion_test.
func LimitsPolicyBound(t *testing.T, gw *v1.APIGateway) int {
	t.Helper()
	bound, _ := newLimitsPolicy(t).boundOf(t, gw)
	return int(bound)
}

// TestPolicyLimitIsTheOperators: the policy refuses above
// MaxV1alpha1AnnotationBytes, the limit the webhook holds to.
func TestPolicyLimitIsTheOperators(t *testing.T) {
	p, b, err := policy.LimitsPolicy()
	require.NoError(t, err)
	require.Len(t, p.Spec.Validations, 1)
	assert.Equal(t, "variables.bound <= "+strconv.Itoa(MaxV1alpha1AnnotationBytes), p.Spec.Validations[0].Expression)
	assert.Contains(t, p.Spec.Validations[0].MessageExpression, "over the "+strconv.Itoa(MaxV1alpha1AnnotationBytes)+" the operator allows")
	assert.Equal(t, p.Name, b.Spec.PolicyName)
}
