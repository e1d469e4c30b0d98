package admit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"

	"example.com/apigateway-operator/manifests/webhook"
)

// mutatingMatcher compiles, once, the mutating webhook's matchConditions
// from the generated configuration embedded in the binary, as the API
// server's webhook plugin does (generic/webhook.go and accessors.go).
var mutatingMatcher = sync.OnceValues(func() (matchconditions.Matcher, error) {
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
})

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

// CallsMutatingWebhook reports whether the API server would call the
// mutating webhook for a create of obj, an APIGateway in its v1 form: the
// webhook's matchConditions, evaluated as the API server does. An error is
// an expression that failed, which the webhook's failurePolicy decides.
func CallsMutatingWebhook(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	matcher, err := mutatingMatcher()
	if err != nil {
		return false, err
	}
	va, _ := request(obj)
	result := matcher.Match(ctx, va, nil, nil)
	return result.Matches, result.Error
}
