package controlplane

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The node's network, which exists only in its network namespace: the
// kubelet's address on the namespace's loopback, and the pods' subnet on a
// bridge there (its first address is the bridge's).
const (
	NodeIP      = "10.200.0.1"
	podSubnet   = "10.244.0.0/24"
	cniBridge   = "cni0"
	kubeletPort = 10250
)

// nodePaths are where the node's components keep their files, all under
// the control plane's directory (node/).
type nodePaths struct {
	dir string
}

func (p nodePaths) file(name string) string { return p.dir + "/" + name }

func (p nodePaths) containerdConfig() string { return p.file("containerd.toml") }
func (p nodePaths) containerdSocket() string { return p.file("containerd/containerd.sock") }
func (p nodePaths) cniConfDir() string       { return p.file("cni/net.d") }
func (p nodePaths) kubeletConfig() string    { return p.file("kubelet.yaml") }
func (p nodePaths) kubeletRoot() string      { return p.file("kubelet") }

// containerdConfig is containerd's configuration: every file under paths,
// the CRI runtime told what the machine allows (root without
// CAP_SYS_RESOURCE cannot lower oom_score_adj, so runc fails every
// container unless containerd keeps to its own; no AppArmor), CNI from
// Debian's plugins, the sandbox image the project's own pause image, NRI
// off (it would listen under /var/run/nri).
func containerdConfig(p nodePaths, cniBinDir, pauseImage string) string {
	q := strconv.Quote
	return strings.Join([]string{
		"version = 3",
		"root = " + q(p.file("containerd/root")),
		"state = " + q(p.file("containerd/state")),
		"[grpc]",
		"  address = " + q(p.containerdSocket()),
		"[ttrpc]",
		"  address = " + q(p.containerdSocket()+".ttrpc"),
		"[plugins]",
		`  [plugins."io.containerd.internal.v1.opt"]`,
		"    path = " + q(p.file("containerd/opt")),
		`  [plugins."io.containerd.nri.v1.nri"]`,
		"    disable = true",
		`  [plugins."io.containerd.cri.v1.images"]`,
		`    [plugins."io.containerd.cri.v1.images".pinned_images]`,
		"      sandbox = " + q(pauseImage),
		`  [plugins."io.containerd.cri.v1.runtime"]`,
		"    restrict_oom_score_adj = true",
		"    disable_apparmor = true",
		"    netns_mounts_under_state_dir = true",
		`    [plugins."io.containerd.cri.v1.runtime".cni]`,
		"      bin_dirs = [" + q(cniBinDir) + "]",
		"      conf_dir = " + q(p.cniConfDir()),
		"",
	}, "\n")
}

// cniConfig is the pods' network: a bridge in the node's namespace that is
// the pods' gateway, addresses from podSubnet kept under paths. No
// masquerading and no port mappings, so nothing touches iptables.
func cniConfig(p nodePaths) string {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "node",
		"plugins": []map[string]any{
			{
				"type":      "bridge",
				"bridge":    cniBridge,
				"isGateway": true,
				"ipMasq":    false,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": podSubnet}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": p.file("cni/ipam"),
				},
			},
			{"type": "loopback"},
		},
	}
	data, _ := json.MarshalIndent(conf, "", "  ") // maps and strings: cannot fail
	return string(data) + "\n"
}

// kubeletConfig is the kubelet's configuration, in the JSON form of its
// YAML file. cgroup v1 is allowed (failCgroupV1) on these machines; the
// kubelet's pods live under cgroupRoot, which the launcher makes and
// removes; protectKernelDefaults, so that it checks the kernel settings
// (faked in the node's mount namespace) instead of writing the machine's.
// Anyone who reaches its port may use it (it listens only in the node's
// namespace); eviction thresholds are low, so a full shared disk does not
// evict the tests' pods. syncFrequency 0 keeps the kubelet's default.
func kubeletConfig(p nodePaths, cgroupRoot string, syncFrequency time.Duration) string {
	conf := map[string]any{
		"apiVersion":               "kubelet.config.k8s.io/v1beta1",
		"kind":                     "KubeletConfiguration",
		"failCgroupV1":             false,
		"cgroupDriver":             "cgroupfs",
		"cgroupRoot":               cgroupRoot,
		"protectKernelDefaults":    true,
		"failSwapOn":               false,
		"containerRuntimeEndpoint": "unix://" + p.containerdSocket(),
		"address":                  NodeIP,
		"port":                     kubeletPort,
		"readOnlyPort":             0,
		"healthzBindAddress":       "127.0.0.1",
		"healthzPort":              10248,
		"podLogsDir":               p.file("pod-logs"),
		"resolvConf":               p.file("resolv.conf"),
		"clusterDomain":            "cluster.local",
		"clusterDNS":               []string{NodeIP},
		"authentication": map[string]any{
			"anonymous": map[string]bool{"enabled": true},
			"webhook":   map[string]bool{"enabled": false},
		},
		"authorization":               map[string]string{"mode": "AlwaysAllow"},
		"evictionHard":                map[string]string{"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
	}
	if syncFrequency > 0 {
		conf["syncFrequency"] = syncFrequency.String()
	}
	data, _ := json.MarshalIndent(conf, "", "  ") // maps and strings: cannot fail
	return string(data) + "\n"
}

// kubeletArgs run the kubelet with its configuration file, as node name,
// its data under paths, reaching the API server with kubeconfig.
func kubeletArgs(p nodePaths, name, kubeconfig string) []string {
	return []string{
		"--config=" + p.kubeletConfig(),
		"--kubeconfig=" + kubeconfig,
		"--root-dir=" + p.kubeletRoot(),
		"--cert-dir=" + p.file("kubelet-pki"),
		"--hostname-override=" + name,
		"--node-ip=" + NodeIP,
	}
}

// schedulerArgs run kube-scheduler as the kubeconfig's user, serving
// nothing and electing no leader, as kube-controller-manager does.
func schedulerArgs(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
	}
}

// kube-proxy's metrics address in the node's network namespace (its
// default), and the metric that is there once it has synced the IPv4
// rules.
const (
	kubeProxyMetricsAddress = "127.0.0.1:10249"
	kubeProxySyncedMetric   = `kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"}`
)

// kubeProxyArgs run kube-proxy for Node name as the kubeconfig's user, in
// nftables mode (its tables live in the node's network namespace, and go
// with it), the pods' subnet as the cluster's (traffic from elsewhere to a
// ClusterIP is masqueraded). It writes no kernel setting: the conntrack
// table's size (nf_conntrack_max, and the hash size in /sys/module, which
// are the whole machine's) and conntrack's timeouts stay as they are;
// nftables mode writes no other sysctl (iptables mode would set
// route_localnet). Health and metrics listen on the namespace's loopback.
func kubeProxyArgs(name, kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--hostname-override=" + name,
		"--proxy-mode=nftables",
		"--cluster-cidr=" + podSubnet,
		"--conntrack-max-per-core=0",
		"--conntrack-tcp-timeout-established=0",
		"--conntrack-tcp-timeout-close-wait=0",
		"--healthz-bind-address=127.0.0.1:10256",
		"--metrics-bind-address=" + kubeProxyMetricsAddress,
	}
}

// kernelDefaults are the kernel settings the kubelet wants when it
// protects them (protectKernelDefaults), by their /proc/sys path.
var kernelDefaults = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// kernelOverrides are the settings whose current values (by /proc/sys
// path, as read) differ from the kubelet's: the node's mount namespace
// shows the kubelet its own values there, and the machine keeps its.
func kernelOverrides(current map[string]string) map[string]string {
	out := map[string]string{}
	for path, want := range kernelDefaults {
		if strings.TrimSpace(current[path]) != want {
			out[path] = want
		}
	}
	return out
}

// nodeName is the node's name, unless the options give one.
func nodeName(opts *NodeOptions) string {
	if opts.Name != "" {
		return opts.Name
	}
	return "node"
}

// cgroupRootName is the cgroup (the same path in every hierarchy) the
// kubelet keeps its pods in for the run id: one per run, so that runs side
// by side never share one, and removed by Stop.
func cgroupRootName(id string) string { return fmt.Sprintf("/apigateway-node-%s", id) }
