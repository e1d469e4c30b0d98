package reloader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"example.com/apigateway-operator/push"
	"example.com/apigateway-operator/render"
)

// Config is how the pod template runs the reloader (its flags, see Main).
type Config struct {
	// Template is the mounted configuration template: the gateway
	// ConfigMap's key, projected by the kubelet.
	Template string
	// Output is the rendered file, in a directory the image's nginx.conf
	// includes inside http {} (/etc/nginx/conf.d/gateway.conf); the probe
	// server's file goes beside it.
	Output string
	// ProbeSocket is the Unix socket of the probe server (probeConfig).
	ProbeSocket string
	// ResolvConf is read for the cluster DNS (Nameservers) at every render.
	ResolvConf string
	// ResolverVariable is the template's placeholder for the resolvers,
	// without ${}.
	ResolverVariable string
	// StatusAddress is where the status server listens (host:port); empty
	// means none.
	StatusAddress string
	// ShutdownTimeout is nginx's worker_shutdown_timeout: how long workers
	// of a replaced configuration, and all workers on shutdown, keep
	// their open connections.
	ShutdownTimeout time.Duration
	// Watch reloads nginx when the template changes; without it the first
	// configuration nginx starts with is the pod's for life (the Rollout
	// strategy: a new configuration comes with new pods).
	Watch bool
	// ReloadTimeout bounds the wait for the workers of a reload (or of
	// nginx's start) to serve the new configuration.
	ReloadTimeout time.Duration
	// Resync re-reads the template this often besides the file events.
	Resync time.Duration
	// PushIdentity is the mounted push.Identity (the ConfigMap's
	// push.IdentityKey, beside Template): the key pushes to PushPath must
	// be signed with, the gateway they must name and the serial of the
	// template beside it. Empty turns pushes off; so does a volume
	// without the file (an operator from before pushes), where the
	// reloader follows the template alone, as it always did.
	PushIdentity string
	// MetricsAddress is where the metrics server listens (host:port),
	// MetricsLog where nginx sends the metrics log (see Metrics.Listen).
	// Empty MetricsAddress means no metrics, and no metrics log.
	MetricsAddress, MetricsLog string
	// Nginx is the nginx command and its arguments (the reloader adds -g).
	Nginx []string
	// Stdout and Stderr receive nginx's output and the reloader's log.
	Stdout, Stderr io.Writer
}

// files are the rendered configuration and the probe server's file, as
// nginx loads them together; nil contents mean no file.
type files struct{ config, probe []byte }

// reloader is one run: its nginx, what is on disk, what it reports.
type reloader struct {
	cfg   Config
	log   *slog.Logger
	nginx *nginxProcess
	// metrics counts the metrics log; nil without metrics.
	metrics *Metrics
	// onDisk is what the output files hold: the configuration nginx
	// serves, or the last one it started with.
	onDisk files
	// applying is held by whoever writes, tests or loads a configuration
	// (the volume's watcher, a push, the start): one at a time, as they
	// share nginx and the files.
	applying chan struct{}
	// served is where what nginx serves came from, and volume the last
	// UID and serial read from the volume (both under applying).
	served, volume served
	// pushing is the one push slot, and queued the one place in line
	// for it (takePushSlot): a push that finds both taken is turned away
	// at once.
	pushing, queued chan struct{}

	mu     sync.Mutex
	status Status
}

// offer is a template offered to nginx, by the volume or by a push, with
// the gateway's UID and the serial it came with (none from a volume
// without an identity).
type offer struct {
	template []byte
	uid      string
	serial   uint64
}

// served is the UID and serial of the template nginx serves (its hash is
// Status.Loaded).
type served struct {
	uid    string
	serial uint64
}

// order places o relative to what is served: negative when older, zero
// for the same serial, positive when newer. An offer for another UID (a
// gateway deleted and created again restarts its serials) or without one
// (an operator from before pushes) is judged by its hash alone, as
// before pushes: newer.
func (s served) order(o offer) int {
	switch {
	case o.uid == "" || o.uid != s.uid || o.serial > s.serial:
		return 1
	case o.serial < s.serial:
		return -1
	default:
		return 0
	}
}

// Run supervises nginx until ctx ends, then stops it gracefully (nginx's
// QUIT: no new connections, open ones kept for at most ShutdownTimeout)
// and returns once it has exited. It returns early with an error when
// nginx exits on its own.
func Run(ctx context.Context, cfg Config) error {
	if len(cfg.Nginx) == 0 {
		return errors.New("no nginx command")
	}
	r := &reloader{
		cfg: cfg, log: slog.New(slog.NewTextHandler(cfg.Stderr, nil)),
		applying: make(chan struct{}, 1), pushing: make(chan struct{}, 1), queued: make(chan struct{}, 1),
	}
	r.nginx = newNginx(cfg.Nginx, cfg.ShutdownTimeout, cfg.ProbeSocket, cfg.Stdout, cfg.Stderr)
	// Held until nginx serves: a push before that waits, or is turned
	// away.
	r.applying <- struct{}{}
	if cfg.StatusAddress != "" {
		var pushes http.Handler
		if cfg.PushIdentity != "" && cfg.Watch {
			pushes = r.servePush(ctx)
		}
		stop, err := serveStatus(cfg.StatusAddress, r.snapshot, pushes, r.log)
		if err != nil {
			return err
		}
		defer stop()
	}
	if cfg.MetricsAddress != "" {
		stop, err := r.startMetrics()
		if err != nil {
			return err
		}
		defer stop()
	}
	changes, stopWatch, err := watch(cfg.Template, cfg.Resync, r.log)
	if err != nil {
		return err
	}
	defer stopWatch()
	r.onDisk = readFiles(cfg.Output, r.probePath())
	err = r.start(ctx, changes)
	<-r.applying
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return r.stop()
		case <-r.nginx.exited:
			if ctx.Err() != nil {
				// Both were ready: the stop signal made nginx exit
				// (start stops it on a cancelled context).
				return nil
			}
			return r.nginx.exitErr()
		case <-changes:
			if cfg.Watch {
				r.volumeChanged(ctx)
			}
		}
	}
}

// startMetrics listens for the metrics log and serves the metrics.
func (r *reloader) startMetrics() (stop func(), err error) {
	if _, err := render.ExpandMetricsLog(nil, r.cfg.MetricsLog); err != nil {
		return nil, err
	}
	r.metrics = NewMetrics()
	stopLog, err := r.metrics.Listen(r.cfg.MetricsLog, r.log)
	if err != nil {
		return nil, err
	}
	stopServer, err := serveMetrics(r.cfg.MetricsAddress, r.metrics.Handler(), r.log)
	if err != nil {
		stopLog()
		return nil, err
	}
	return func() { stopServer(); stopLog() }, nil
}

func (r *reloader) probePath() string {
	return filepath.Join(filepath.Dir(r.cfg.Output), "apigateway-reloader.conf")
}

// snapshot is the Status the status server reports.
func (r *reloader) snapshot() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.status
	if s.Refused != nil {
		refused := *s.Refused
		s.Refused = &refused
	}
	return s
}

func (r *reloader) loaded(hash string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = Status{Loaded: hash}
	if r.metrics != nil {
		r.metrics.Serving(r.onDisk.config)
	}
	r.log.Info("nginx serves the configuration", "hash", hash)
}

func (r *reloader) refuse(hash, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status.Refused = &Refusal{Hash: hash, Reason: reason, Message: message}
	r.log.Warn("configuration refused; the previous one stays", "hash", hash, "reason", reason, "message", message)
}

// start starts nginx with the current template. When nginx refuses it,
// nginx starts with the configuration the previous run of the container
// left in the output directory (an emptyDir outlives a restart), if any;
// otherwise the reloader waits for another template.
func (r *reloader) start(ctx context.Context, changes <-chan struct{}) error {
	for {
		o, err := r.readVolume()
		hash := ""
		if err == nil {
			hash, err = r.prepare(ctx, o.template)
		}
		if err != nil && r.onDisk.config != nil {
			// Where the files on disk came from is not known.
			hash, o = probeConfigHash(r.onDisk.probe), offer{}
		}
		if hash != "" {
			r.served = served{uid: o.uid, serial: o.serial}
			return r.launch(ctx, hash)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
		}
	}
}

// launch starts nginx on the files on disk, whose template's hash is
// hash, and waits until its workers serve them.
func (r *reloader) launch(ctx context.Context, hash string) error {
	if err := r.nginx.start(); err != nil {
		return err
	}
	if err := r.nginx.waitLoaded(ctx, hash, r.cfg.ReloadTimeout); err != nil {
		stopErr := r.stop()
		if ctx.Err() != nil {
			// Stopped while starting: a shutdown like any other.
			return stopErr
		}
		return fmt.Errorf("nginx did not start serving: %w: %s", err, r.nginx.takeErrors())
	}
	refused := r.snapshot().Refused
	r.loaded(hash)
	if refused != nil && refused.Hash != hash {
		r.refuse(refused.Hash, refused.Reason, refused.Message)
	}
	return nil
}

// readVolume reads the mounted template and, when pushes are on, the
// identity beside it. The kubelet swaps a projected volume's files
// together, but two reads may fall on either side of a swap: the identity
// read again after the template tells, and the reads are tried again.
func (r *reloader) readVolume() (offer, error) {
	for {
		before, err := r.readIdentity()
		if err != nil {
			return offer{}, r.unreadable(err)
		}
		template, err := os.ReadFile(r.cfg.Template)
		if err != nil {
			return offer{}, r.unreadable(err)
		}
		after, err := r.readIdentity()
		if err != nil {
			return offer{}, r.unreadable(err)
		}
		if !bytes.Equal(before, after) {
			continue
		}
		o := offer{template: template}
		if after != nil {
			id, err := push.ParseIdentity(after)
			if err != nil {
				// Judged by its hash, as before pushes; pushes are refused.
				r.log.Warn("the mounted push identity is not usable", "error", err)
				return o, nil
			}
			o.uid, o.serial = id.UID, id.Serial
		}
		return o, nil
	}
}

// readIdentity is the mounted identity file, nil when pushes are off or
// the volume has none.
func (r *reloader) readIdentity() ([]byte, error) {
	if r.cfg.PushIdentity == "" {
		return nil, nil
	}
	data, err := os.ReadFile(r.cfg.PushIdentity)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// unreadable records that the volume could not be read. A projected
// ConfigMap volume is never missing in a running pod; there is no
// configuration to name.
func (r *reloader) unreadable(err error) error {
	r.refuse("", ReasonUnreadable, Bound(err.Error(), MaxMessage))
	return err
}

// prepare renders template into the output directory and tests it with
// nginx -t. On a refusal it records why, puts the previous files back and
// returns an error; on success the new files stay on disk and it returns
// the template's hash.
func (r *reloader) prepare(ctx context.Context, template []byte) (string, error) {
	hash := Hash(template)
	if st := r.snapshot(); hash == st.Loaded || (st.Refused != nil && hash == st.Refused.Hash) {
		// Served already, or refused already: nothing new to test.
		return "", errUnchanged
	}
	resolvConf, err := os.ReadFile(r.cfg.ResolvConf)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		r.refuse(hash, ReasonUnreadable, Bound(err.Error(), MaxMessage))
		return "", err
	}
	next := files{
		config: Render(template, r.cfg.ResolverVariable, Nameservers(resolvConf)),
		probe:  probeConfig(r.cfg.ProbeSocket, hash),
	}
	if r.metrics != nil {
		// Checked at start: it cannot fail here.
		next.config, _ = render.ExpandMetricsLog(next.config, r.cfg.MetricsLog)
	}
	if err := r.write(next); err != nil {
		r.refuse(hash, ReasonUnreadable, Bound(err.Error(), MaxMessage))
		return "", errors.Join(err, r.write(r.onDisk))
	}
	if msg, err := r.nginx.test(ctx); err != nil {
		r.refuse(hash, ReasonNginxTestFailed, msg)
		return "", errors.Join(err, r.write(r.onDisk))
	}
	if r.metrics != nil {
		r.metrics.Loading(next.config)
	}
	r.onDisk = next
	return hash, nil
}

// errUnchanged: the template is the one nginx serves, or one it refused.
var errUnchanged = errors.New("unchanged")

// volumeChanged loads the mounted template, unless it is older than what
// nginx serves: the volume lags a push by the kubelet's sync, up to 81 s,
// and catches up with a serial already served.
func (r *reloader) volumeChanged(ctx context.Context) {
	select {
	case r.applying <- struct{}{}:
		defer func() { <-r.applying }()
	case <-ctx.Done():
		return
	}
	o, err := r.readVolume()
	if err != nil {
		return
	}
	order := r.served.order(o)
	if seen := (served{uid: o.uid, serial: o.serial}); o.uid != "" && seen != r.volume {
		r.volume = seen
		r.log.Info("the volume has a new serial", "volumeSerial", o.serial, "servedSerial", r.served.serial, "lagsAPush", order < 0)
	}
	if order < 0 {
		return
	}
	r.reload(ctx, o, nil)
}

// reload loads a changed template: tested first, then nginx's HUP, then
// the wait until its new workers answer with the new hash. A refusal or a
// reload that does not take leaves the previous configuration serving and
// on disk. The caller holds applying; steps, when not nil, times the
// test, the wait for the new workers and for the old ones' retirement.
func (r *reloader) reload(ctx context.Context, o offer, steps *steps) {
	previous := r.onDisk
	hash, err := r.prepare(ctx, o.template)
	steps.done("test")
	if errors.Is(err, errUnchanged) && Hash(o.template) == r.snapshot().Loaded {
		// Served already: now under this serial (the volume caught up
		// with a push, or the operator sent the same template again).
		r.served = served{uid: o.uid, serial: o.serial}
	}
	if err != nil {
		return
	}
	old := r.nginx.workers()
	if err := r.nginx.signal(syscall.SIGHUP); err != nil {
		r.refuse(hash, ReasonReloadFailed, Bound(err.Error(), MaxMessage))
		return
	}
	err = r.nginx.waitLoaded(ctx, hash, r.cfg.ReloadTimeout)
	steps.done("serve")
	if err == nil {
		// Loaded means every new connection meets the new workers.
		err = r.nginx.waitRetired(ctx, old, r.cfg.ReloadTimeout)
		steps.done("retire")
	}
	if ctx.Err() != nil {
		// Shutting down: whether it took does not matter any more.
		return
	}
	if err != nil {
		msg := r.nginx.takeErrors()
		if msg == "" {
			msg = err.Error()
		}
		r.refuse(hash, ReasonReloadFailed, Bound(msg, MaxMessage))
		// nginx still runs the previous configuration: so must the disk,
		// for the next test and the next start.
		if err := r.write(previous); err == nil {
			r.onDisk = previous
		}
		return
	}
	r.nginx.takeErrors()
	r.loaded(hash)
	r.served = served{uid: o.uid, serial: o.serial}
}

// steps times the steps of loading one configuration, for its log line:
// how long each took, so that a slow change shows where its time went
// (docs/benchmarks.md, B8n). A nil steps times nothing.
type steps struct {
	last  time.Time
	attrs []any
}

func startSteps() *steps { return &steps{last: time.Now()} }

// done records that the step name ended now.
func (s *steps) done(name string) {
	if s == nil {
		return
	}
	now := time.Now()
	s.attrs = append(s.attrs, name, now.Sub(s.last))
	s.last = now
}

// write puts f on disk, each file replaced atomically (a nil one removed).
func (r *reloader) write(f files) error {
	return errors.Join(writeAtomic(r.cfg.Output, f.config), writeAtomic(r.probePath(), f.probe))
}

// stop ends nginx gracefully and waits for it; past the shutdown timeout
// and a margin it asks for the fast shutdown.
func (r *reloader) stop() error {
	if r.nginx.cmd == nil {
		return nil
	}
	_ = r.nginx.signal(syscall.SIGQUIT)
	select {
	case <-r.nginx.exited:
	case <-time.After(r.cfg.ShutdownTimeout + 5*time.Second):
		_ = r.nginx.signal(syscall.SIGTERM)
		<-r.nginx.exited
	}
	return nil
}

func readFiles(config, probe string) files {
	c, err := os.ReadFile(config)
	if err != nil {
		return files{}
	}
	p, err := os.ReadFile(probe)
	if err != nil || probeConfigHash(p) == "" {
		return files{}
	}
	return files{config: c, probe: p}
}

// writeAtomic replaces path with data through a rename in its directory,
// so nginx never reads half a file; nil data removes it.
func writeAtomic(path string, data []byte) error {
	if data == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	err = errors.Join(err, tmp.Chmod(0o644), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// watch signals (coalesced) when the template may have changed: on any
// event in its directory, where the kubelet swaps the ..data link of a
// projected volume, and every resync besides.
func watch(template string, resync time.Duration, log *slog.Logger) (<-chan struct{}, func(), error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, nil, err
	}
	if err := w.Add(filepath.Dir(template)); err != nil {
		_ = w.Close()
		return nil, nil, fmt.Errorf("watching %s: %w", filepath.Dir(template), err)
	}
	changes := make(chan struct{}, 1)
	notify := func() {
		select {
		case changes <- struct{}{}:
		default:
		}
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(resync)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case _, ok := <-w.Events:
				if !ok {
					return
				}
				notify()
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				log.Warn("watching the template", "error", err)
				notify()
			case <-tick.C:
				notify()
			}
		}
	}()
	return changes, func() { close(done); _ = w.Close() }, nil
}
