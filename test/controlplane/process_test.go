package controlplane

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// launcherEnv makes the test binary a launcher (TestLauncherHelper).
const launcherEnv = "CONTROLPLANE_TEST_LAUNCHER"

// TestLauncherHelper is a launcher run by TestChildrenDieWithTheLauncher:
// it starts a child with Run from a goroutine locked to its thread, lets
// that goroutine (and so its thread) end, prints the child's pid and the
// thread's id, and waits to be killed. Without the variable it does
// nothing.
func TestLauncherHelper(t *testing.T) {
	dir := os.Getenv(launcherEnv)
	if dir == "" {
		return
	}
	c, err := New(Options{Dir: dir})
	require.NoError(t, err)
	type started struct {
		pid, tid int
		err      error
	}
	out := make(chan started)
	var s started
	// The runtime never ends the main thread (its id is the pid): try
	// goroutines until one runs on another.
	for range 100 {
		go func() {
			// Locked and never unlocked: the runtime ends this thread
			// when the goroutine returns, as golang/go#27505 describes.
			runtime.LockOSThread()
			if syscall.Gettid() == syscall.Getpid() {
				out <- started{}
				return
			}
			p, err := c.Run(context.Background(), Command{Name: "child", Path: "/bin/sleep", Args: []string{"600"}})
			if err != nil {
				out <- started{err: err}
				return
			}
			out <- started{pid: p.Pid(), tid: syscall.Gettid()}
		}()
		if s = <-out; s.pid != 0 || s.err != nil {
			break
		}
	}
	require.NoError(t, s.err)
	require.NotZero(t, s.pid, "every goroutine ran on the main thread")
	fmt.Printf("child %d thread %d\n", s.pid, s.tid)
	time.Sleep(10 * time.Minute) // until the test kills it
}

// The parent-death signal kills a child when the launcher dies without
// stopping it (SIGKILL), and only then: not when the thread that asked for
// the child ends.
func TestChildrenDieWithTheLauncher(t *testing.T) {
	launcher := exec.Command(os.Args[0], "-test.run=^TestLauncherHelper$", "-test.count=1")
	launcher.Env = append(os.Environ(), launcherEnv+"="+filepath.Join(t.TempDir(), "run"))
	stdout, err := launcher.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, launcher.Start())
	t.Cleanup(func() { _ = launcher.Process.Kill(); _ = launcher.Wait() })

	var child, thread int
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the launcher printed no child")
	_, err = fmt.Sscanf(line, "child %d thread %d", &child, &thread)
	require.NoError(t, err, line)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })

	task := filepath.Join("/proc", strconv.Itoa(launcher.Process.Pid), "task", strconv.Itoa(thread))
	require.Eventually(t, func() bool { _, err := os.Stat(task); return os.IsNotExist(err) },
		time.Minute, 20*time.Millisecond, "the locked thread did not end")
	assert.True(t, Running(child), "the child died with the thread that started it")

	require.NoError(t, launcher.Process.Kill())
	require.Eventually(t, func() bool { return !Running(child) }, time.Minute, 20*time.Millisecond,
		"the child outlived its SIGKILLed launcher")
}
