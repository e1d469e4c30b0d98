package manifests_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"example.com/apigateway-operator/manifests/argocd"
)

// TestArgoCDComponent: added to a kustomization that installs Argo CD as
// Argo CD's own does (its install.yaml, whose objects name no namespace,
// under `namespace: argocd`), the component merges health.lua into
// argocd-cm under the key Argo CD reads, and keeps argocd-cm's other keys.
func TestArgoCDComponent(t *testing.T) {
	// kustomize loads a component by a relative path, from outside the
	// kustomization's directory: a copy beside it.
	dir := t.TempDir()
	write := func(name, data string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600))
	}
	for _, name := range []string{"kustomization.yaml", "health.lua"} {
		data, err := os.ReadFile(filepath.Join(manifestDir("argocd"), name))
		require.NoError(t, err)
		write(filepath.Join("argocd", name), string(data))
	}
	write("argocd-cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\ndata:\n  url: https://argocd.example.com\n")
	write("kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: argocd\n"+
		"resources:\n  - argocd-cm.yaml\ncomponents:\n  - argocd\n")
	res := env.Kubectl(t.Context(), nil, "kustomize", dir)
	require.NoError(t, res.Err, res.Stderr)

	objs := parseObjects(t, []byte(res.Stdout))
	require.Len(t, objs, 1)
	cm := objs[0]
	assert.Equal(t, "argocd-cm", cm.GetName())
	assert.Equal(t, "argocd", cm.GetNamespace())
	data := cm.Object["data"].(map[string]any)
	assert.Equal(t, argocd.Health, data[argocd.HealthKey])
	assert.Equal(t, "https://argocd.example.com", data["url"])
}
