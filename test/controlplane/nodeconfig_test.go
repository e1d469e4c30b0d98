package controlplane

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKernelOverrides(t *testing.T) {
	kubelets := map[string]string{}
	for path, want := range kernelDefaults {
		kubelets[path] = want + "\n"
	}
	machine := map[string]string{}
	for path, want := range kubelets {
		machine[path] = want
	}
	machine["vm/overcommit_memory"] = "0\n"
	machine["kernel/panic"] = "1\n"
	for name, tc := range map[string]struct {
		current map[string]string
		want    map[string]string
	}{
		"the kubelet's own values": {current: kubelets, want: map[string]string{}},
		"this machine's":           {current: machine, want: map[string]string{"vm/overcommit_memory": "1", "kernel/panic": "10"}},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, kernelOverrides(tc.current))
		})
	}
}

// Every path the node's components are told is under the node's folder:
// nothing they write lands on the machine.
func TestNodeConfigsStayInTheirFolder(t *testing.T) {
	p := nodePaths{dir: "/run-dir/node"}
	for name, conf := range map[string]string{
		"containerd": containerdConfig(p, "/usr/lib/cni", "pause:1"),
		"kubelet":    kubeletConfig(p, "/apigateway-node-1", 0),
		"cni":        cniConfig(p),
	} {
		t.Run(name, func(t *testing.T) {
			for _, field := range strings.FieldsFunc(conf, func(r rune) bool { return strings.ContainsRune(" \n\"=[],", r) }) {
				if strings.HasPrefix(field, "/") && field != "/usr/lib/cni" && field != "/apigateway-node-1" {
					require.True(t, strings.HasPrefix(field, p.dir+"/"), "%s names %s", name, field)
				}
			}
		})
	}
}

func TestKubeletConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		sync time.Duration
		want any
	}{
		"the kubelet's default sync": {sync: 0, want: nil},
		"a faster sync":              {sync: 10 * time.Second, want: "10s"},
	} {
		t.Run(name, func(t *testing.T) {
			var conf map[string]any
			require.NoError(t, json.Unmarshal([]byte(kubeletConfig(nodePaths{dir: "/d"}, "/cg", tc.sync)), &conf))
			require.Equal(t, tc.want, conf["syncFrequency"])
			require.Equal(t, false, conf["failCgroupV1"])
			require.Equal(t, true, conf["protectKernelDefaults"])
			require.Equal(t, "/cg", conf["cgroupRoot"])
		})
	}
}

func TestUnescapeMountPath(t *testing.T) {
	for in, want := range map[string]string{
		`/plain`:            "/plain",
		`/with\040space`:    "/with space",
		`/trailing\04`:      `/trailing\04`,
		`/tab\011and\134bs`: "/tab\tand\\bs",
	} {
		require.Equal(t, want, unescapeMountPath(in), in)
	}
}

// TestMountsReadsMountinfo: the root and the proc file system are among
// this mount namespace's mounts, each with its type, and the cgroup
// hierarchies the node's cgroups are made in are found.
func TestMountsReadsMountinfo(t *testing.T) {
	all, err := mounts()
	require.NoError(t, err)
	assert.Contains(t, all, mount{target: "/proc", fstype: "proc"})
	assert.True(t, slices.ContainsFunc(all, func(m mount) bool { return m.target == "/" && m.fstype != "" }), "no root mount in %v", all)
	cgroups, err := cgroupMounts()
	require.NoError(t, err)
	assert.NotEmpty(t, cgroups)
}

// kube-proxy writes no kernel setting: every conntrack flag that would
// write one says "leave it" (0), and its mode (nftables) writes no
// other; it listens only on the node namespace's loopback.
func TestKubeProxyArgsLeaveTheKernelAlone(t *testing.T) {
	args := kubeProxyArgs("n1", "/d/kubeconfig")
	for _, want := range []string{
		"--proxy-mode=nftables",
		"--conntrack-max-per-core=0",
		"--conntrack-tcp-timeout-established=0",
		"--conntrack-tcp-timeout-close-wait=0",
		"--hostname-override=n1",
		"--kubeconfig=/d/kubeconfig",
		"--cluster-cidr=" + podSubnet,
	} {
		assert.Contains(t, args, want)
	}
	for _, arg := range args {
		if strings.HasPrefix(arg, "--conntrack-") {
			assert.True(t, strings.HasSuffix(arg, "=0"), "%s writes a conntrack setting", arg)
		}
		if strings.Contains(arg, "bind-address=") {
			assert.Contains(t, arg, "=127.0.0.1:", "%s listens beyond loopback", arg)
		}
	}
}

func TestWithNodeControllers(t *testing.T) {
	for name, tc := range map[string]struct {
		in, want []string
	}{
		"none":          {in: nil, want: nodeControllers},
		"deployments":   {in: []string{"deployment-controller"}, want: append([]string{"deployment-controller"}, nodeControllers...)},
		"one of them":   {in: []string{"endpointslice-controller"}, want: []string{"endpointslice-controller", "node-lifecycle-controller"}},
		"all of them":   {in: []string{"*"}, want: []string{"*"}},
		"already there": {in: nodeControllers, want: nodeControllers},
	} {
		t.Run(name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			require.Equal(t, tc.want, withNodeControllers(in))
			require.Equal(t, tc.in, in, "the caller's slice changed")
		})
	}
}
