// Package gatewaypod plays a gateway pod without a kubelet, for the tests
// and the bench: it runs the pod template's own containers, init container
// first, as processes on directories that stand for the pod's volumes,
// with Debian's nginx as the image's nginx. What a kubelet does around
// them, it does in the simplest faithful way: Project writes a ConfigMap
// volume as the kubelet's atomic writer does (a new directory, then one
// symlink swapped), and Ready asks the readiness probe's URL.
package gatewaypod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"example.com/apigateway-operator/reloader"
	"example.com/apigateway-operator/test/netns"
)

// reloaderEnv asks a test binary to be the reloader (RunReloaderIfAsked).
const reloaderEnv = "GATEWAYPOD_RELOADER"

// RunReloaderIfAsked, called first in a TestMain, makes the test binary
// the reloader when a Pod runs it as the reloader's binary
// (Options.TestBinary): it then runs as apigateway-reloader with the
// arguments and exits, and the tests do not run.
func RunReloaderIfAsked() {
	if os.Getenv(reloaderEnv) == "" {
		return
	}
	os.Exit(reloader.Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Options say how to play one pod.
type Options struct {
	// Binary stands for the reloader's binary in the operator's image (the
	// init container's command): bin/apigateway-reloader, or a test binary
	// when TestBinary.
	Binary string
	// TestBinary: Binary is a test binary whose TestMain calls
	// RunReloaderIfAsked.
	TestBinary bool
	// Nginx is the nginx binary standing for the image's.
	Nginx string
	// ResolvConf is the pod's /etc/resolv.conf.
	ResolvConf string
	// IP, when set, runs the gateway container in a network namespace of
	// its own with this address, joined to the caller's by a veth pair
	// named Link (netns.Attach); HostIP is the caller's side. Empty: the
	// container shares the caller's network namespace.
	IP, HostIP, Link string
	// Output receives the containers' output; nil discards it.
	Output io.Writer
}

// Pod is one running gateway pod.
type Pod struct {
	// Dir holds the pod's volumes, one directory each, and the image's
	// files.
	Dir  string
	spec corev1.PodSpec
	opts Options
	cmd  *exec.Cmd
	// Exited is closed when the gateway container has exited.
	Exited chan struct{}
	err    error
}

// imageConf is the image's /etc/nginx/nginx.conf, as the nginx images
// write it where it matters: errors to stderr, conf.d included inside
// http {}; every path nginx writes under the pod's directory.
const imageConf = `USER
pid DIR/nginx.pid;
error_log stderr notice;
events { worker_connections 1024; }
http {
    default_type application/octet-stream;
    access_log off;
    keepalive_timeout 65;
    client_body_temp_path DIR/client_body;
    proxy_temp_path DIR/proxy;
    fastcgi_temp_path DIR/fastcgi;
    uwsgi_temp_path DIR/uwsgi;
    scgi_temp_path DIR/scgi;
    include CONFD/*.conf;
}
`

// Start lays out dir as the pod's volumes, projects data into its
// ConfigMap volume, runs the init containers to completion and starts the
// gateway container of spec (its only container).
func Start(dir string, spec corev1.PodSpec, data map[string]string, opts Options) (*Pod, error) {
	p := &Pod{Dir: dir, spec: spec, opts: opts, Exited: make(chan struct{})}
	if len(spec.Containers) != 1 {
		return nil, fmt.Errorf("want one container, got %d", len(spec.Containers))
	}
	for _, v := range spec.Volumes {
		if err := os.MkdirAll(p.volume(v.Name), 0o755); err != nil {
			return nil, err
		}
	}
	if err := p.Project(data); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte(opts.ResolvConf), 0o644); err != nil {
		return nil, err
	}
	for _, c := range spec.InitContainers {
		cmd := p.command(c)
		cmd.Stdout, cmd.Stderr = nil, nil
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("init container %s: %w: %s", c.Name, err, out)
		}
	}
	if err := p.writeImageConf(); err != nil {
		return nil, err
	}
	c := spec.Containers[0]
	p.cmd = p.command(c)
	if opts.IP != "" {
		p.cmd.Args = append([]string{"unshare", "-n", "--"}, p.cmd.Args...)
		p.cmd.Path = "/usr/bin/unshare"
		if lp, err := exec.LookPath("unshare"); err == nil {
			p.cmd.Path = lp
		}
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.Exited)
	}()
	if opts.IP != "" {
		if err := netns.Attach(p.cmd.Process.Pid, opts.Link, opts.IP, opts.HostIP); err != nil {
			return nil, errors.Join(err, p.Stop(time.Second))
		}
	}
	return p, nil
}

func (p *Pod) volume(name string) string { return filepath.Join(p.Dir, "v", name) }

// mounts map each mount path of c, and the image's own paths, to a
// directory or file of the pod's, longest first.
func (p *Pod) mounts(c corev1.Container) [][2]string {
	m := [][2]string{{"/etc/resolv.conf", filepath.Join(p.Dir, "resolv.conf")}}
	for _, vm := range c.VolumeMounts {
		m = append(m, [2]string{vm.MountPath, p.volume(vm.Name)})
	}
	sort.Slice(m, func(i, j int) bool { return len(m[i][0]) > len(m[j][0]) })
	return m
}

// command is c's command line with its paths mapped to the pod's, the
// reloader's binary in the operator's image to Options.Binary and the image's nginx to
// Options.Nginx on the image's files.
func (p *Pod) command(c corev1.Container) *exec.Cmd {
	args := append(append([]string(nil), c.Command...), c.Args...)
	mounts := p.mounts(c)
	for i, a := range args {
		for _, m := range mounts {
			if a == m[0] || strings.HasPrefix(a, m[0]+"/") {
				a = m[1] + a[len(m[0]):]
				break
			}
			if k, v, ok := strings.Cut(a, "="); ok && (v == m[0] || strings.HasPrefix(v, m[0]+"/")) {
				a = k + "=" + m[1] + v[len(m[0]):]
				break
			}
		}
		args[i] = a
	}
	if args[0] == "/apigateway-reloader" {
		args[0] = p.opts.Binary
	}
	if n := len(args); n > 0 && args[n-1] == "nginx" {
		args = append(args[:n-1], p.opts.Nginx, "-c", filepath.Join(p.Dir, "nginx.conf"), "-p", p.Dir+"/", "-e", "stderr")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = os.Environ()
	if p.opts.TestBinary {
		cmd.Env = append(cmd.Env, reloaderEnv+"=1")
	}
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	if p.opts.Output != nil {
		cmd.Stdout, cmd.Stderr = p.opts.Output, p.opts.Output
	}
	return cmd
}

func (p *Pod) writeImageConf() error {
	user := ""
	if os.Geteuid() == 0 {
		// A root master would switch its workers to nobody, who cannot
		// write the pod's directories; a pod's nginx runs as one user.
		user = "user root;"
	}
	confd := ""
	for _, vm := range p.spec.Containers[0].VolumeMounts {
		if vm.MountPath == "/etc/nginx/conf.d" {
			confd = p.volume(vm.Name)
		}
	}
	if confd == "" {
		return errors.New("the container mounts nothing at /etc/nginx/conf.d")
	}
	conf := strings.NewReplacer("USER", user, "DIR", p.Dir, "CONFD", confd).Replace(imageConf)
	return os.WriteFile(filepath.Join(p.Dir, "nginx.conf"), []byte(conf), 0o644)
}

// Project writes data into the pod's ConfigMap volume as the kubelet's
// atomic writer does: the files in a new directory, then the ..data link
// swapped to it with one rename, each key a link through ..data. Readers
// see the old files or the new, never a mix.
func (p *Pod) Project(data map[string]string) error {
	var dir string
	for _, v := range p.spec.Volumes {
		if v.ConfigMap != nil {
			dir = p.volume(v.Name)
		}
	}
	if dir == "" {
		return errors.New("the pod has no ConfigMap volume")
	}
	ts, err := os.MkdirTemp(dir, "..ts-")
	if err != nil {
		return err
	}
	for k, v := range data {
		if err := os.WriteFile(filepath.Join(ts, k), []byte(v), 0o644); err != nil {
			return err
		}
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	for k := range data {
		link := filepath.Join(dir, k)
		if _, err := os.Lstat(link); errors.Is(err, os.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", k), link); err != nil {
				return err
			}
		}
	}
	if old != "" {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

// Addr is the pod's address for port: its IP, or loopback when it shares
// the caller's network namespace.
func (p *Pod) Addr(port int32) string {
	ip := p.opts.IP
	if ip == "" {
		ip = "127.0.0.1"
	}
	return net.JoinHostPort(ip, strconv.Itoa(int(port)))
}

// port is the container port of that name.
func (p *Pod) port(name string) (int32, error) {
	for _, cp := range p.spec.Containers[0].Ports {
		if cp.Name == name {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("no container port %q", name)
}

var client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}

// Ready asks the readiness probe's URL once, as the kubelet would.
func (p *Pod) Ready(ctx context.Context) bool {
	probe := p.spec.Containers[0].ReadinessProbe
	if probe == nil || probe.HTTPGet == nil {
		return false
	}
	port, err := p.port(probe.HTTPGet.Port.StrVal)
	if err != nil {
		port = probe.HTTPGet.Port.IntVal
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Addr(port)+probe.HTTPGet.Path, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}

// Status reads the reloader's status from its port named portName.
func (p *Pod) Status(ctx context.Context, portName string) (reloader.Status, error) {
	var st reloader.Status
	port, err := p.port(portName)
	if err != nil {
		return st, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Addr(port)+reloader.StatusPath, nil)
	if err != nil {
		return st, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// Stop stops the gateway container as the kubelet does, with the nginx
// images' stop signal (QUIT), and kills it after grace.
func (p *Pod) Stop(grace time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.Exited:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.Exited
		return fmt.Errorf("the gateway container did not stop within %s", grace)
	}
	return nil
}

// Err is how the gateway container exited, once Exited is closed.
func (p *Pod) Err() error { return p.err }
