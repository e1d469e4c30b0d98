package testenv

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/apigateway-operator/manifests/policy"
)

// installPolicies installs the manifests' admission policies: the defaults
// policy and its binding, with the parameter ConfigMap in its namespace
// holding data, the warnings policy and the limits policy; it waits until
// the API server applies the first two: its policy plugins learn the
// CRD's schema asynchronously and answer 503 meanwhile.
func (e *Env) installPolicies(ctx context.Context, data map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: policy.ParamsNamespace}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: policy.ParamsName, Namespace: policy.ParamsNamespace}, Data: data}
	if err := e.Client.Create(ctx, cm); err != nil {
		return fmt.Errorf("creating the defaults policy's parameters: %w", err)
	}
	mutating, mutatingBinding, err := policy.DefaultsPolicy()
	if err != nil {
		return err
	}
	validating, validatingBinding, err := policy.WarningsPolicy()
	if err != nil {
		return err
	}
	limits, limitsBinding, err := policy.LimitsPolicy()
	if err != nil {
		return err
	}
	for _, obj := range []client.Object{mutating, mutatingBinding, validating, validatingBinding, limits, limitsBinding} {
		if err := e.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("installing %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	return e.awaitPolicies(ctx)
}

// awaitPolicies waits (bounded) until a dry-run create of a gateway with an
// upper-case host comes back with it lower-cased (the one default that
// needs no parameter, so this works before the operator has written its
// flags) and with the warnings policy's warning about its untagged image.
func (e *Env) awaitPolicies(ctx context.Context) error {
	warned := &warningSeen{}
	cfg := rest.CopyConfig(e.Config)
	cfg.WarningHandler = warned
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		return err
	}
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "APIGateway",
		"metadata": map[string]any{"name": "policy-probe", "namespace": policy.ParamsNamespace},
		"spec": map[string]any{"image": "nginx", "replicas": int64(1), "routes": []any{map[string]any{
			"host": "Policy-Probe.example.com.", "backendService": map[string]any{"name": "svc", "port": int64(80)},
		}}},
	}}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		obj := probe.DeepCopy()
		warned.reset()
		last = c.Create(ctx, obj, client.DryRunAll)
		if last != nil {
			// 503 until the plugin knows the CRD; then refused (an
			// upper-case host) until the policy is active.
			return false, nil
		}
		routes, _, _ := unstructured.NestedSlice(obj.Object, "spec", "routes")
		return len(routes) == 1 && routes[0].(map[string]any)["host"] == "policy-probe.example.com" && warned.any(), nil
	})
	if err != nil {
		if last == nil {
			last = err
		}
		return fmt.Errorf("the API server did not apply the admission policies within a minute (last answer: %w)", last)
	}
	return nil
}

// warningSeen is a rest.WarningHandler that notes whether a warning came.
type warningSeen struct{ seen atomic.Bool }

func (w *warningSeen) HandleWarningHeader(int, string, string) { w.seen.Store(true) }
func (w *warningSeen) reset()                                  { w.seen.Store(false) }
func (w *warningSeen) any() bool                               { return w.seen.Load() }

// PolicyWarning is the message of a warning a ValidatingAdmissionPolicy
// sent, without the prefix the API server puts before it ("Validation
// failed for ValidatingAdmissionPolicy 'p' with binding 'b': "); ok is
// false for any other warning.
func PolicyWarning(warning string) (message string, ok bool) {
	rest, ok := strings.CutPrefix(warning, "Validation failed for ValidatingAdmissionPolicy ")
	if !ok {
		return "", false
	}
	_, message, ok = strings.Cut(rest, "': ")
	return message, ok
}
