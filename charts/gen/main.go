// Command gen writes the Helm chart's generated files (charts/generate.go)
// from the kustomize overlays, rendered by the kubectl that -kubectl names.
// Run from the repository root: `make chart`.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"example.com/apigateway-operator/charts"
)

func main() {
	kubectl := flag.String("kubectl", "bin/k8s/kubectl", "the kubectl that renders manifests/<overlay>")
	flag.Parse()
	if err := run(*kubectl); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(kubectl string) error {
	files, err := charts.Files(func(overlay string) ([]byte, error) {
		return exec.Command(kubectl, "kustomize", filepath.Join("manifests", overlay)).Output()
	})
	if err != nil {
		return err
	}
	// Templates of objects the overlays no longer ship must go too.
	stale, err := filepath.Glob(filepath.Join(charts.Dir, "templates", "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range stale {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(charts.Dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
