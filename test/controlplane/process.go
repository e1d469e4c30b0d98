package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pollInterval is how often readiness and exits are checked.
const pollInterval = 100 * time.Millisecond

// Command is a process to run beside the control plane.
type Command struct {
	// Name names its pid file and log (pids/<Name>.pid, logs/<Name>.log).
	Name string
	Path string
	Args []string
	// Env adds variables to this process's environment.
	Env []string
	// Stdout and Stderr default to logs/<Name>.log.
	Stdout, Stderr io.Writer
	// Ready, when set, is called until it returns nil: the process is
	// ready then.
	Ready func(ctx context.Context) error
}

// Process is a running process of the control plane.
type Process struct {
	name, pidFile, log string
	// command is what started it, and starts it again.
	command Command
	cmd     *exec.Cmd
	done    chan struct{}
	err     error // of Wait, once done is closed
}

// Name is the Command's name.
func (p *Process) Name() string { return p.name }

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process ended, once Done is closed.
func (p *Process) Err() error { return p.err }

// Log is the file its output goes to, or "" when Command set both writers.
func (p *Process) Log() string { return p.log }

// Run starts cmd, records its pid in pids/<Name>.pid and waits until it is
// ready, at most Options.StartTimeout. Stop stops it before the control
// plane's own processes. A process that does not become ready is stopped,
// and the error (a *ProcessError when it exited or timed out) ends with its
// log's last lines.
func (c *ControlPlane) Run(ctx context.Context, cmd Command) (*Process, error) {
	p, err := c.launch(ctx, cmd, os.O_TRUNC)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// StopProcess stops p, one of Processes, as Stop would, and forgets it:
// for a process that should not outlive a test while the control plane
// does.
func (c *ControlPlane) StopProcess(ctx context.Context, p *Process) error {
	c.procs = slices.DeleteFunc(c.procs, func(q *Process) bool { return q == p })
	return p.stop(ctx, c.opts.StopTimeout)
}

// find is the running process named name, or nil.
func (c *ControlPlane) find(name string) *Process {
	i := slices.IndexFunc(c.procs, func(p *Process) bool { return p.name == name })
	if i < 0 {
		return nil
	}
	return c.procs[i]
}

// restart stops p and runs its command again in its place among
// Processes (so that Stop keeps the order), its log continued. A kill on
// the way is logged, not returned (see RestartAPIServer); a process that
// does not start again is forgotten.
func (c *ControlPlane) restart(ctx context.Context, p *Process) error {
	if err := p.stop(ctx, c.opts.StopTimeout); err != nil {
		c.log(err.Error())
	}
	i := slices.Index(c.procs, p)
	q, err := c.launch(ctx, p.command, os.O_APPEND)
	if err != nil {
		c.procs = slices.Delete(c.procs, i, i+1)
		return err
	}
	c.procs[i] = q
	return nil
}

// launch spawns cmd and waits until it is ready; one that does not become
// ready is stopped. logMode (os.O_TRUNC or os.O_APPEND) says whether its
// log starts over.
func (c *ControlPlane) launch(ctx context.Context, cmd Command, logMode int) (*Process, error) {
	p, err := c.spawn(cmd, logMode)
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, p, cmd.Ready, c.opts.StartTimeout); err != nil {
		return nil, errors.Join(err, p.stop(context.Background(), c.opts.StopTimeout))
	}
	return p, nil
}

// spawn starts the process in its own process group, so that a terminal's
// Ctrl-C reaches only the program that started it, which then stops its
// processes in order. The kernel kills it (SIGKILL) when that program
// dies without stopping it (SIGKILL, a crash, SIGPIPE): nothing outlives
// the launcher.
func (c *ControlPlane) spawn(cmd Command, logMode int) (*Process, error) {
	p := &Process{name: cmd.Name, command: cmd, pidFile: filepath.Join(c.dir, pidsDir, cmd.Name+".pid"), done: make(chan struct{})}
	p.cmd = exec.Command(cmd.Path, cmd.Args...)
	p.cmd.Stdout, p.cmd.Stderr = cmd.Stdout, cmd.Stderr
	if len(cmd.Env) > 0 {
		p.cmd.Env = append(os.Environ(), cmd.Env...)
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if cmd.Stdout == nil || cmd.Stderr == nil {
		p.log = filepath.Join(c.dir, logsDir, cmd.Name+".log")
		f, err := os.OpenFile(p.log, os.O_WRONLY|os.O_CREATE|logMode, 0o600)
		if err != nil {
			return nil, err
		}
		defer f.Close() // the child has its own copy
		if cmd.Stdout == nil {
			p.cmd.Stdout = f
		}
		if cmd.Stderr == nil {
			p.cmd.Stderr = f
		}
	}
	if err := startOnLockedThread(p.cmd); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	if err := os.WriteFile(p.pidFile, []byte(strconv.Itoa(p.Pid())+"\n"), 0o600); err != nil {
		return nil, errors.Join(err, p.stop(context.Background(), 0))
	}
	return p, nil
}

// waitReady calls ready until it succeeds, the process exits, timeout
// passes or ctx is done.
func waitReady(ctx context.Context, p *Process, ready func(context.Context) error, timeout time.Duration) error {
	if ready == nil {
		return nil
	}
	readyCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		err := ready(readyCtx)
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return &ProcessError{Name: p.name, What: fmt.Sprintf("exited while starting (%v)", p.err), Log: p.log}
		case <-readyCtx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &ProcessError{Name: p.name, What: fmt.Sprintf("not ready after %s: %v", timeout, err), Log: p.log}
		case <-tick.C:
		}
	}
}

// stop sends the process SIGTERM and waits for it to exit, then sends
// SIGKILL after timeout or as soon as ctx is done. It removes the pid
// file. The error says when the process had to be killed.
func (p *Process) stop(ctx context.Context, timeout time.Duration) error {
	defer os.Remove(p.pidFile)
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	var why string
	select {
	case <-p.done:
		return nil
	case <-t.C:
		why = fmt.Sprintf("did not stop within %s", timeout)
	case <-ctx.Done():
		why = "was told to hurry"
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	<-p.done
	return fmt.Errorf("%s (pid %d) %s: killed it", p.name, p.Pid(), why)
}

// terminate stops a process that is not a child of this one (a leftover of
// a killed run), as stop does a child: only /proc tells when it is gone.
func terminate(name string, pid int, timeout time.Duration) error {
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if gone(pid, timeout) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if !gone(pid, timeout) {
		return fmt.Errorf("%s (pid %d) is still running after SIGKILL", name, pid)
	}
	return fmt.Errorf("%s (pid %d) did not stop within %s: killed it", name, pid, timeout)
}

// gone waits up to timeout for process pid to stop running.
func gone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for Running(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollInterval)
	}
	return true
}

// Running reports whether process pid has yet to finish exiting. A
// zombie (exited, not yet reaped by its parent, or by init for one whose
// parent died) is not running; but a killed process's main thread turns
// zombie before its other threads have exited, and until they have, the
// process still holds its files and its listening ports (kube-apiserver's
// for a quarter of a second on a busy machine): it is running until its
// last thread is gone.
func Running(pid int) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
		if err == nil && statRunning(stat) {
			return true
		}
	}
	return false
}

// exiting reports whether process pid's main thread has exited while
// others have not yet.
func exiting(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	return err == nil && !statRunning(stat) && Running(pid)
}

// statRunning reads a /proc/<pid>/stat line: the state follows the command
// name, which is in parentheses and may itself hold any character.
func statRunning(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return false
	}
	fields := strings.Fields(string(stat[i+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// ProcessError is a process that exited, or did not become ready in time.
type ProcessError struct {
	Name, What string
	// Log is the file its output went to, or "".
	Log string
}

// Error implements error, ending with the log's last lines: what went
// wrong is there.
func (e *ProcessError) Error() string {
	msg := e.Name + " " + e.What
	if tail := e.tail(20); tail != "" {
		msg += "\n--- last lines of " + e.Log + ":\n" + tail
	}
	return msg
}

func (e *ProcessError) tail(n int) string {
	if e.Log == "" {
		return ""
	}
	data, err := os.ReadFile(e.Log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
