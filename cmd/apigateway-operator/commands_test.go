package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestSubcommand(t *testing.T) {
	for _, tc := range []struct {
		argv0    string
		args     []string
		want     string // command name; "-" for none (the operator runs)
		wantArgs []string
	}{
		{argv0: "/bin/apigateway-operator", args: nil, want: "-"},
		{argv0: "/bin/apigateway-operator", args: []string{"--leader-elect"}, want: "-"},
		{argv0: "/bin/apigateway-operator", args: []string{"validate", "-f", "x"}, want: "validate", wantArgs: []string{"-f", "x"}},
		{argv0: "apigateway-operator", args: []string{"convert"}, want: "convert", wantArgs: []string{}},
		{argv0: "/usr/local/bin/kubectl-apigateway", args: []string{"routes", "-o", "json"}, want: "routes", wantArgs: []string{"-o", "json"}},
		{argv0: "/usr/local/bin/kubectl-apigateway", args: []string{"validate"}, want: "validate", wantArgs: []string{}},
		{argv0: "kubectl-apigateway", args: nil, want: ""},
		{argv0: "kubectl-apigateway", args: []string{"--webhook-port=1"}, want: "", wantArgs: []string{"--webhook-port=1"}},
		{argv0: "bin/kubectl-apigateway.exe", args: []string{"help"}, want: "", wantArgs: []string{"help"}},
	} {
		c, args, ok := subcommand(tc.argv0, tc.args)
		if tc.want == "-" {
			assert.False(t, ok, "%s %v runs the operator", tc.argv0, tc.args)
			continue
		}
		require.True(t, ok, "%s %v", tc.argv0, tc.args)
		assert.Equal(t, tc.want, c.name, "%s %v", tc.argv0, tc.args)
		if tc.wantArgs != nil {
			assert.Equal(t, tc.wantArgs, args)
		}
	}
}

// runCommand runs a subcommand in process, with no cluster.
func runCommand(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	c, rest, ok := subcommand("apigateway-operator", args)
	require.True(t, ok)
	var stdout, stderr bytes.Buffer
	code := c.run(rest, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

const (
	samples = "../../manifests/samples"
	invalid = samples + "/invalid"
)

// commandCase is a run of a subcommand: its input, arguments, exit code,
// what its standard output and error must contain, and what neither may.
type commandCase struct {
	name       string
	stdin      string
	args       []string
	code       int
	stdout     []string
	stderr     []string
	notInStdio []string
}

// run runs the case's command and checks what it says; it returns the
// output for more checks.
func (tc commandCase) run(t *testing.T, command string) (stdout, stderr string) {
	t.Helper()
	stdout, stderr = checkRun(t, tc.stdin, append([]string{command}, tc.args...), tc.code, tc.stdout, tc.stderr)
	for _, s := range tc.notInStdio {
		assert.NotContains(t, stdout+stderr, s)
	}
	return stdout, stderr
}

func TestValidateCommand(t *testing.T) {
	limited := "apiVersion: example.com/v1\nkind: APIGateway\nmetadata: {name: gw}\nspec:\n  image: nginx:1.27\n  routes:\n  - {host: a.example.com, backendService: {name: s, port: 80}, sourceRanges: {allow: [10.0.0.0/8]}}\n"
	unknownField := "apiVersion: example.com/v1\nkind: APIGateway\nmetadata: {name: gw}\nspec:\n  replica: 2\n  routes:\n  - {host: a.example.com, backendService: {name: s, port: 80}}\n"
	for _, tc := range []commandCase{
		{name: "help", args: []string{"--help"}, code: 0, stdout: []string{"Usage: apigateway-operator validate", "-default-image", "Exit status: 0 valid, 1 invalid, 2 unusable input"}},
		{name: "the samples are valid", args: []string{"-f", samples}, code: 0,
			stdout: []string{"apigateway.example.com/my-app-gateway valid", "apigateway.example.com/legacy-gateway valid"},
			stderr: []string{`Warning: spec.image uses the tag "latest"`}},
		{name: "a conflict with a gateway before it", args: []string{"-f", samples, "-f", invalid + "/conflicting-route.yaml"}, code: 1,
			stderr: []string{`The APIGateway "users-v2-gateway" is invalid: spec.routes[0]: Duplicate value: "api.example.com/users/ (Prefix)": host and path already served by APIGateway default/my-app-gateway`, "[rule conflict]"}},
		{name: "alone it has no conflict", args: []string{"-f", invalid + "/conflicting-route.yaml"}, code: 0},
		{name: "a CEL rule of the v1alpha1 schema", args: []string{"-f", invalid + "/v1alpha1-prefix-without-slash.yaml"}, code: 1,
			stderr: []string{`spec.routes[0].prefix: Invalid value: "orders": must start with '/'`}},
		{name: "an unknown field from stdin", stdin: unknownField, args: []string{"-f", "-"}, code: 1,
			stderr: []string{`-#0: The APIGateway "gw" is invalid: spec.replica: strict decoding error: unknown field "spec.replica" [rule strictFieldValidation]`}},
		{name: "json", stdin: unknownField, args: []string{"-o", "json", "-f", "-"}, code: 1,
			stdout: []string{`"valid": false`, `"field": "spec.replica"`, `"rule": "strictFieldValidation"`, `"document": 0`, `"namespace": "default"`}},
		{name: "the namespace's default image", args: []string{"-f", "-", "--namespace-default-image", "team=corp/nginx:latest"}, code: 0,
			stdin:  strings.Replace(unknownField, "replica:", "replicas:", 1) + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n",
			stdout: []string{"v1 configmap/cm (-#1): not an APIGateway"}, notInStdio: []string{"corp/nginx"}},
		{name: "--namespace picks the namespace", args: []string{"-f", "-", "--namespace", "team", "--namespace-default-image", "team=corp/nginx:latest"}, code: 0,
			stdin: strings.Replace(unknownField, "replica:", "replicas:", 1), stderr: []string{`Warning: spec.image uses the tag "latest"`}},
		{name: "source ranges without trusted proxies", stdin: limited, args: []string{"-f", "-"}, code: 0,
			stderr: []string{"Warning: spec.routes[0].sourceRanges: the operator trusts no front proxy"}},
		{name: "source ranges behind trusted proxies", stdin: limited, args: []string{"-f", "-", "--gateway-trusted-proxies", "10.244.0.0/16"}, code: 0,
			notInStdio: []string{"sourceRanges"}},
		{name: "a trusted proxy that is no address", stdin: limited, args: []string{"-f", "-", "--gateway-trusted-proxies", "ingress"}, code: 2,
			stderr: []string{`--gateway-trusted-proxies: trusted proxy "ingress" is not an IP address or CIDR`}},
		{name: "no input", args: nil, code: 2, stderr: []string{"no input"}},
		{name: "a missing file", args: []string{"-f", "does-not-exist.yaml"}, code: 2, stderr: []string{"does-not-exist.yaml"}},
		{name: "not YAML", stdin: "a: [b\n", args: []string{"-f", "-"}, code: 2, stderr: []string{"unusable input"}},
		{name: "a bad flag", args: []string{"--nope"}, code: 2, stderr: []string{"-nope"}},
		{name: "a bad output", args: []string{"-o", "xml", "-f", samples}, code: 2, stderr: []string{`-o "xml"`}},
		{name: "replicas out of the operator's range", args: []string{"--default-replicas", "101", "-f", samples}, code: 2, stderr: []string{"--default-replicas: want 0 to 100"}},
		{name: "a bad namespace image", args: []string{"--namespace-default-image", "team", "-f", samples}, code: 2, stderr: []string{"NAMESPACE=IMAGE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, "validate")
		})
	}
}

func TestConvertCommand(t *testing.T) {
	for _, tc := range []commandCase{
		{name: "help", args: []string{"--help"}, stdout: []string{"Usage: apigateway-operator convert --to v1|v1alpha1", "-to"}},
		{name: "v1alpha1 to v1", args: []string{"--to", "v1", "-f", samples + "/apigateway_v1alpha1.yaml"},
			stdout: []string{"apiVersion: example.com/v1\n", "path: /orders/", "pathType: Prefix", "name: order-service"}},
		{name: "v1 to v1alpha1 keeps what v1alpha1 cannot say", args: []string{"--to", "v1alpha1", "-f", samples + "/apigateway_v1.yaml"},
			stdout: []string{"apiVersion: example.com/v1alpha1\n", "prefix: /users/", "conversion.example.com/v1-spec"}},
		{name: "json, several objects", args: []string{"--to", "v1", "-o", "json", "-f", samples},
			stdout: []string{`"kind": "List"`, `"name": "my-app-gateway"`, `"name": "legacy-gateway"`}},
		{name: "other kinds are skipped", stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n", args: []string{"--to", "v1", "-f", "-"},
			stderr: []string{"-#0 ConfigMap cm: v1 ConfigMap is not an APIGateway"}},
		{name: "no --to", args: []string{"-f", samples}, code: 2, stderr: []string{`--to ""`}},
		{name: "a bad -o", args: []string{"--to", "v1", "-o", "xml", "-f", samples}, code: 2, stderr: []string{`-o "xml"`}},
		{name: "a missing file", args: []string{"--to", "v1", "-f", "nope.yaml"}, code: 2, stderr: []string{"nope.yaml"}},
		{name: "an undecodable gateway", stdin: "apiVersion: example.com/v1\nkind: APIGateway\nmetadata: {name: gw}\nspec: {replicas: two}\n",
			args: []string{"--to", "v1alpha1", "-f", "-"}, code: 1, stderr: []string{"decoding the APIGateway"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, "convert")
		})
	}
}

// checkRun runs the binary's command args with stdin and asserts its exit
// code and what its output holds; it returns the output for more checks.
func checkRun(t *testing.T, stdin string, args []string, code int, inStdout, inStderr []string) (stdout, stderr string) {
	t.Helper()
	got, stdout, stderr := runCommand(t, stdin, args...)
	assert.Equal(t, code, got, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	for _, s := range inStdout {
		assert.Contains(t, stdout, s)
	}
	for _, s := range inStderr {
		assert.Contains(t, stderr, s)
	}
	return stdout, stderr
}

// TestConvertRoundTrip: converting to the other version and back gives the
// object back, for each sample.
func TestConvertRoundTrip(t *testing.T) {
	for _, f := range []string{"apigateway_v1.yaml", "apigateway_v1alpha1.yaml"} {
		data, err := os.ReadFile(filepath.Join(samples, f))
		require.NoError(t, err)
		var orig map[string]any
		require.NoError(t, yaml.Unmarshal(data, &orig))
		version := strings.TrimPrefix(orig["apiVersion"].(string), "example.com/")
		other := map[string]string{"v1": "v1alpha1", "v1alpha1": "v1"}[version]
		code, there, stderr := runCommand(t, string(data), "convert", "--to", other, "-f", "-")
		require.Equal(t, 0, code, stderr)
		code, back, stderr := runCommand(t, there, "convert", "--to", version, "-f", "-")
		require.Equal(t, 0, code, stderr)
		var got map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(back), &got))
		assert.Equal(t, orig, got, f)
	}
}

// TestPluginBinary runs the built binary as the kubectl plugin on the
// samples, and as the operator's subcommand, with no cluster.
func TestPluginBinary(t *testing.T) {
	plugin := filepath.Join(t.TempDir(), "kubectl-apigateway")
	require.NoError(t, os.Symlink(operatorBinary(t), plugin))

	out, err := exec.Command(plugin, "validate", "-f", samples).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "apigateway.example.com/my-app-gateway valid")

	out, err = exec.Command(plugin, "routes", "-f", samples).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "default/my-app-gateway")

	out, err = exec.Command(plugin, "--help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "Usage: kubectl apigateway COMMAND")
	assert.Contains(t, string(out), "routes")

	err = exec.Command(plugin).Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	assert.Equal(t, 2, exit.ExitCode(), "the plugin without a command is a usage error")

	err = exec.Command(operatorBinary(t), "validate", "-f", invalid+"/name-not-dns-label.yaml").Run()
	require.True(t, errors.As(err, &exit), "%v", err)
	assert.Equal(t, 1, exit.ExitCode(), "an invalid gateway exits 1")
}
