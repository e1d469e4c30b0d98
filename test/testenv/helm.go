package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// HelmBin is the pinned helm that `make helm` builds into the repository
// at root, its version read from the Makefile so that the two never
// disagree. A missing helm is an error, for the tests to fail on rather
// than skip: an untested chart must not pass.
func HelmBin(root string) (string, error) {
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^HELM_VERSION\s*\?=\s*(\S+)`).FindSubmatch(makefile)
	if m == nil {
		return "", fmt.Errorf("%s pins no HELM_VERSION", filepath.Join(root, "Makefile"))
	}
	bin := filepath.Join(root, "bin", "helm-"+string(m[1]))
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("helm is missing: run `make helm` (make test builds it first): %w", err)
	}
	return bin, nil
}
