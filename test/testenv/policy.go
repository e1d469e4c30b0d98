package testenv

import (
	"bytes"
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/apigateway-operator/manifests/policy"
)

// installDefaultsPolicy installs the manifests' defaults policy and its
// binding, with the parameter ConfigMap in its namespace holding data, and
// waits until the API server applies it: its policy plugin learns the
// CRD's schema asynchronously and answers 503 meanwhile.
func (e *Env) installDefaultsPolicy(ctx context.Context, data map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: policy.ParamsNamespace}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: policy.ParamsName, Namespace: policy.ParamsNamespace}, Data: data}
	if err := e.Client.Create(ctx, cm); err != nil {
		return fmt.Errorf("creating the defaults policy's parameters: %w", err)
	}
	var mutating admissionregistrationv1.MutatingAdmissionPolicy
	var binding admissionregistrationv1.MutatingAdmissionPolicyBinding
	decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(policy.Defaults), 4096)
	for _, obj := range []client.Object{&mutating, &binding} {
		if err := decoder.Decode(obj); err != nil {
			return fmt.Errorf("reading manifests/policy/defaults.yaml: %w", err)
		}
		if err := e.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("installing the defaults policy: %w", err)
		}
	}
	return e.awaitDefaultsPolicy(ctx)
}

// awaitDefaultsPolicy waits (bounded) until a dry-run create of a gateway
// with an upper-case host comes back with it lower-cased: the one default
// that needs no parameter, so this works before the operator has written
// its flags.
func (e *Env) awaitDefaultsPolicy(ctx context.Context) error {
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "APIGateway",
		"metadata": map[string]any{"name": "policy-probe", "namespace": policy.ParamsNamespace},
		"spec": map[string]any{"image": "nginx:1.27", "replicas": int64(1), "routes": []any{map[string]any{
			"host": "Policy-Probe.example.com.", "backendService": map[string]any{"name": "svc", "port": int64(80)},
		}}},
	}}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		obj := probe.DeepCopy()
		last = e.Client.Create(ctx, obj, client.DryRunAll)
		if last != nil {
			// 503 until the plugin knows the CRD; then refused (an
			// upper-case host) until the policy is active.
			return false, nil
		}
		routes, _, _ := unstructured.NestedSlice(obj.Object, "spec", "routes")
		return len(routes) == 1 && routes[0].(map[string]any)["host"] == "policy-probe.example.com", nil
	})
	if err != nil {
		return fmt.Errorf("the API server did not apply the defaults policy within a minute (last answer: %v)", last)
	}
	return nil
}
