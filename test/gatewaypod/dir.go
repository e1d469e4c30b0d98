package gatewaypod

import (
	"os"
	"testing"
)

// TempDir is a temporary directory, removed when the test ends, to hold
// pods' directories (Start's dir): a pod's Unix sockets live there, and a
// socket's path must fit in 108 bytes, which one below t.TempDir (named
// after the test) can exceed. prefix names it, for the test's leftovers.
func TempDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
