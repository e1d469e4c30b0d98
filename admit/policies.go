package admit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/manifests/policy"
)

// The admission policies of manifests/policy, compiled as the API server's
// policy plugins compile them (k8s.io/apiserver's plugin/policy packages)
// and evaluated in process: the offline checks and the tests run the very
// CEL the API server runs, not a Go copy of it. The webhooks do not: the
// warnings policy sends its warnings itself, and the defaults are the
// webhook's from api/v1/defaults, of which the policy is generated.

// compiled is a policy's variables and expressions, compiled once.
type compiled struct {
	compiler *plugincel.CompositedCompiler
}

// newCompiled compiles a policy's variables in the API server's
// environment, with params when the policy has a paramKind.
func newCompiled(vars []admissionregistrationv1.Variable, hasParams bool) (*compiled, plugincel.OptionalVariableDeclarations, error) {
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return nil, plugincel.OptionalVariableDeclarations{}, err
	}
	opts := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	accessors := make([]plugincel.NamedExpressionAccessor, len(vars))
	for i, v := range vars {
		accessors[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(accessors, opts, environment.StoredExpressions)
	return &compiled{compiler: compiler}, opts, nil
}

// request is obj's create as the API server hands it to a policy.
func request(obj *unstructured.Unstructured) (*admission.VersionedAttributes, schema.GroupVersionResource) {
	gvk := v1.GroupVersion.WithKind("APIGateway")
	gvr := v1.GroupVersion.WithResource("apigateways")
	attrs := admission.NewAttributesRecord(obj, nil, gvk, obj.GetNamespace(), obj.GetName(), gvr, "", admission.Create,
		&metav1.CreateOptions{}, false, &user.DefaultInfo{})
	return &admission.VersionedAttributes{Attributes: attrs, VersionedObject: admission.NewLazyObject(runtime.Object(obj)), VersionedKind: gvk}, gvr
}

// DefaultsPolicy is the defaults MutatingAdmissionPolicy, compiled.
type DefaultsPolicy struct {
	c        *compiled
	patchers []patch.Patcher
}

// CompiledDefaults compiles manifests/policy/defaults.yaml once and returns it.
var CompiledDefaults = sync.OnceValues(func() (*DefaultsPolicy, error) {
	p, _, err := policy.DefaultsPolicy()
	if err != nil {
		return nil, err
	}
	c, opts, err := newCompiled(p.Spec.Variables, p.Spec.ParamKind != nil)
	if err != nil {
		return nil, err
	}
	opts.HasPatchTypes = true
	out := &DefaultsPolicy{c: c}
	for _, m := range p.Spec.Mutations {
		if m.PatchType != admissionregistrationv1.PatchTypeJSONPatch || m.JSONPatch == nil {
			return nil, fmt.Errorf("the defaults policy has a %s mutation; only JSONPatch is modelled", m.PatchType)
		}
		evaluator := c.compiler.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, opts, environment.StoredExpressions)
		if errs := evaluator.CompilationErrors(); len(errs) > 0 {
			return nil, fmt.Errorf("compiling the defaults policy: %w", errors.Join(errs...))
		}
		out.patchers = append(out.patchers, patch.NewJSONPatcher(evaluator))
	}
	return out, nil
})

// Apply returns obj, a v1 APIGateway being created, as the policy leaves
// it, with params as the policy's parameter ConfigMap's data and the
// namespace's annotations. An error is the policy failing, which its
// failurePolicy (Ignore) lets the API server go on from, with obj
// unchanged.
func (p *DefaultsPolicy) Apply(ctx context.Context, obj *unstructured.Unstructured, params map[string]string, namespaceAnnotations map[string]string) (*unstructured.Unstructured, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: policy.ParamsName, Namespace: policy.ParamsNamespace}, Data: params}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: obj.GetNamespace(), Annotations: namespaceAnnotations}}
	out := runtime.Object(obj)
	// The variables are evaluated, once, in this context (the plugin's
	// dispatcher does the same per invocation).
	ctx = p.c.compiler.CreateContext(ctx)
	for _, patcher := range p.patchers {
		va, gvr := request(out.(*unstructured.Unstructured))
		patched, err := patcher.Patch(ctx, patch.Request{
			MatchedResource:     gvr,
			VersionedAttributes: va,
			ObjectInterfaces:    admission.NewObjectInterfacesFromScheme(runtime.NewScheme()),
			OptionalVariables:   plugincel.OptionalVariableBindings{VersionedParams: cm},
			Namespace:           ns,
		}, celconfig.RuntimeCELCostBudget)
		if err != nil {
			return obj, err
		}
		out = patched
	}
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		return obj, fmt.Errorf("the defaults policy returned a %T", out)
	}
	return u, nil
}

// WarningsPolicy is the warnings ValidatingAdmissionPolicy, compiled.
type WarningsPolicy struct {
	c           *compiled
	validations []plugincel.ConditionEvaluator
	messages    []string
}

// CompiledWarnings compiles manifests/policy/warnings.yaml once and returns it.
var CompiledWarnings = sync.OnceValues(func() (*WarningsPolicy, error) {
	p, _, err := policy.WarningsPolicy()
	if err != nil {
		return nil, err
	}
	c, opts, err := newCompiled(p.Spec.Variables, p.Spec.ParamKind != nil)
	if err != nil {
		return nil, err
	}
	out := &WarningsPolicy{c: c}
	for _, v := range p.Spec.Validations {
		if v.MessageExpression != "" {
			return nil, errors.New("the warnings policy has a messageExpression; only messages are modelled")
		}
		e := c.compiler.CompileCondition([]plugincel.ExpressionAccessor{&validating.ValidationCondition{Expression: v.Expression}}, opts, environment.StoredExpressions)
		if errs := e.CompilationErrors(); len(errs) > 0 {
			return nil, fmt.Errorf("compiling the warnings policy: %w", errors.Join(errs...))
		}
		out.validations = append(out.validations, e)
		out.messages = append(out.messages, strings.TrimSpace(v.Message))
	}
	return out, nil
})

// Warnings are the warnings the policy sends for obj, a v1 APIGateway
// being created, in the policy's order: the message of each validation
// that is false. An expression that fails to evaluate sends nothing, as
// the policy's failurePolicy (Ignore) has it.
func (p *WarningsPolicy) Warnings(ctx context.Context, obj *unstructured.Unstructured) []string {
	ctx = p.c.compiler.CreateContext(ctx)
	va, gvr := request(obj)
	req := plugincel.CreateAdmissionRequest(va.Attributes, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(va.VersionedKind))
	var out []string
	for i, e := range p.validations {
		results, _, err := e.ForInput(ctx, va, req, plugincel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudget)
		if err != nil || len(results) != 1 || results[0].Error != nil {
			continue
		}
		if allowed, ok := results[0].EvalResult.Value().(bool); ok && !allowed {
			out = append(out, p.messages[i])
		}
	}
	return out
}
