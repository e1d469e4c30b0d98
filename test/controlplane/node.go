package controlplane

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The node's components, which are also their binaries', pid files' and
// logs' names.
const (
	scheduler  = "kube-scheduler"
	containerd = "containerd"
	kubelet    = "kubelet"
	kubeProxy  = "kube-proxy"
	shim       = "containerd-shim-runc-v2"
	// nodeDir holds the node's files in the control plane's directory;
	// it starts empty at every start.
	nodeDir = "node"
	// criNamespace is containerd's namespace of the kubelet's images.
	criNamespace = "k8s.io"
)

// DefaultCNIBinDir is where Debian installs the CNI plugins.
const DefaultCNIBinDir = "/usr/lib/cni"

// NodeOptions start a node beside the control plane: kube-scheduler,
// containerd, a kubelet registered as a Node and kube-proxy, which makes
// the Services' ClusterIPs lead to their pods, in the namespaces
// EnterNodeNamespaces made, every file under the control plane's directory
// (node/), the kubelet's pods in a cgroup of their own. Stop stops them,
// kills what containers are left, unmounts and removes the cgroups.
type NodeOptions struct {
	// BinDir holds the kubelet, kube-scheduler, kube-proxy, containerd,
	// ctr and containerd-shim-runc-v2 (`make node` builds them into
	// bin/node).
	BinDir string
	// CNIBinDir holds the CNI plugins; empty means DefaultCNIBinDir.
	CNIBinDir string
	// Name is the Node's; empty means "node".
	Name string
	// Images are OCI image layout tars (test/ociimage) imported before
	// the kubelet starts: the node has no registry to pull from.
	Images []string
	// PauseImage names the pods' sandbox image, one of Images.
	PauseImage string
	// SyncFrequency is the kubelet's syncFrequency (how often it syncs
	// each pod, so how late a ConfigMap volume follows its ConfigMap);
	// zero keeps the kubelet's default.
	SyncFrequency time.Duration
}

// node is what a started node leaves for Stop to undo.
type node struct {
	// startup is how long the Node took to become Ready after the
	// kubelet started.
	startup time.Duration
	paths   nodePaths
	mounts  nodeMounts
	// cgroups are the cgroup folders made, one per hierarchy.
	cgroups []string
}

// apiServerNodeFlags are the API server's flags a node needs: it reaches
// the kubelet (logs, exec, port-forward) at the Node's InternalIP, as it
// has no DNS name.
var apiServerNodeFlags = map[string]string{"kubelet-preferred-address-types": "InternalIP"}

// nodeControllers are the kube-controller-manager controllers a node
// needs: the node lifecycle controller lifts the node.kubernetes.io/not-ready
// taint a kubelet registers its Node with once the Node is Ready (without
// it, no pod is ever scheduled); the EndpointSlice controller lists each
// Service's ready pods, which is what kube-proxy sends a ClusterIP's
// connections to (without it, a ClusterIP leads nowhere).
var nodeControllers = []string{"node-lifecycle-controller", "endpointslice-controller"}

// withNodeControllers are controllers with nodeControllers.
func withNodeControllers(controllers []string) []string {
	if slices.Contains(controllers, "*") {
		return controllers
	}
	out := slices.Clone(controllers)
	for _, name := range nodeControllers {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// startNode starts the node of Options.Node and waits until its Node is
// Ready.
func (c *ControlPlane) startNode(ctx context.Context) error {
	opts := c.opts.Node
	if !InNodeNamespaces() {
		return errors.New("a node runs in namespaces of its own: call controlplane.EnterNodeNamespaces first (in TestMain)")
	}
	if opts.PauseImage == "" {
		return errors.New("NodeOptions.PauseImage is empty: the node has no registry to pull registry.k8s.io/pause from")
	}
	dir := c.path(nodeDir)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	c.node = &node{paths: nodePaths{dir: dir}}
	if err := c.prepareNode(); err != nil {
		return err
	}
	if err := c.startContainerd(ctx); err != nil {
		return err
	}
	if err := c.importImages(ctx, opts.Images); err != nil {
		return err
	}
	c.log("Starting " + scheduler)
	if _, err := c.Run(ctx, Command{Name: scheduler, Path: filepath.Join(c.opts.Node.BinDir, scheduler), Args: schedulerArgs(c.path(kubeconfigFile))}); err != nil {
		return err
	}
	if err := c.startKubelet(ctx); err != nil {
		return err
	}
	return c.startKubeProxy(ctx)
}

// prepareNode gives the node its address, its mounts, its cgroup and its
// configuration files.
func (c *ControlPlane) prepareNode() error {
	n, opts := c.node, c.opts.Node
	if err := checkBridgeNetfilter(); err != nil {
		return err
	}
	if err := run("ip", "addr", "replace", NodeIP+"/32", "dev", "lo"); err != nil {
		return err
	}
	// The node's own connections to a ClusterIP (a user on the node, the
	// tests) need a route to be sent at all; kube-proxy's rules then send
	// them to a pod, from the node's address. A real node's default route
	// plays this part; this one has none, so traffic elsewhere fails at
	// once rather than loop.
	if err := run("ip", "route", "replace", c.serviceSubnet(), "dev", "lo", "src", NodeIP); err != nil {
		return err
	}
	if err := n.mounts.fakeKernelSettings(n.paths.file("sysctl")); err != nil {
		return err
	}
	if err := n.mounts.mountHostPaths(n.paths.file("host")); err != nil {
		return err
	}
	id := make([]byte, 4)
	_, _ = rand.Read(id)
	cgroupRoot := cgroupRootName(hex.EncodeToString(id))
	made, err := makeCgroupRoot(cgroupRoot)
	n.cgroups = made
	if err != nil {
		return err
	}
	cniBinDir := opts.CNIBinDir
	if cniBinDir == "" {
		cniBinDir = DefaultCNIBinDir
	}
	files := map[string]string{
		n.paths.containerdConfig():                              containerdConfig(n.paths, cniBinDir, opts.PauseImage),
		filepath.Join(n.paths.cniConfDir(), "10-node.conflist"): cniConfig(n.paths),
		n.paths.kubeletConfig():                                 kubeletConfig(n.paths, cgroupRoot, opts.SyncFrequency),
		n.paths.file("resolv.conf"):                             "nameserver " + NodeIP + "\n",
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return os.MkdirAll(filepath.Dir(n.paths.containerdSocket()), 0o700)
}

// runtimePath is PATH with the runtime's binaries first: containerd finds
// its shim there, the shim finds runc (Debian's) further on.
func (c *ControlPlane) runtimePath() string {
	return "PATH=" + c.opts.Node.BinDir + string(os.PathListSeparator) + os.Getenv("PATH")
}

func (c *ControlPlane) startContainerd(ctx context.Context) error {
	c.log("Starting " + containerd)
	socket := c.node.paths.containerdSocket()
	_, err := c.Run(ctx, Command{
		Name: containerd,
		Path: filepath.Join(c.opts.Node.BinDir, containerd),
		Args: []string{"--config=" + c.node.paths.containerdConfig()},
		Env:  []string{c.runtimePath()},
		Ready: func(ctx context.Context) error {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "unix", socket)
			if err != nil {
				return err
			}
			return conn.Close()
		},
	})
	return err
}

// importImages imports OCI image layout tars into the kubelet's namespace
// of containerd.
func (c *ControlPlane) importImages(ctx context.Context, images []string) error {
	for _, image := range images {
		start := time.Now()
		if _, err := c.Ctr(ctx, "images", "import", image); err != nil {
			return fmt.Errorf("importing %s: %w", image, err)
		}
		c.log(fmt.Sprintf("Imported %s in %s", filepath.Base(image), time.Since(start).Round(time.Millisecond)))
	}
	return nil
}

func (c *ControlPlane) startKubelet(ctx context.Context) error {
	name := nodeName(c.opts.Node)
	c.log("Starting " + kubelet + " as node " + name + " at " + NodeIP)
	start := time.Now()
	if _, err := c.Run(ctx, Command{
		Name:  kubelet,
		Path:  filepath.Join(c.opts.Node.BinDir, kubelet),
		Args:  kubeletArgs(c.node.paths, name, c.path(kubeconfigFile)),
		Env:   []string{c.runtimePath()},
		Ready: ReadyWhenOK("http://127.0.0.1:10248/healthz"),
	}); err != nil {
		return err
	}
	cfg, err := c.Config(Admin)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	err = waitReady(ctx, c.find(kubelet), func(ctx context.Context) error { return nodeReady(ctx, client, name) }, c.opts.StartTimeout)
	if err != nil {
		return err
	}
	c.node.startup = time.Since(start)
	c.log(fmt.Sprintf("Node %s Ready %s after the kubelet started", name, c.node.startup.Round(time.Millisecond)))
	return nil
}

// startKubeProxy starts kube-proxy once the Node exists (it takes the
// node's address from it) and waits until it has written the Services'
// rules once: from then on a ClusterIP leads to its Service's pods, in
// the node's network namespace, where its nftables tables live and die.
func (c *ControlPlane) startKubeProxy(ctx context.Context) error {
	c.log("Starting " + kubeProxy + " (nftables)")
	_, err := c.Run(ctx, Command{
		Name:  kubeProxy,
		Path:  filepath.Join(c.opts.Node.BinDir, kubeProxy),
		Args:  kubeProxyArgs(nodeName(c.opts.Node), c.path(kubeconfigFile)),
		Ready: kubeProxySynced("http://" + kubeProxyMetricsAddress + "/metrics"),
	})
	return err
}

// kubeProxySynced is kube-proxy's Command.Ready: its metrics at url show
// a first sync of the IPv4 rules. Its /healthz answers 200 before that,
// while it starts.
func kubeProxySynced(url string) func(context.Context) error {
	client := &http.Client{Timeout: 5 * time.Second}
	return func(ctx context.Context) error {
		body, err := getBody(ctx, client, url)
		if err != nil {
			return err
		}
		if !bytes.Contains(body, []byte(kubeProxySyncedMetric)) {
			return fmt.Errorf("kube-proxy has not synced its rules yet (no %s)", kubeProxySyncedMetric)
		}
		return nil
	}
}

// checkBridgeNetfilter fails unless the bridge passes its IPv4 packets
// through netfilter (br_netfilter's bridge-nf-call-iptables, a setting of
// each network namespace): a pod's answer to a pod on the same bridge
// that reached it through a ClusterIP must meet the connection's
// conntrack entry to be sent back from the ClusterIP. The node reads it,
// never writes it.
func checkBridgeNetfilter() error {
	const path = "/proc/sys/net/bridge/bridge-nf-call-iptables"
	data, err := os.ReadFile(path)
	if err == nil && strings.TrimSpace(string(data)) == "1" {
		return nil
	}
	return fmt.Errorf("the node needs br_netfilter with %s = 1 in its network namespace (got %q, %v): "+
		"without it, pods on the bridge cannot reach each other through a ClusterIP", path, strings.TrimSpace(string(data)), err)
}

// NodeMade are the paths the node of Options.Node made on the machine,
// outside the control plane's directory, which Stop removes: its cgroup
// folders, and the folders it had to make to mount over (see hostPaths).
// For a suite to check, after Stop, that nothing is left.
func (c *ControlPlane) NodeMade() []string {
	if c.node == nil {
		return nil
	}
	return append(slices.Clone(c.node.cgroups), c.node.mounts.made...)
}

// Ctr runs the node's containerd client, ctr, with args in the
// kubelet's namespace of containerd (where the pods' containers are, by
// their status's containerID): what a person on the node would run to
// act on a container behind the kubelet's back.
func (c *ControlPlane) Ctr(ctx context.Context, args ...string) ([]byte, error) {
	if c.node == nil {
		return nil, errors.New("the control plane has no node")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.opts.Node.BinDir, "ctr"),
		append([]string{"--address=" + c.node.paths.containerdSocket(), "--namespace=" + criNamespace}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

// NodeStartup is how long the node of Options.Node took to become Ready
// (and schedulable) after its kubelet started; zero without a node.
func (c *ControlPlane) NodeStartup() time.Duration {
	if c.node == nil {
		return 0
	}
	return c.node.startup
}

// nodeReady fails unless Node name has condition Ready True and has lost
// its not-ready taint: pods can be scheduled to it.
func nodeReady(ctx context.Context, client kubernetes.Interface, name string) error {
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, taint := range n.Spec.Taints {
		if taint.Key == corev1.TaintNodeNotReady {
			return fmt.Errorf("node %s still has the %s taint", name, taint.Key)
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("node %s not Ready: %s: %s", name, cond.Reason, cond.Message)
		}
	}
	return fmt.Errorf("node %s has no Ready condition yet", name)
}

// stopNode undoes what startNode did once every process has stopped:
// it kills the containers and shims left (the kubelet does not stop its
// pods when it stops), removes the cgroups, unmounts and removes the
// folders it made on the machine.
func (c *ControlPlane) stopNode() error {
	n := c.node
	if n == nil {
		return nil
	}
	c.node = nil
	errs := []error{removeCgroups(n.cgroups, c.opts.StopTimeout)}
	errs = append(errs, killShims(filepath.Join(c.opts.Node.BinDir, shim), c.opts.StopTimeout))
	errs = append(errs, n.mounts.undo(n.paths.dir))
	return errors.Join(errs...)
}

// killShims kills the processes running the shim binary at path: in the
// node's PID namespace these are this run's, which outlive containerd.
func killShims(path string, timeout time.Duration) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || strings.TrimSuffix(exe, " (deleted)") != path {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if !gone(pid, timeout) {
			errs = append(errs, fmt.Errorf("%s (pid %d) is still running after SIGKILL", shim, pid))
		}
	}
	return errors.Join(errs...)
}
