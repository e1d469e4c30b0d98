package offline

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/manifests/policy"
	"example.com/apigateway-operator/webhooks"
)

// defaultsPolicy is the MutatingAdmissionPolicy of manifests/policy,
// compiled as the API server's plugin compiles one
// (k8s.io/apiserver/.../policy/mutating/compilation.go), so the offline
// checks default what the API server defaults, from the very CEL it runs:
// also an object that no Go type can decode.
type defaultsPolicy struct {
	compiler *plugincel.CompositedCompiler
	patchers []patch.Patcher
}

func newDefaultsPolicy() (*defaultsPolicy, error) {
	p, _, err := policy.DefaultsPolicy()
	if err != nil {
		return nil, err
	}
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return nil, err
	}
	opts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
	variables := make([]plugincel.NamedExpressionAccessor, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		variables[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(variables, opts, environment.StoredExpressions)
	opts.HasPatchTypes = true
	out := &defaultsPolicy{compiler: compiler}
	for _, m := range p.Spec.Mutations {
		if m.PatchType != admissionregistrationv1.PatchTypeJSONPatch || m.JSONPatch == nil {
			return nil, fmt.Errorf("the embedded defaults policy has a %s mutation; only JSONPatch is modelled", m.PatchType)
		}
		evaluator := compiler.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, opts, environment.StoredExpressions)
		if errs := evaluator.CompilationErrors(); len(errs) > 0 {
			return nil, fmt.Errorf("compiling the embedded defaults policy: %v", errs)
		}
		out.patchers = append(out.patchers, patch.NewJSONPatcher(evaluator))
	}
	return out, nil
}

// apply returns u, a v1 object being created, as the policy leaves it, with
// the operator's defaults d in its parameters (d's image already resolved
// from the namespace's annotation, which the policy would read itself).
// An error is the policy failing, which its failurePolicy (Ignore) lets
// the API server go on from, with u unchanged.
func (p *defaultsPolicy) apply(ctx context.Context, u *unstructured.Unstructured, d webhooks.Defaults) (*unstructured.Unstructured, error) {
	gvk := v1.GroupVersion.WithKind(kindAPIGateway)
	gvr := v1.GroupVersion.WithResource("apigateways")
	params := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: policy.ParamsName, Namespace: policy.ParamsNamespace},
		Data: webhooks.PolicyParamsData(d)}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.GetNamespace()}}
	obj := runtime.Object(u)
	// The variables are evaluated, once, in this context (the plugin's
	// dispatcher does the same per invocation).
	ctx = p.compiler.CreateContext(ctx)
	for _, patcher := range p.patchers {
		attrs := admission.NewAttributesRecord(obj, nil, gvk, u.GetNamespace(), u.GetName(), gvr, "", admission.Create,
			&metav1.CreateOptions{}, false, &user.DefaultInfo{})
		patched, err := patcher.Patch(ctx, patch.Request{
			MatchedResource:     gvr,
			VersionedAttributes: &admission.VersionedAttributes{Attributes: attrs, VersionedObject: admission.NewLazyObject(obj), VersionedKind: gvk},
			ObjectInterfaces:    admission.NewObjectInterfacesFromScheme(runtime.NewScheme()),
			OptionalVariables:   plugincel.OptionalVariableBindings{VersionedParams: params},
			Namespace:           ns,
		}, celconfig.RuntimeCELCostBudget)
		if err != nil {
			return u, err
		}
		obj = patched
	}
	out, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return u, fmt.Errorf("the defaults policy returned a %T", obj)
	}
	return out, nil
}
