package node

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"example.com/apigateway-operator/inspect"
	"example.com/apigateway-operator/test/testenv"
)

// `kubectl apigateway status` on a real cluster: each gateway pod's
// reloader, asked through the API server's pod proxy, reports the
// configuration of the gateway's ConfigMap as the one it serves.
func TestStatusShowsWhatEachPodServes(t *testing.T) {
	ctx := t.Context()
	startServiceDNS(t)
	ns := testenv.NewNamespace(t, env.Client, "status")
	backend := startBackend(t, ns)
	startOperator(t)
	gw := newGateway(ns, "shop", backend, 2)
	require.NoError(t, env.Client.Create(ctx, gw))
	for _, cond := range []string{"Ready", "Live"} {
		res := env.Kubectl(ctx, nil, "wait", "--for=condition="+cond, "agw/"+gw.Name, "-n", ns, "--timeout=2m")
		require.NoError(t, res.Err, res.Stderr)
	}

	in, warnings, err := inspect.Read(ctx, env.Config, ns, gw.Name)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	r := inspect.Build(in)
	require.NotEmpty(t, r.Configuration)
	require.Len(t, r.Pods, 2)
	for _, p := range r.Pods {
		assert.Empty(t, p.Unread, "pod %s", p.Name)
		assert.True(t, p.Ready, "pod %s", p.Name)
		assert.Equal(t, r.Configuration, p.Serving, "pod %s", p.Name)
		assert.True(t, p.Current, "pod %s", p.Name)
	}
	var table bytes.Buffer
	require.NoError(t, inspect.WriteTable(&table, r))
	assert.Contains(t, table.String(), r.Configuration[:12]+" (current)")
	t.Logf("kubectl apigateway status %s -n %s:\n%s", gw.Name, ns, table.String())
}
