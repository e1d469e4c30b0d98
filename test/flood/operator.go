package flood

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Operator is the operator binary running as a process of its own.
type Operator struct {
	cmd *exec.Cmd
	// Log is the file its output goes to.
	Log    string
	exited chan struct{}
	err    error
}

// StartOperator runs binary with args, env (NAME=value) added to this
// process's environment and its output in logFile, and waits (up to a
// minute) until readyURL (its /readyz) answers 200.
func StartOperator(ctx context.Context, binary string, args, env []string, logFile, readyURL string) (*Operator, error) {
	out, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s (make build builds it): %w", binary, err)
	}
	o := &Operator{cmd: cmd, Log: logFile, exited: make(chan struct{})}
	go func() {
		o.err = cmd.Wait()
		close(o.exited)
	}()
	if err := o.waitReady(ctx, readyURL); err != nil {
		_ = o.Stop()
		return nil, fmt.Errorf("%w; the log ends:\n%s", err, logTail(logFile))
	}
	return o, nil
}

// logTail is the end of the log at path, for an error that would
// otherwise name a file the test's cleanup deletes.
func logTail(path string) string {
	out, _ := os.ReadFile(path)
	const max = 4 << 10
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return string(out)
}

func (o *Operator) waitReady(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-o.exited:
			return false, fmt.Errorf("the operator exited: %w (log: %s)", o.err, o.Log)
		default:
		}
		return o.Ready(ctx, url), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the operator to be ready: %w (log: %s)", err, o.Log)
	}
	return nil
}

// Ready reports whether url (the operator's /readyz) answers 200.
func (o *Operator) Ready(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// Pid is the process's id.
func (o *Operator) Pid() int { return o.cmd.Process.Pid }

// Done is closed once the process has exited.
func (o *Operator) Done() <-chan struct{} { return o.exited }

// Err is how the process exited, once Done is closed.
func (o *Operator) Err() error { return o.err }

// Exited reports whether the process has exited.
func (o *Operator) Exited() bool {
	select {
	case <-o.exited:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM, as the kubelet does, waits (up to 45 s, then kills
// it) for the process to exit, and returns how it exited.
func (o *Operator) Stop() error {
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-o.exited:
	case <-time.After(45 * time.Second):
		_ = o.cmd.Process.Kill()
		<-o.exited
	}
	return o.err
}

// MemoryKiB is a field of the process's /proc status in KiB: VmRSS (its
// resident memory now) or VmHWM (the most it has been).
func (o *Operator) MemoryKiB(field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", o.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, o.cmd.Process.Pid)
}
