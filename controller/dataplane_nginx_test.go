package controller

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// dataPlaneWait bounds every wait of the data-plane test: nginx starting,
// stopping or reloading, and each request.
const dataPlaneWait = 10 * time.Second

// nginxProcess is Debian's nginx running in the foreground as the test's
// child, with its prefix, pid file and error log in a temporary directory.
type nginxProcess struct {
	bin, prefix, mainPath string
	opts                  renderOptions // what the configuration was rendered with
	httpAddr, healthAddr  string
	cmd                   *exec.Cmd
	exited                chan struct{}
	waitErr               error
}

// startNginx renders gw for loopback (free ports, the given resolver) and
// runs nginx on it until the test ends. A port taken between choosing and
// binding it is chosen again.
func startNginx(t *testing.T, bin string, render func(renderOptions) (string, error), resolver string) *nginxProcess {
	t.Helper()
	var lastErr error
	for range 3 {
		opts := renderOptions{Resolvers: []string{resolver}, listenAddress: "127.0.0.1", httpPort: freePort(t), healthPort: freePort(t)}
		config, err := render(opts)
		require.NoError(t, err)
		n := &nginxProcess{
			bin: bin, prefix: t.TempDir(), opts: opts, exited: make(chan struct{}),
			httpAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.httpPort)),
			healthAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.healthPort)),
		}
		if lastErr = n.start(t, config); lastErr == nil {
			return n
		}
		if !strings.Contains(lastErr.Error(), "Address already in use") {
			break
		}
	}
	require.NoError(t, lastErr)
	return nil
}

// freePort is a loopback TCP port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// start runs nginx and waits until its health server answers.
func (n *nginxProcess) start(t *testing.T, config string) error {
	// A root master switches its workers to "nobody" unless told
	// otherwise, and they could not write the temporary directories; a
	// master that is not root keeps its user and refuses the directive.
	main := "daemon off;\nmaster_process on;\nworker_processes 1;\n"
	if os.Geteuid() == 0 {
		main += "user root;\n"
	}
	n.mainPath = writeNginxPrefix(t, n.prefix, main, config)
	n.cmd = exec.Command(n.bin, nginxArgs(n.prefix, n.mainPath)...)
	out, err := os.Create(filepath.Join(n.prefix, "output.log"))
	if err != nil {
		return err
	}
	defer out.Close()
	n.cmd.Stdout, n.cmd.Stderr = out, out
	if err := n.cmd.Start(); err != nil {
		return err
	}
	go func() {
		n.waitErr = n.cmd.Wait()
		close(n.exited)
	}()
	t.Cleanup(func() { n.stop(t) })
	deadline := time.Now().Add(dataPlaneWait)
	for time.Now().Before(deadline) {
		select {
		case <-n.exited:
			return fmt.Errorf("nginx exited (%w):\n%s", n.waitErr, n.logs())
		default:
		}
		if status, _, err := rawRequest(n.healthAddr, "GET "+HealthPath+" HTTP/1.1", "localhost"); err == nil && status == http.StatusOK {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("nginx did not answer on %s within %s:\n%s", n.healthAddr, dataPlaneWait, n.logs())
}

// stop ends nginx (SIGTERM, the fast shutdown), killing it if it does not
// exit in time.
func (n *nginxProcess) stop(t *testing.T) {
	select {
	case <-n.exited:
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(dataPlaneWait):
		_ = n.cmd.Process.Kill()
		<-n.exited
		t.Errorf("nginx did not stop within %s:\n%s", dataPlaneWait, n.logs())
	}
}

// reload replaces the configuration, checks it with nginx -t and sends
// the master SIGHUP, as a pod's reloader would.
func (n *nginxProcess) reload(t *testing.T, config string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(n.prefix, "conf.d", "gateway.conf"), []byte(config), 0o644))
	out, err := exec.Command(n.bin, nginxArgs(n.prefix, n.mainPath, "-t")...).CombinedOutput()
	require.NoError(t, err, "nginx -t refused the new configuration:\n%s", out)
	require.NoError(t, n.cmd.Process.Signal(syscall.SIGHUP))
}

// logs are nginx's output and error log, for failure messages.
func (n *nginxProcess) logs() string {
	var b strings.Builder
	for _, name := range []string{"output.log", "error.log"} {
		data, _ := os.ReadFile(filepath.Join(n.prefix, name))
		fmt.Fprintf(&b, "--- %s\n%s", name, data)
	}
	return b.String()
}

// rawRequest sends requestLine (e.g. "GET /x HTTP/1.1", sent byte for byte,
// so the test controls the exact request target) with a Host header to
// addr and returns the response's status and body.
func rawRequest(addr, requestLine, host string, headers ...string) (int, string, error) {
	conn, err := net.DialTimeout("tcp", addr, dataPlaneWait)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(dataPlaneWait)); err != nil {
		return 0, "", err
	}
	extra := ""
	for _, h := range headers {
		extra += h + "\r\n"
	}
	if _, err := fmt.Fprintf(conn, "%s\r\nHost: %s\r\n%sConnection: close\r\n\r\n", requestLine, host, extra); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
