package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseConfig(t *testing.T) {
	defaults := config{
		runDir: "/repo/bin/run", k8sBin: "/repo/bin/k8s", operatorBin: "/repo/bin/apigateway-operator",
		node: true, nodeBin: "/repo/bin/node",
		etcdPort: 12379, apiServerPort: 16443, webhookPort: 9443, probePort: 18081, metricsPort: 18443,
		startTimeout: 90 * time.Second, stopTimeout: 20 * time.Second,
	}
	for name, tc := range map[string]struct {
		env     map[string]string
		want    func(*config)
		wantErr string
	}{
		"nothing set":                         {want: func(*config) {}},
		"RUN_FRESH=1":                         {env: map[string]string{"RUN_FRESH": "1"}, want: func(c *config) { c.fresh = true }},
		"RUN_FRESH not one":                   {env: map[string]string{"RUN_FRESH": "yes"}, want: func(*config) {}},
		"RUN_NODE=0: the control plane alone": {env: map[string]string{"RUN_NODE": "0"}, want: func(c *config) { c.node = false }},
		"RUN_NODE=1":                          {env: map[string]string{"RUN_NODE": "1"}, want: func(*config) {}},
		"RUN_NODE neither":                    {env: map[string]string{"RUN_NODE": "no"}, wantErr: `RUN_NODE must be 1 (a node beside the control plane, the default) or 0 (the control plane alone), not "no"`},
		"relative paths are taken from where it started": {
			env: map[string]string{"RUN_DIR": "scratch", "K8S_BIN": "../k8s", "OPERATOR_BIN": "/opt/op", "NODE_BIN": "node"},
			want: func(c *config) {
				c.runDir, c.k8sBin, c.operatorBin, c.nodeBin = "/repo/hack/scratch", "/repo/k8s", "/opt/op", "/repo/hack/node"
			},
		},
		"ports moved, 0 for any": {
			env:  map[string]string{"ETCD_PORT": "2379", "APISERVER_PORT": "0", "METRICS_PORT": "8443"},
			want: func(c *config) { c.etcdPort, c.apiServerPort, c.metricsPort = 2379, 0, 8443 },
		},
		"timeouts in seconds, as hack/run.sh took them": {
			env:  map[string]string{"START_TIMEOUT": "180", "STOP_TIMEOUT": "5"},
			want: func(c *config) { c.startTimeout, c.stopTimeout = 3*time.Minute, 5*time.Second },
		},
		"timeouts as durations": {
			env:  map[string]string{"START_TIMEOUT": "2m30s"},
			want: func(c *config) { c.startTimeout = 150 * time.Second },
		},
		"a port that is no number":  {env: map[string]string{"WEBHOOK_PORT": "web"}, wantErr: `WEBHOOK_PORT must be a port number (0 for any free one), not "web"`},
		"a port out of range":       {env: map[string]string{"PROBE_PORT": "65536"}, wantErr: `PROBE_PORT must be a port number`},
		"a timeout of nothing":      {env: map[string]string{"STOP_TIMEOUT": "0"}, wantErr: `STOP_TIMEOUT must be a number of seconds or a duration (90, 1m30s), not "0"`},
		"a timeout that is no time": {env: map[string]string{"START_TIMEOUT": "soon"}, wantErr: `START_TIMEOUT must be`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseConfig(func(k string) string { return tc.env[k] }, "/repo", "/repo/hack")
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			want := defaults
			tc.want(&want)
			assert.Equal(t, want, got)
		})
	}
}
