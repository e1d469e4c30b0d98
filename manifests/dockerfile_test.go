package manifests_test

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	"github.com/stretchr/testify/require"

	"example.com/apigateway-operator/test/testenv"
)

// TestDockerfileBuildsTheBinary builds the operator from exactly what the
// image's build stage sees: the files of the Dockerfile's COPY lines that
// .dockerignore lets into the context. A package added to the binary and
// missing from either file broke the image once without any test noticing
// (the layout change that moved internal/ away); `docker build` itself
// needs a daemon and base images this machine does not have.
func TestDockerfileBuildsTheBinary(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	matcher := dockerignore(t, root)
	dir := t.TempDir()
	for _, src := range builderCopies(t, root) {
		require.NoError(t, filepath.WalkDir(filepath.Join(root, src), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			if excluded, err := matcher.MatchesOrParentMatches(rel); err != nil || excluded {
				return err
			}
			return copyFile(path, filepath.Join(dir, rel))
		}))
	}
	build := exec.CommandContext(t.Context(), "go", "build", "-o", os.DevNull, "./cmd/apigateway-operator")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "the image's build stage cannot build the binary from what the Dockerfile copies:\n%s", out)
}

// builderCopies lists the sources of the COPY lines of the Dockerfile's
// first (build) stage.
func builderCopies(t *testing.T, root string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	defer f.Close()
	var srcs []string
	stages := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0:
		case fields[0] == "FROM":
			stages++
		case fields[0] == "COPY" && stages == 1:
			srcs = append(srcs, fields[1:len(fields)-1]...)
		}
	}
	require.NotEmpty(t, srcs, "no COPY in the Dockerfile's build stage")
	return srcs
}

// dockerignore is the matcher of the repository's .dockerignore.
func dockerignore(t *testing.T, root string) *patternmatcher.PatternMatcher {
	t.Helper()
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	require.NoError(t, err)
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	require.NoError(t, err)
	m, err := patternmatcher.New(patterns)
	require.NoError(t, err)
	return m
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}
