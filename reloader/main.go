package reloader

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"example.com/apigateway-operator/push"
	"example.com/apigateway-operator/render"
)

// Main runs the apigateway-reloader binary with args (after its name) and
// returns the exit code:
//
//	apigateway-reloader install DEST              copy this binary to DEST (the init container)
//	apigateway-reloader run [flags] [-- nginx ...] supervise and reload nginx (the gateway container)
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: reloader install DEST | reloader run [flags] [-- nginx [args]]")
		return 2
	}
	switch args[0] {
	case "install":
		if len(args) != 2 {
			fmt.Fprintln(stderr, "usage: reloader install DEST")
			return 2
		}
		if err := Install(args[1]); err != nil {
			fmt.Fprintf(stderr, "reloader install: %v\n", err)
			return 1
		}
		return 0
	case "run":
		return runMain(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "reloader: unknown command %q (install or run)\n", args[0])
		return 2
	}
}

func runMain(args []string, stdout, stderr io.Writer) int {
	cfg := Config{Stdout: stdout, Stderr: stderr}
	fs := flag.NewFlagSet("reloader run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Template, "template", "", "The mounted configuration template (required).")
	fs.StringVar(&cfg.Output, "output", "/etc/nginx/conf.d/gateway.conf", "The rendered file; the image's nginx.conf must include its directory inside http {}.")
	fs.StringVar(&cfg.ProbeSocket, "probe-socket", "/var/run/apigateway-reloader.sock", "Unix socket on which nginx tells the reloader which configuration its workers serve.")
	fs.StringVar(&cfg.ResolvConf, "resolv-conf", "/etc/resolv.conf", "Where the pod's DNS servers are read, for the resolver variable.")
	fs.StringVar(&cfg.ResolverVariable, "resolver-variable", render.ResolverVariable, "The template's ${...} placeholder for the DNS servers.")
	fs.StringVar(&cfg.StatusAddress, "status-address", "", "host:port of the status server (GET "+StatusPath+"); empty: none.")
	fs.StringVar(&cfg.MetricsAddress, "metrics-address", "", "host:port of the metrics server (GET "+MetricsPath+"): per-route counts of the metrics log. Empty: no metrics, and no metrics log.")
	fs.StringVar(&cfg.MetricsLog, "metrics-log", "127.0.0.1:8084", "Where nginx sends the metrics log and the reloader reads it: a UDP host:port on loopback, or unix:/path, a datagram socket.")
	fs.StringVar(&cfg.PushIdentity, "push-identity", "", "The mounted push identity (the ConfigMap's "+push.IdentityKey+", beside --template): the key and gateway pushes to POST "+PushPath+" must match. Empty: pushes off.")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 2*time.Minute, "nginx's worker_shutdown_timeout: how long connections on a replaced configuration, and all on shutdown, stay open.")
	fs.BoolVar(&cfg.Watch, "watch", true, "Reload when the template changes; false keeps the first configuration for the container's life.")
	fs.DurationVar(&cfg.ReloadTimeout, "reload-timeout", 30*time.Second, "How long nginx's workers may take to serve a configuration after a reload or at start.")
	fs.DurationVar(&cfg.Resync, "resync", 30*time.Second, "Re-read the template this often besides its file events.")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg.Nginx = fs.Args()
	if len(cfg.Nginx) == 0 {
		cfg.Nginx = []string{"nginx"}
	}
	if cfg.Template == "" || cfg.ShutdownTimeout < time.Second || cfg.ReloadTimeout <= 0 || cfg.Resync <= 0 {
		fmt.Fprintln(stderr, "reloader run: --template is required; --shutdown-timeout must be at least 1s, --reload-timeout and --resync positive")
		return 2
	}
	// The container runtime stops the container with the image's stop
	// signal: QUIT for the nginx images, else TERM. Each means a graceful
	// shutdown; Go would otherwise die on QUIT with a stack dump.
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGINT)
	defer cancel()
	if err := Run(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "reloader: %v\n", err)
		return 1
	}
	return 0
}

// Install copies the running binary to dest, replacing it atomically: the
// init container puts the reloader where the gateway container, whose image
// is nginx's, can run it.
func Install(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".install-")
	if err != nil {
		return err
	}
	_, err = io.Copy(tmp, in)
	err = errors.Join(err, tmp.Chmod(0o555), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), dest)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}
