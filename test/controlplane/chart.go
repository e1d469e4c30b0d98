package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Chart is a helm chart to install into the control plane.
type Chart struct {
	// Helm is the helm binary that renders it; Dir the chart.
	Helm, Dir string
	// Namespace is the release's; it must exist.
	Namespace string
	// Set are helm's --set values.
	Set []string
}

// InstallChart installs the chart as `helm install` into c.Namespace
// would, with every webhook pointed at webhookURL instead of at the
// chart's Service (as manifests/local points them at the operator running
// on this machine), and waits as InstallLocal does. The chart is rendered
// by `helm template` and applied by the administrator: this control plane
// runs no pods, and the chart has no hooks a release would run. It returns
// the objects as applied, and what kubectl printed.
func (c *ControlPlane) InstallChart(ctx context.Context, ch Chart, webhookURL string) ([]*unstructured.Unstructured, []byte, error) {
	args := []string{"template", "apigateway-operator", ch.Dir, "--namespace", ch.Namespace}
	for _, s := range ch.Set {
		args = append(args, "--set", s)
	}
	home, err := os.MkdirTemp("", "helm-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(home)
	helm := exec.CommandContext(ctx, ch.Helm, args...)
	// Helm's own configuration and caches, not the user's.
	helm.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var stderr bytes.Buffer
	helm.Stderr = &stderr
	rendered, err := helm.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	objs, err := parseObjects(rendered)
	if err != nil {
		return nil, nil, err
	}
	var stream bytes.Buffer
	for _, o := range objs {
		if err := PointWebhooksAt(o, webhookURL); err != nil {
			return nil, nil, err
		}
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, nil, err
		}
		stream.WriteString("---\n")
		stream.Write(data)
	}
	out, err := c.install(ctx, "the chart "+ch.Dir, stream.Bytes())
	return objs, out, err
}

// PointWebhooksAt points every clientConfig of o (an admission webhook
// configuration's webhooks, a CRD's conversion webhook) that names a
// Service at the same path under url instead. Other objects stay as
// they are.
func PointWebhooksAt(o *unstructured.Unstructured, url string) error {
	switch o.GetKind() {
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
		if err != nil {
			return err
		}
		for _, h := range hooks {
			if err := pointAt(h.(map[string]any)["clientConfig"], url); err != nil {
				return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
		return unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
	case "CustomResourceDefinition":
		cc, ok, err := unstructured.NestedMap(o.Object, "spec", "conversion", "webhook", "clientConfig")
		if !ok || err != nil {
			return err
		}
		if err := pointAt(cc, url); err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
		return unstructured.SetNestedMap(o.Object, cc, "spec", "conversion", "webhook", "clientConfig")
	}
	return nil
}

// pointAt replaces clientConfig's Service, if it names one, by the URL of
// its path under url.
func pointAt(clientConfig any, url string) error {
	cc, _ := clientConfig.(map[string]any)
	svc, ok := cc["service"].(map[string]any)
	if !ok {
		return nil
	}
	path, _ := svc["path"].(string)
	if path == "" {
		return errors.New("a webhook's Service has no path")
	}
	// The API server refuses a clientConfig holding both.
	delete(cc, "service")
	cc["url"] = strings.TrimSuffix(url, "/") + path
	return nil
}

// parseObjects reads a stream of YAML documents, skipping empty ones.
func parseObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}
