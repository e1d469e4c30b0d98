// Package netns gives a test (or the bench) a network namespace of its
// own, so that what it starts can bind the ports and addresses a pod
// would (0.0.0.0:8080, a pod IP) without touching the machine's network:
// the test binary runs itself again under `unshare -n` (which needs root),
// with loopback up; pods can get namespaces of their own, joined to it by
// veth pairs. Nothing here outlives the processes: a network namespace
// goes away with the last process in it.
package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// insideEnv marks the process that runs inside the namespace.
const insideEnv = "APIGATEWAY_TEST_NETNS"

// Inside reports whether this process runs in the namespace Enter made.
func Inside() bool { return os.Getenv(insideEnv) != "" }

// Enter makes the rest of the process run in a new network namespace: the
// first call re-runs this binary, with the same arguments, under `unshare
// -n` and returns its exit code with done set, which the caller exits
// with; in the re-run, Enter brings loopback up and returns done unset.
func Enter() (code int, done bool, err error) {
	if Inside() {
		return 0, false, Run("ip", "link", "set", "lo", "up")
	}
	if os.Geteuid() != 0 {
		return 1, true, fmt.Errorf("a network namespace needs root (unshare -n); running as uid %d", os.Geteuid())
	}
	cmd := exec.Command("unshare", append([]string{"-n", "--", os.Args[0]}, os.Args[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), insideEnv+"=1")
	err = cmd.Run()
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		return exit.ExitCode(), true, nil
	}
	if err != nil {
		return 1, true, fmt.Errorf("running the tests under unshare -n: %w", err)
	}
	return 0, true, nil
}

// Isolated runs the top-level test t again, alone, in a network namespace
// of its own (Enter's, with loopback up), and reports whether this is
// that run: there it returns true and t goes on, free to give loopback
// addresses (ip addr add ... dev lo) the machine never sees. Outside, it
// waits for the run, fails t with its output if it failed, and returns
// false: t then has nothing left to do.
func Isolated(t *testing.T) bool {
	t.Helper()
	if Inside() {
		if err := Run("ip", "link", "set", "lo", "up"); err != nil {
			t.Fatal(err)
		}
		return true
	}
	if os.Geteuid() != 0 {
		t.Fatalf("a network namespace needs root (unshare -n); running as uid %d", os.Geteuid())
	}
	cmd := exec.Command("unshare", "-n", "--", os.Args[0], "-test.run", "^"+regexp.QuoteMeta(t.Name())+"$", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), insideEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in a network namespace of its own: %v\n%s", t.Name(), err, out)
	}
	t.Logf("in a network namespace of its own:\n%s", out)
	return false
}

// AddLoopbackAddress gives this namespace's loopback the address ip/32.
func AddLoopbackAddress(ip string) error {
	return Run("ip", "addr", "add", ip+"/32", "dev", "lo")
}

// Attach joins the network namespace of process pid (started with
// `unshare -n`) to this one with a veth pair named link here and eth0
// there: the process's namespace gets podIP, and a route to hostIP, an
// address of this namespace (AddLoopbackAddress), which is what it sees
// as the source of this side's packets.
func Attach(pid int, link, podIP, hostIP string) error {
	p := strconv.Itoa(pid)
	if err := waitUnshared(pid); err != nil {
		return err
	}
	in := func(args ...string) []string { return append([]string{"nsenter", "-t", p, "-n", "--"}, args...) }
	for _, cmd := range [][]string{
		{"ip", "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", p},
		{"ip", "link", "set", link, "up"},
		in("ip", "link", "set", "lo", "up"),
		in("ip", "addr", "add", podIP+"/32", "dev", "eth0"),
		in("ip", "link", "set", "eth0", "up"),
		in("ip", "route", "add", hostIP+"/32", "dev", "eth0"),
		{"ip", "route", "add", podIP + "/32", "dev", link, "src", hostIP},
	} {
		if err := Run(cmd[0], cmd[1:]...); err != nil {
			_ = Run("ip", "link", "del", link)
			return err
		}
	}
	return nil
}

// waitUnshared waits until process pid runs in a network namespace other
// than this process's: `unshare -n` makes it just after it starts.
func waitUnshared(pid int) error {
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		theirs, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
		if err != nil {
			return fmt.Errorf("process %d: %w", pid, err)
		}
		if theirs != self {
			return nil
		}
	}
	return fmt.Errorf("process %d did not leave the network namespace within 10s", pid)
}

// Run runs a command, returning its output with its error.
func Run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}
