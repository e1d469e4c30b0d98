package offline

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/manifests/webhook"
)

// mutatingMatcher compiles the mutating webhook's matchConditions from the
// generated configuration embedded in the binary, as the API server's
// webhook plugin does (generic/webhook.go and accessors.go): the webhook is
// called only for objects they match, and an expression that fails to
// evaluate is the webhook's failurePolicy's to decide.
func mutatingMatcher() (matchconditions.Matcher, error) {
	hook, err := mutatingWebhook(webhook.Configurations)
	if err != nil {
		return nil, err
	}
	expressions := make([]plugincel.ExpressionAccessor, len(hook.MatchConditions))
	for i, c := range hook.MatchConditions {
		expressions[i] = &matchconditions.MatchCondition{Name: c.Name, Expression: c.Expression}
	}
	compiler := plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	filter := compiler.CompileCondition(expressions, plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.StoredExpressions)
	return matchconditions.NewMatcher(filter, hook.FailurePolicy, "webhook", "admit", hook.Name), nil
}

// mutatingWebhook is the one webhook of the MutatingWebhookConfiguration in
// data.
func mutatingWebhook(data []byte) (*admissionregistrationv1.MutatingWebhook, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the embedded webhook configurations have no MutatingWebhookConfiguration")
		}
		if err != nil {
			return nil, err
		}
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := yaml.Unmarshal(doc, cfg); err != nil {
			return nil, fmt.Errorf("reading the embedded webhook configurations: %w", err)
		}
		if cfg.Kind != "MutatingWebhookConfiguration" {
			continue
		}
		if len(cfg.Webhooks) != 1 {
			return nil, fmt.Errorf("the embedded MutatingWebhookConfiguration has %d webhooks, want 1", len(cfg.Webhooks))
		}
		return &cfg.Webhooks[0], nil
	}
}

// callsMutatingWebhook reports whether the API server would call the
// mutating webhook for a create of gw, the object in its v1 form.
func (c *Checker) callsMutatingWebhook(ctx context.Context, gw *unstructured.Unstructured) (bool, error) {
	gvk := v1.GroupVersion.WithKind(kindAPIGateway)
	gvr := v1.GroupVersion.WithResource("apigateways")
	attrs := admission.NewAttributesRecord(gw, nil, gvk, gw.GetNamespace(), gw.GetName(), gvr, "", admission.Create,
		&metav1.CreateOptions{}, true, &user.DefaultInfo{})
	result := c.matcher.Match(ctx, &admission.VersionedAttributes{Attributes: attrs, VersionedObject: admission.NewLazyObject(gw), VersionedKind: gvk}, nil, nil)
	return result.Matches, result.Error
}
