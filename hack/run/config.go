package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

// config is what the environment chose (see the package documentation).
type config struct {
	runDir, k8sBin, operatorBin string
	fresh                       bool
	// node starts a node (a kubelet, containerd, kube-scheduler and
	// kube-proxy) beside the control plane, in namespaces of its own;
	// nodeBin holds its binaries.
	node                      bool
	nodeBin                   string
	etcdPort, apiServerPort   int
	webhookPort, probePort    int
	metricsPort               int
	startTimeout, stopTimeout time.Duration
}

// portVar is a port and the variable that sets it.
type portVar struct {
	name string
	port *int
}

// ports are the config's ports, by variable.
func (c *config) ports() []portVar {
	return []portVar{
		{"ETCD_PORT", &c.etcdPort}, {"APISERVER_PORT", &c.apiServerPort}, {"WEBHOOK_PORT", &c.webhookPort},
		{"PROBE_PORT", &c.probePort}, {"METRICS_PORT", &c.metricsPort},
	}
}

// parseConfig reads the environment through getenv. Paths given relative
// are taken from cwd, where the program was started; the defaults are in
// the repository at root.
func parseConfig(getenv func(string) string, root, cwd string) (config, error) {
	path := func(name, def string) string {
		v := getenv(name)
		if v == "" {
			return def
		}
		if filepath.IsAbs(v) {
			return filepath.Clean(v)
		}
		return filepath.Join(cwd, v)
	}
	c := config{
		runDir:      path("RUN_DIR", filepath.Join(root, "bin", "run")),
		k8sBin:      path("K8S_BIN", filepath.Join(root, "bin", "k8s")),
		operatorBin: path("OPERATOR_BIN", filepath.Join(root, "bin", "apigateway-operator")),
		fresh:       getenv("RUN_FRESH") == "1",
		nodeBin:     path("NODE_BIN", filepath.Join(root, "bin", "node")),
	}
	switch v := getenv("RUN_NODE"); v {
	case "", "1":
		c.node = true
	case "0":
	default:
		return c, fmt.Errorf("RUN_NODE must be 1 (a node beside the control plane, the default) or 0 (the control plane alone), not %q", v)
	}
	defaults := map[string]int{"ETCD_PORT": 12379, "APISERVER_PORT": 16443, "WEBHOOK_PORT": 9443, "PROBE_PORT": 18081, "METRICS_PORT": 18443}
	for _, p := range c.ports() {
		*p.port = defaults[p.name]
		if v := getenv(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 65535 {
				return c, fmt.Errorf("%s must be a port number (0 for any free one), not %q", p.name, v)
			}
			*p.port = n
		}
	}
	var err error
	if c.startTimeout, err = seconds(getenv, "START_TIMEOUT", 90*time.Second); err != nil {
		return c, err
	}
	c.stopTimeout, err = seconds(getenv, "STOP_TIMEOUT", 20*time.Second)
	return c, err
}

// seconds reads variable name as seconds ("90") or a Go duration ("1m30s").
func seconds(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if n, nerr := strconv.Atoi(v); nerr == nil {
		d, err = time.Duration(n)*time.Second, nil
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s must be a number of seconds or a duration (90, 1m30s), not %q", name, v)
	}
	return d, nil
}
