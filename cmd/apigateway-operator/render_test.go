package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

var updateRender = flag.Bool("update-render", false, "rewrite testdata/render/ from render's current output")

// noDefaults is a gateway that leaves to defaulting its namespace, image,
// replicas, path and pathType.
const noDefaults = `apiVersion: example.com/v1
kind: APIGateway
metadata: {name: plain}
spec:
  routes:
  - host: Plain.Example.COM
    backendService: {name: web, port: 80}
`

// twoGateways are given out of order, with a Service and a ConfigMap
// render skips.
const twoGateways = `apiVersion: example.com/v1
kind: APIGateway
metadata: {name: zeta, namespace: shop}
spec:
  routes:
  - {host: zeta.example.com, path: /, backendService: {name: web, port: 80}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated, namespace: shop}
---
apiVersion: example.com/v1alpha1
kind: APIGateway
metadata: {name: alpha, namespace: shop}
spec:
  routes:
  - {host: alpha.example.com, prefix: /a/, serviceName: web, servicePort: 80}
`

const (
	seedSample   = "../../manifests/samples/apigateway_v1.yaml"
	legacySample = "../../manifests/samples/apigateway_v1alpha1.yaml"
	invalidDir   = "../../manifests/samples/invalid"
)

func TestRender(t *testing.T) {
	tests := map[string]struct {
		args       []string
		stdin      string
		wantCode   int
		golden     string   // testdata/render/ file stdout must equal
		wantOrder  []string // kind/namespace/name of stdout's documents
		wantStderr []string // substrings
		wantStdout []string // substrings
	}{
		"both versions of the samples": {
			args: []string{"-f", seedSample, "-f", legacySample}, golden: "samples.yaml",
		},
		"defaults, flags and json from stdin": {
			args:  []string{"-f", "-", "-o", "json", "--namespace", "team", "--cluster-domain", "corp.internal", "--default-image", "registry.example.com/nginx:1", "--default-replicas", "3"},
			stdin: noDefaults, golden: "defaults.json",
		},
		"a namespace's default image": {
			args: []string{"-f", "-", "--namespace-default-image", "default=registry.example.com/team/nginx:2"}, stdin: noDefaults,
			wantOrder:  []string{"ConfigMap/default/plain-config", "Deployment/default/plain", "Ingress/default/plain", "Service/default/plain"},
			wantStdout: []string{"image: registry.example.com/team/nginx:2\n"},
		},
		"sorted by kind, namespace and name; other kinds skipped": {
			args: []string{"-f", "-"}, stdin: twoGateways,
			wantOrder: []string{
				"ConfigMap/shop/alpha-config", "ConfigMap/shop/zeta-config", "Deployment/shop/alpha", "Deployment/shop/zeta",
				"Ingress/shop/alpha", "Ingress/shop/zeta", "Service/shop/alpha", "Service/shop/zeta",
			},
		},
		"a refused gateway: its errors and no child": {
			args:     []string{"-f", seedSample, "-f", filepath.Join(invalidDir, "conflicting-route.yaml")},
			wantCode: 1, wantStderr: []string{`The APIGateway "users-v2-gateway" is invalid`, "Duplicate value", "default/my-app-gateway"},
		},
		"every invalid sample": {
			args: []string{"-f", invalidDir}, wantCode: 1, wantStderr: []string{`"api.gateway" is invalid`, `"injected-gateway" is invalid`},
		},
		"no gateway": {
			args: []string{"-f", "-"}, stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
			wantStderr: []string{"no APIGateway in the input"},
		},
		"--help":               {args: []string{"--help"}},
		"no input":             {args: nil, wantCode: 2, wantStderr: []string{"no input"}},
		"a missing file":       {args: []string{"-f", "testdata/render/missing.yaml"}, wantCode: 2, wantStderr: []string{"missing.yaml"}},
		"not YAML":             {args: []string{"-f", "-"}, stdin: "kind: [", wantCode: 2, wantStderr: []string{"unusable input"}},
		"an unknown output":    {args: []string{"-f", seedSample, "-o", "text"}, wantCode: 2, wantStderr: []string{`-o "text": want yaml or json`}},
		"a bad cluster domain": {args: []string{"-f", seedSample, "--cluster-domain", "Corp_Internal"}, wantCode: 2, wantStderr: []string{"--cluster-domain"}},
		"an unknown flag":      {args: []string{"-f", seedSample, "--kubeconfig", "x"}, wantCode: 2, wantStderr: []string{"flag provided but not defined: -kubeconfig"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runRender(tc.args, strings.NewReader(tc.stdin), &stdout, &stderr)
			require.Equal(t, tc.wantCode, code, "stderr: %s", stderr.String())
			for _, s := range tc.wantStderr {
				assert.Contains(t, stderr.String(), s)
			}
			for _, s := range tc.wantStdout {
				assert.Contains(t, stdout.String(), s)
			}
			switch {
			case tc.golden != "":
				renderGolden(t, tc.golden, stdout.Bytes())
			case tc.wantOrder != nil:
				assert.Equal(t, tc.wantOrder, documentKeys(t, stdout.Bytes()))
			case name == "--help":
				assert.Contains(t, stdout.String(), "Usage: apigateway-operator render -f FILE|DIR|-")
				assert.Contains(t, stdout.String(), "-cluster-domain")
			default:
				assert.Empty(t, stdout.String(), "no child is printed unless every gateway is admitted")
			}
		})
	}
}

// renderGolden compares got with testdata/render/name, or rewrites it with
// -update-render.
func renderGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "render", name)
	if *updateRender {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: go test ./cmd/apigateway-operator -run TestRender -update-render")
	assert.Equal(t, string(want), string(got), "output differs from %s (-update-render rewrites it)", path)
}

// documentKeys are kind/namespace/name of each YAML document in out.
func documentKeys(t *testing.T, out []byte) []string {
	t.Helper()
	var keys []string
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
		keys = append(keys, obj.Kind+"/"+obj.Metadata.Namespace+"/"+obj.Metadata.Name)
	}
	return keys
}
