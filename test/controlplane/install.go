package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// localWebhookURL is where manifests/local points every webhook: the
// operator's default --webhook-port on this machine.
const localWebhookURL = "https://127.0.0.1:9443"

// apiGatewayCRD is the CRD manifests/local installs.
const apiGatewayCRD = "crd/apigateways.example.com"

// InstallLocal applies manifests/local of the repository at root as the
// administrator (kubectl kustomize and a server-side apply with the
// kubectl beside the control plane's binaries), every webhook pointed at
// webhookURL instead of https://127.0.0.1:9443, and waits, at most
// Options.StartTimeout, until the CRD is established and the API server
// applies the admission policies to APIGateways. It returns what kubectl
// printed.
func (c *ControlPlane) InstallLocal(ctx context.Context, root, webhookURL string) ([]byte, error) {
	kubectl := filepath.Join(c.opts.BinDir, "kubectl")
	rendered, err := exec.CommandContext(ctx, kubectl, "kustomize", filepath.Join(root, "manifests", "local")).Output()
	if err != nil {
		return nil, fmt.Errorf("rendering manifests/local: %w", err)
	}
	rendered = bytes.ReplaceAll(rendered, []byte(localWebhookURL+"/"), []byte(strings.TrimSuffix(webhookURL, "/")+"/"))
	return c.install(ctx, "manifests/local", rendered)
}

// install applies rendered (what source renders) as the administrator and
// waits as InstallLocal says.
func (c *ControlPlane) install(ctx context.Context, source string, rendered []byte) ([]byte, error) {
	kubectl := filepath.Join(c.opts.BinDir, "kubectl")
	kubeconfig := "--kubeconfig=" + c.path(kubeconfigFile)
	apply := exec.CommandContext(ctx, kubectl, kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", "-")
	apply.Stdin = bytes.NewReader(rendered)
	out, err := apply.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("installing %s failed: %w\n%s", source, err, out)
	}
	wait := exec.CommandContext(ctx, kubectl, kubeconfig, "wait", "--for=condition=Established",
		fmt.Sprintf("--timeout=%ds", int(c.opts.StartTimeout.Seconds())), apiGatewayCRD)
	if more, err := wait.CombinedOutput(); err != nil {
		return out, fmt.Errorf("waiting for %s: %w\n%s", apiGatewayCRD, err, more)
	}
	return out, c.awaitPolicies(ctx, kubectl, kubeconfig)
}

// policyProbe is a complete gateway, created with --dry-run=server only.
const policyProbe = `{"apiVersion": "example.com/v1", "kind": "APIGateway",
 "metadata": {"name": "policy-probe", "namespace": "default"},
 "spec": {"image": "nginx:1.27", "replicas": 1,
   "routes": [{"host": "policy-probe.example.com", "backendService": {"name": "svc", "port": 80}}]}}`

// awaitPolicies waits until the API server's admission policy plugins have
// read the new CRD's schema: until then every APIGateway write is answered
// 503 "Resource kind ... not found", and the user's first apply would be.
func (c *ControlPlane) awaitPolicies(ctx context.Context, kubectl, kubeconfig string) error {
	deadline := time.Now().Add(c.opts.StartTimeout)
	for {
		probe := exec.CommandContext(ctx, kubectl, kubeconfig, "create", "--dry-run=server", "-o", "name", "-f", "-")
		probe.Stdin = strings.NewReader(policyProbe)
		out, err := probe.CombinedOutput()
		switch {
		case err == nil:
			return nil
		case !bytes.Contains(out, []byte("ServiceUnavailable")) || time.Now().After(deadline):
			return fmt.Errorf("waiting for the API server to apply the admission policies to APIGateways: %w\n%s", err, out)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
