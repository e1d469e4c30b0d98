package dataplane

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Wait bounds every wait of the data plane: nginx starting, stopping or
// reloading, and each request.
const Wait = 10 * time.Second

// NginxBinary finds Debian's nginx; a missing one fails the test, since
// without it nothing checks that nginx accepts what the operator renders.
func NginxBinary(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"nginx", "/usr/sbin/nginx"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Fatal("nginx not found: run `make nginx` (hack/install-nginx.sh installs Debian's nginx) and test again")
	return ""
}

// WelcomePage stands in for the images' /usr/share/nginx/html/index.html.
const WelcomePage = "<h1>Welcome to nginx!</h1>\n"

// WritePrefix writes config as conf.d/gateway.conf under prefix and a
// main configuration that includes it inside http {}, as the images'
// nginx.conf includes /etc/nginx/conf.d/*.conf (which sets no
// server_names_hash_* directive, so the rendered file may), and logs
// every request as they do: in their "main" format, to the file they link
// to /dev/stdout (here nginx's output, output.log), which the rendered
// file must switch off unless its gateway asks for a log. main holds
// extra main-context directives. It returns the main file's path.
func WritePrefix(t testing.TB, prefix, main, config string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(prefix, "conf.d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(prefix, "conf.d", "gateway.conf"), []byte(config), 0o644))
	// nginx's default document root, PREFIX/html, holds the page the
	// images ship, so a request that falls through to it shows.
	require.NoError(t, os.MkdirAll(filepath.Join(prefix, "html"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(prefix, "html", "index.html"), []byte(WelcomePage), 0o644))
	conf := main + `
events {}
http {
    default_type application/octet-stream;
    log_format main '$remote_addr - $remote_user [$time_local] "$request" '
                    '$status $body_bytes_sent "$http_referer" '
                    '"$http_user_agent" "$http_x_forwarded_for"';
    access_log /dev/stdout main;
    sendfile on;
    keepalive_timeout 65;
    client_body_temp_path PREFIX/client_body;
    proxy_temp_path PREFIX/proxy;
    fastcgi_temp_path PREFIX/fastcgi;
    uwsgi_temp_path PREFIX/uwsgi;
    scgi_temp_path PREFIX/scgi;
    include PREFIX/conf.d/*.conf;
}
`
	mainPath := filepath.Join(prefix, "nginx.conf")
	require.NoError(t, os.WriteFile(mainPath, []byte(strings.ReplaceAll(conf, "PREFIX", prefix)), 0o644))
	return mainPath
}

// Args are nginx's arguments for the configuration at mainPath with its
// pid file and error log inside prefix (-e: Debian's nginx would otherwise
// log to stderr before it reads the configuration). The error log keeps
// notices and warnings, as the nginx images' nginx.conf does, so that what
// the rendered file makes nginx warn of shows.
func Args(prefix, mainPath string, extra ...string) []string {
	args := []string{"-c", mainPath, "-p", prefix + "/", "-e", filepath.Join(prefix, "error.log"),
		"-g", "pid " + filepath.Join(prefix, "nginx.pid") + "; error_log " + filepath.Join(prefix, "error.log") + " notice;"}
	return append(args, extra...)
}

// Nginx is Debian's nginx running in the foreground as the test's child,
// with its prefix, pid file and error log in a temporary directory.
type Nginx struct {
	bin, prefix, mainPath string
	cmd                   *exec.Cmd
	exited                chan struct{}
	waitErr               error
}

// StartNginx runs nginx on config (an http-level file, as the images'
// conf.d holds) until the test ends, and waits until GET healthPath on
// healthAddr answers 200. It returns an error, for the caller to retry
// elsewhere or fail, when nginx exits first (a port taken, say) or does
// not answer within Wait.
func StartNginx(t testing.TB, bin, config, healthAddr, healthPath string) (*Nginx, error) {
	t.Helper()
	n := &Nginx{bin: bin, prefix: t.TempDir(), exited: make(chan struct{})}
	// A root master switches its workers to "nobody" unless told
	// otherwise, and they could not write the temporary directories; a
	// master that is not root keeps its user and refuses the directive.
	main := "daemon off;\nmaster_process on;\nworker_processes 1;\n"
	if os.Geteuid() == 0 {
		main += "user root;\n"
	}
	n.mainPath = WritePrefix(t, n.prefix, main, config)
	n.cmd = exec.Command(n.bin, Args(n.prefix, n.mainPath)...)
	out, err := os.Create(filepath.Join(n.prefix, "output.log"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	n.cmd.Stdout, n.cmd.Stderr = out, out
	if err := n.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		n.waitErr = n.cmd.Wait()
		close(n.exited)
	}()
	t.Cleanup(func() { n.stop(t) })
	deadline := time.Now().Add(Wait)
	for time.Now().Before(deadline) {
		select {
		case <-n.exited:
			return nil, fmt.Errorf("nginx exited (%w):\n%s", n.waitErr, n.Logs())
		default:
		}
		if status, _, err := RawRequest(healthAddr, "GET "+healthPath+" HTTP/1.1", "localhost"); err == nil && status == http.StatusOK {
			return n, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("nginx did not answer on %s within %s:\n%s", healthAddr, Wait, n.Logs())
}

// Stop ends nginx now rather than when the test ends: what it wrote
// before (Output) is then all it will write.
func (n *Nginx) Stop(t testing.TB) { n.stop(t) }

// stop ends nginx (SIGTERM, the fast shutdown), killing it if it does not
// exit in time; once it has, it does nothing.
func (n *Nginx) stop(t testing.TB) {
	select {
	case <-n.exited:
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(Wait):
		_ = n.cmd.Process.Kill()
		<-n.exited
		t.Errorf("nginx did not stop within %s:\n%s", Wait, n.Logs())
	}
}

// Reload replaces the configuration, checks it with nginx -t and sends
// the master SIGHUP, as a pod's reloader would. Workers with the old
// configuration finish gracefully, so a change answers once the new
// workers run: the caller waits for it.
func (n *Nginx) Reload(t testing.TB, config string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(n.prefix, "conf.d", "gateway.conf"), []byte(config), 0o644))
	out, err := exec.Command(n.bin, Args(n.prefix, n.mainPath, "-t")...).CombinedOutput()
	require.NoError(t, err, "nginx -t refused the new configuration:\n%s", out)
	require.NoError(t, n.cmd.Process.Signal(syscall.SIGHUP))
}

// Output is what nginx has written to its standard output (and standard
// error) so far: the access log lines of a configuration that logs to
// /dev/stdout, as the images' does.
func (n *Nginx) Output() string {
	data, _ := os.ReadFile(filepath.Join(n.prefix, "output.log"))
	return string(data)
}

// Logs are nginx's output and error log, for failure messages.
func (n *Nginx) Logs() string {
	var b strings.Builder
	for _, name := range []string{"output.log", "error.log"} {
		data, _ := os.ReadFile(filepath.Join(n.prefix, name))
		fmt.Fprintf(&b, "--- %s\n%s", name, data)
	}
	return b.String()
}
