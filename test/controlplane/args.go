package controlplane

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// portNumbers are the loopback ports the control plane listens on.
type portNumbers struct {
	etcd, apiServer int
}

// etcdArgs run etcd on the loopback address url, with its data in dir.
func etcdArgs(dir, url string) []string {
	return []string{
		"--data-dir=" + dir,
		"--listen-client-urls=" + url,
		"--advertise-client-urls=" + url,
		// Its peer port serves nothing here: any free one.
		"--listen-peer-urls=http://127.0.0.1:0",
		// No fsync: a scratch cluster, and a 2-core laptop thanks us.
		"--unsafe-no-fsync",
	}
}

// apiServerArgs run kube-apiserver on 127.0.0.1 with the files of dir (see
// the package documentation): envtest's flags, with bearer tokens instead
// of client certificates, so that a user's credentials survive a restart.
// Without an endpoint reconciler, as the "kubernetes" Service may not point
// at a loopback address and nothing here needs it. The ServiceAccount
// admission plugin is on only when a controller makes the default
// ServiceAccounts it requires of Pods. overrides add flags or replace
// these, by name without dashes.
func apiServerArgs(dir string, p portNumbers, serviceAccounts bool, overrides map[string]string) []string {
	url := fmt.Sprintf("https://127.0.0.1:%d", p.apiServer)
	flags := map[string]string{
		"etcd-servers":                     fmt.Sprintf("http://127.0.0.1:%d", p.etcd),
		"bind-address":                     "127.0.0.1",
		"advertise-address":                "127.0.0.1",
		"secure-port":                      fmt.Sprint(p.apiServer),
		"cert-dir":                         filepath.Join(dir, pkiDir),
		"token-auth-file":                  filepath.Join(dir, tokensFile),
		"authorization-mode":               "RBAC",
		"service-account-issuer":           url,
		"service-account-key-file":         filepath.Join(dir, saKeyFile),
		"service-account-signing-key-file": filepath.Join(dir, saKeyFile),
		"service-cluster-ip-range":         defaultServiceSubnet,
		"endpoint-reconciler-type":         "none",
	}
	if !serviceAccounts {
		flags["disable-admission-plugins"] = "ServiceAccount"
	}
	maps.Copy(flags, overrides)
	return asArgs(flags)
}

// defaultServiceSubnet is the Services' ClusterIP range, unless
// Options.APIServerFlags give another.
const defaultServiceSubnet = "10.0.0.0/24"

// serviceSubnet is the Services' ClusterIP range the API server is told.
func (c *ControlPlane) serviceSubnet() string {
	if subnet := c.opts.APIServerFlags["service-cluster-ip-range"]; subnet != "" {
		return subnet
	}
	return defaultServiceSubnet
}

// controllerManagerArgs run kube-controller-manager's controllers as the
// kubeconfig's user (the administrator): no service account credentials,
// no leader election, and nothing served, so that nothing here fights
// over a port.
func controllerManagerArgs(kubeconfig string, controllers []string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--secure-port=0",
	}
}

// asArgs writes flags as --name=value, sorted, so the command line reads
// the same at every start.
func asArgs(flags map[string]string) []string {
	args := make([]string, 0, len(flags))
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		args = append(args, "--"+name+"="+flags[name])
	}
	return args
}
