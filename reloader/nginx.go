package reloader

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// nginxProcess is the image's nginx, run as the reloader's child.
type nginxProcess struct {
	// command is nginx and its arguments, without -g (see globals).
	command []string
	// globals is the -g argument: main-context directives the reloader
	// adds to the image's nginx.conf.
	globals string
	// socket is the probe server's Unix socket (probeConfig).
	socket string
	stdout io.Writer
	stderr io.Writer

	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	// errors are nginx's latest [emerg], [alert] and [crit] lines, which
	// say why a reload did not take.
	mu     sync.Mutex
	errors []string
	probe  *http.Client
}

func newNginx(command []string, shutdownTimeout time.Duration, socket string, stdout, stderr io.Writer) *nginxProcess {
	// daemon off: nginx stays the reloader's child (the images' CMD says
	// the same). worker_shutdown_timeout bounds how long old workers keep
	// their connections after a reload or on shutdown.
	globals := fmt.Sprintf("daemon off; worker_shutdown_timeout %ds;", int(shutdownTimeout.Round(time.Second)/time.Second))
	return &nginxProcess{
		command: command, globals: globals, socket: socket, stdout: stdout, stderr: stderr,
		probe: &http.Client{
			Timeout: time.Second,
			Transport: &http.Transport{
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, "unix", socket)
				},
				DisableKeepAlives: true,
			},
		},
	}
}

func (n *nginxProcess) args(extra ...string) []string {
	return append(append(append([]string(nil), n.command[1:]...), extra...), "-g", n.globals)
}

// testTimeout bounds one `nginx -t`.
const testTimeout = time.Minute

// test runs `nginx -t` on the files as they are now, with the image's own
// nginx and nginx.conf; a refusal returns nginx's output.
func (n *nginxProcess) test(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, n.command[0], n.args("-t")...).CombinedOutput()
	if err != nil {
		return nginxMessage(out), err
	}
	return "", nil
}

// start runs nginx in the foreground: its output goes to the reloader's,
// and its error lines are kept for the next refusal's message.
func (n *nginxProcess) start() error {
	// A socket left by a previous run of the container would make the
	// bind fail.
	if err := os.Remove(n.socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	cmd := exec.Command(n.command[0], n.args()...)
	cmd.Stdout = n.stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", n.command[0], err)
	}
	n.cmd, n.exited = cmd, make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		n.copyErrors(stderr)
	}()
	go func() {
		// Wait closes the pipe only once the copy has read it to the end.
		<-copied
		n.err = cmd.Wait()
		close(n.exited)
	}()
	return nil
}

// copyErrors copies nginx's error output to the reloader's, without the
// requests' query strings, keeping the last few lines that say why
// something failed.
func (n *nginxProcess) copyErrors(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := redactQueries(sc.Text())
		fmt.Fprintln(n.stderr, line)
		if strings.Contains(line, "[emerg]") || strings.Contains(line, "[alert]") || strings.Contains(line, "[crit]") {
			n.mu.Lock()
			n.errors = append(n.errors, line)
			if len(n.errors) > 4 {
				n.errors = n.errors[len(n.errors)-4:]
			}
			n.mu.Unlock()
		}
	}
	// Keep draining whatever comes after an oversized line, or nginx
	// would block writing to a full pipe.
	_, _ = io.Copy(n.stderr, r)
}

// takeErrors returns and forgets the error lines kept so far.
func (n *nginxProcess) takeErrors() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	msg := strings.Join(n.errors, "\n")
	n.errors = nil
	return msg
}

func (n *nginxProcess) signal(sig syscall.Signal) error {
	return n.cmd.Process.Signal(sig)
}

// loaded asks the workers which configuration they serve.
func (n *nginxProcess) loaded(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://reloader"+probeLocation, nil)
	if err != nil {
		return "", err
	}
	resp, err := n.probe.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 128))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("probe answered %s", resp.Status)
	}
	return string(body), nil
}

// errNginxExited says nginx stopped without being asked to.
var errNginxExited = errors.New("nginx exited")

// exitErr is how nginx ended, once exited is closed.
func (n *nginxProcess) exitErr() error {
	if n.err == nil {
		return fmt.Errorf("%w with status 0", errNginxExited)
	}
	return fmt.Errorf("%w: %w", errNginxExited, n.err)
}

// waitLoaded waits until the workers serve hash, nginx exits, or timeout
// passes.
func (n *nginxProcess) waitLoaded(ctx context.Context, hash string, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := n.loaded(ctx)
		if err == nil && got == hash {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("the workers still serve %.12s", got)
		}
		select {
		case <-n.exited:
			return n.exitErr()
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("after %s: %w", timeout, err)
		case <-tick.C:
		}
	}
}

// workers are the pids of nginx's worker processes now: the master's
// children, read from /proc.
func (n *nginxProcess) workers() []int {
	master := n.cmd.Process.Pid
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok && ppid == master {
			out = append(out, pid)
		}
	}
	return out
}

// parentOf reads a process's parent pid from /proc/PID/stat, whose second
// field (the command name, in parentheses) may itself hold spaces and
// parentheses.
func parentOf(pid int) (int, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	rest := data[bytes.LastIndexByte(data, ')')+1:]
	f := strings.Fields(string(rest))
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// waitRetired waits until none of the workers old still accepts
// connections: each has exited, or has taken its shutdown signal, which
// it shows in its title as it closes its listening sockets. The master
// signals the old workers only some 100 ms after it starts the new ones,
// and until then either generation may take a new connection.
func (n *nginxProcess) waitRetired(ctx context.Context, old []int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		busy := 0
		for _, pid := range old {
			cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			if ppid, ok := parentOf(pid); err == nil && ok && ppid == n.cmd.Process.Pid && !bytes.Contains(cmdline, []byte("shutting down")) {
				busy++
			}
		}
		if busy == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d workers of the previous configuration still accept connections after %s", busy, timeout)
		case <-tick.C:
		}
	}
}
