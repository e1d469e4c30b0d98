package parity

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/apigateway-operator/offline"
	"example.com/apigateway-operator/test/testenv"
)

// TestSamplesParity runs `kubectl apply --dry-run=server` (strict field
// validation, kubectl's default) and the offline checker on every sample:
// each seed sample on an empty cluster, then, with the seeds created, each
// invalid one, checked offline both after the seeds in the input and
// against the cluster's gateways as --kubeconfig reads them. Each side
// admits the same objects with the same warnings, and every error the
// offline checker reports is in kubectl's output; the Go client's dry run
// of the same object gives the same field paths.
func TestSamplesParity(t *testing.T) {
	ctx := t.Context()
	mgr := startWebhooks(t)
	checker, err := offline.NewChecker()
	require.NoError(t, err)
	dir := filepath.Join(env.Root, "manifests", "samples")
	seeds, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	invalid, err := filepath.Glob(filepath.Join(dir, "invalid", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, seeds)
	require.NotEmpty(t, invalid)
	opts := offline.Options{Defaults: operatorDefaults}

	var seedDocs []offline.Document
	for _, f := range seeds {
		docs, err := offline.Read([]string{f}, nil)
		require.NoError(t, err)
		compareSample(t, checker, f, docs, opts)
		seedDocs = append(seedDocs, docs...)
	}

	for _, f := range seeds {
		res := env.Kubectl(ctx, nil, "apply", "-f", f)
		require.NoError(t, res.Err, res.Stderr)
		t.Cleanup(func() { assert.NoError(t, env.Kubectl(context.Background(), nil, "delete", "-f", f, "--wait").Err) })
	}
	testenv.AwaitCached(t, mgr.GetClient(), keysOf(seedDocs)...)
	cluster, err := offline.ClusterGateways(ctx, env.Kubeconfig, "")
	require.NoError(t, err)
	require.Len(t, cluster, len(seedDocs), "--kubeconfig reads the seeds back")

	validateAgainstCluster(t, filepath.Join(dir, "invalid", "conflicting-route.yaml"))

	for _, f := range invalid {
		t.Run(filepath.Base(f), func(t *testing.T) {
			docs, err := offline.Read([]string{f}, nil)
			require.NoError(t, err)
			afterSeeds := compareSample(t, checker, f, append(append([]offline.Document{}, seedDocs...), docs...), opts)
			assert.False(t, afterSeeds, "every invalid sample is refused")
			withCluster := opts
			withCluster.Gateways = cluster
			compareSample(t, checker, f, docs, withCluster)
		})
	}
}

// compareSample compares kubectl's and the Go client's dry runs of file
// with the offline checker's verdict on docs (file's documents last), and
// returns whether file was admitted.
func compareSample(t *testing.T, checker *offline.Checker, file string, docs []offline.Document, opts offline.Options) bool {
	t.Helper()
	ctx := t.Context()
	report := checker.Validate(ctx, docs, opts)
	var objects []offline.Object
	for _, o := range report.Objects {
		if o.File == file {
			objects = append(objects, o)
		}
	}
	require.Len(t, objects, 1, "one object per sample")
	o := objects[0]

	res := env.Kubectl(ctx, nil, "apply", "--dry-run=server", "-f", file)
	assert.Equal(t, res.Err == nil, o.Valid, "%s: kubectl said %v\nstdout: %s\nstderr: %s\noffline: %+v", file, res.Err, res.Stdout, res.Stderr, o)
	assert.Equal(t, kubectlWarnings(res.Stderr), sorted(o.Warnings), "%s: warnings", file)
	for _, p := range o.Errors {
		assert.Contains(t, res.Stderr, problemText(p), "%s: kubectl prints the offline error", file)
	}

	var fromFile []offline.Document
	for _, d := range docs {
		if d.File == file {
			fromFile = append(fromFile, d)
		}
	}
	server := dryRun(t, fromFile[0].Object)
	assert.Equal(t, server.String(), offlineVerdict(o).String(), "%s: the Go client's dry run", file)
	return o.Valid
}

// validateAgainstCluster runs the built binary's validate with --kubeconfig
// on a sample that conflicts with a seed only the cluster holds: it reads
// the cluster's gateways and refuses the sample (exit 1); a context the
// kubeconfig does not have is unusable input (exit 2).
func validateAgainstCluster(t *testing.T, conflicting string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "apigateway-operator")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/apigateway-operator")
	build.Dir = env.Root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	var exit *exec.ExitError
	out, err = exec.CommandContext(t.Context(), bin, "validate", "--kubeconfig", env.Kubeconfig, "-f", conflicting).CombinedOutput()
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, 1, exit.ExitCode(), "%s", out)
	assert.Contains(t, string(out), "already served by APIGateway default/my-app-gateway")

	out, err = exec.CommandContext(t.Context(), bin, "validate", "--kubeconfig", env.Kubeconfig, "--context", "nowhere", "-f", conflicting).CombinedOutput()
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, 2, exit.ExitCode(), "%s", out)
	assert.Contains(t, string(out), "nowhere")
}

// keysOf are the keys of the gateways of docs, in the default namespace
// when they name none, as kubectl applies them.
func keysOf(docs []offline.Document) []client.ObjectKey {
	keys := make([]client.ObjectKey, 0, len(docs))
	for _, d := range docs {
		ns := d.Object.GetNamespace()
		if ns == "" {
			ns = "default"
		}
		keys = append(keys, client.ObjectKey{Namespace: ns, Name: d.Object.GetName()})
	}
	return keys
}
