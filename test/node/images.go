// Package node holds the real-node suite (a kubelet and containerd started
// by test/controlplane's Options.Node) and the images its pods run, which
// it writes as OCI tars for the node to import: there is no registry.
package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"example.com/apigateway-operator/test/ociimage"
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

// WriteImages builds the echo server (static) and writes the pause and echo
// images as OCI tars into dir; it returns the tars' paths.
func WriteImages(dir string) ([]string, error) {
	binary := filepath.Join(dir, "echoserver")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", binary, echoServerPackage)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the echo server: %w: %s", err, out)
	}
	data, err := os.ReadFile(binary)
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
