// Package node holds the real-node suite (a kubelet and containerd started
// by test/controlplane's Options.Node) and the images its pods run, which
// it writes as OCI tars for the node to import: there is no registry.
package node

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"example.com/apigateway-operator/test/ociimage"
	"example.com/apigateway-operator/test/testenv"
)

// The images' names, which pods give as their image (with
// imagePullPolicy Never: the node has nothing to pull from).
const (
	PauseImage = "apigateway.test/pause:1"
	EchoImage  = "apigateway.test/echo:1"
)

// echoServerPackage is the program of both images.
const echoServerPackage = "example.com/apigateway-operator/test/node/echoserver"

// nobody is the echo backend's user: a pod runs as non-root by default.
const nobody = "65534:65534"

// OperatorImage is the operator's image as the Dockerfile builds it (its
// binary at /apigateway-operator and the reloader's at
// /apigateway-reloader, user 65532): the gateway pods' init container
// copies the reloader from it.
const OperatorImage = "apigateway.test/operator:1"

// operatorImage is OperatorImage with the operator's and the reloader's
// binaries: what the Dockerfile's final stage holds
// (TestOperatorImageIsTheDockerfiles).
func operatorImage(operator, reloader []byte) ociimage.Image {
	return ociimage.Image{
		Name: OperatorImage,
		Files: []ociimage.File{
			{Path: "/apigateway-operator", Mode: 0o755, Data: operator},
			{Path: "/apigateway-reloader", Mode: 0o755, Data: reloader},
		},
		Config: ociimage.Config{Entrypoint: []string{"/apigateway-operator"}, User: "65532:65532"},
	}
}

// The operator's and the reloader's main packages.
const (
	operatorPackage = "example.com/apigateway-operator/cmd/apigateway-operator"
	reloaderPackage = "example.com/apigateway-operator/cmd/apigateway-reloader"
)

// WriteImages builds the echo server, the operator and the reloader
// (static, as the Dockerfile builds them) and writes the pause, echo, operator and
// gateway images as OCI tars into dir; it returns the tars' paths.
func WriteImages(dir string) ([]string, error) {
	data, err := build(dir, echoServerPackage, "-ldflags=-s -w")
	if err != nil {
		return nil, err
	}
	operator, err := build(dir, operatorPackage)
	if err != nil {
		return nil, err
	}
	reloader, err := build(dir, reloaderPackage, "-ldflags=-s -w")
	if err != nil {
		return nil, err
	}
	images := []ociimage.Image{
		{
			Name:   PauseImage,
			Files:  []ociimage.File{{Path: "/pause", Mode: 0o755, Data: data}},
			Config: ociimage.Config{Entrypoint: []string{"/pause", "pause"}, User: nobody},
		},
		{
			Name:   EchoImage,
			Files:  []ociimage.File{{Path: "/echoserver", Mode: 0o755, Data: data}},
			Config: ociimage.Config{Entrypoint: []string{"/echoserver"}, User: nobody},
		},
	}
	images = append(images, operatorImage(operator, reloader))
	for _, g := range []struct{ name, conf string }{{GatewayImage, gatewayNginxConf}, {RealIPGatewayImage, realIPNginxConf}} {
		gateway, err := gatewayImage(g.name, g.conf)
		if err != nil {
			return nil, err
		}
		images = append(images, gateway)
	}
	var paths []string
	for i, img := range images {
		path := filepath.Join(dir, fmt.Sprintf("image-%d.tar", i))
		if err := ociimage.WriteFile(path, img); err != nil {
			return nil, fmt.Errorf("writing %s: %w", img.Name, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// build builds the static binary of package pkg into dir and returns it.
func build(dir, pkg string, flags ...string) ([]byte, error) {
	binary := filepath.Join(dir, filepath.Base(pkg))
	args := append([]string{"build", "-trimpath", "-o", binary}, flags...)
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s: %w: %s", pkg, err, out)
	}
	return os.ReadFile(binary)
}

// GatewayImage is the gateway's nginx image: Debian's nginx (the
// machine's, `make nginx`), the libraries it links, and the layout of
// nginxinc/nginx-unprivileged, the operator's default: uid 101, an
// nginx.conf that includes conf.d inside http {} and writes only under
// /tmp, /var/cache/nginx and /var/run (the pod's emptyDirs).
const GatewayImage = "apigateway.test/nginx:1"

// gatewayNginxConf is the image's /etc/nginx/nginx.conf.
const gatewayNginxConf = `worker_processes auto;
error_log stderr notice;
pid /tmp/nginx.pid;
events { worker_connections 1024; }
http {
    proxy_temp_path /tmp/proxy_temp;
    client_body_temp_path /tmp/client_temp;
    fastcgi_temp_path /tmp/fastcgi_temp;
    uwsgi_temp_path /tmp/uwsgi_temp;
    scgi_temp_path /tmp/scgi_temp;
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    keepalive_timeout 65;
    include /etc/nginx/conf.d/*.conf;
}
`

// RealIPGatewayImage is GatewayImage as a team builds its own for a
// gateway behind its load balancer: its nginx.conf takes the client's
// address from X-Forwarded-For sent by the balancer's network, with the
// realip module's directives in http {}, as nginx's documentation shows
// them. real_ip_header and real_ip_recursive may be given once per
// context, so this nginx refuses a configuration that sets them again in
// the file it includes there: the operator's, once it is given trusted
// proxies (--gateway-trusted-proxies).
const RealIPGatewayImage = "apigateway.test/nginx-realip:1"

// realIPNginxConf is RealIPGatewayImage's /etc/nginx/nginx.conf.
var realIPNginxConf = strings.Replace(gatewayNginxConf, "    access_log off;\n",
	"    access_log off;\n    set_real_ip_from 10.0.0.0/8;\n    real_ip_header X-Forwarded-For;\n    real_ip_recursive on;\n", 1)

// gatewayImage assembles the gateway image name, with conf as its
// nginx.conf, from the machine's nginx.
func gatewayImage(name, conf string) (ociimage.Image, error) {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		return ociimage.Image{}, fmt.Errorf("nginx: %w: run `make nginx`", err)
	}
	libs, err := linkedLibraries(nginx)
	if err != nil {
		return ociimage.Image{}, err
	}
	files := []ociimage.File{
		{Path: "/etc/nginx/nginx.conf", Mode: 0o644, Data: []byte(conf)},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnginx:x:101:101:nginx:/nonexistent:/sbin/nologin\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnginx:x:101:\n")},
		{Path: "/tmp", Mode: fs.ModeDir | 0o1777},
		{Path: "/etc/nginx/conf.d", Mode: fs.ModeDir | 0o755, UID: 101, GID: 101},
		{Path: "/var/cache/nginx", Mode: fs.ModeDir | 0o755, UID: 101, GID: 101},
		{Path: "/var/run", Mode: fs.ModeDir | 0o755},
	}
	for _, path := range append([]string{"/usr/sbin/nginx", "/etc/nginx/mime.types"}, libs...) {
		data, err := os.ReadFile(path) // a library's symlinks followed: the image has the file where ldd named it
		if err != nil {
			return ociimage.Image{}, err
		}
		files = append(files, ociimage.File{Path: path, Mode: 0o755, Data: data})
	}
	return ociimage.Image{
		Name:  name,
		Files: files,
		Config: ociimage.Config{
			Entrypoint: []string{"nginx", "-g", "daemon off;"},
			Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			User:       "101:101",
		},
	}, nil
}

// linkedLibraries are the shared libraries binary loads, and its dynamic
// loader, as ldd lists them.
func linkedLibraries(binary string) ([]string, error) {
	out, err := exec.Command("ldd", binary).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", binary, err)
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) >= 3 && fields[1] == "=>" && strings.HasPrefix(fields[2], "/"):
			libs = append(libs, fields[2])
		case len(fields) >= 1 && strings.HasPrefix(fields[0], "/"):
			libs = append(libs, fields[0])
		}
	}
	return libs, nil
}

// Tools are the node's binaries, which `make node` builds into bin/node.
var Tools = []string{"kubelet", "kube-scheduler", "kube-proxy", "containerd", "ctr", "containerd-shim-runc-v2"}

// BinDir is where `make node` puts Tools: bin/node, or $NODE_BIN.
func BinDir() (string, error) {
	dir := os.Getenv("NODE_BIN")
	if dir == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin", "node")
	}
	for _, name := range Tools {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("%w: run `make node`", err)
		}
	}
	return dir, nil
}
