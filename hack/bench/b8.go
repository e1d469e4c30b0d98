package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/websocket"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/reloader"
	"example.com/apigateway-operator/test/clusterdns"
	"example.com/apigateway-operator/test/dataplane"
	"example.com/apigateway-operator/test/gatewaypod"
	"example.com/apigateway-operator/test/wsecho"
)

const (
	b8Changes   = 200
	b8Clients   = 8
	b8Streams   = 16
	b8Namespace = "b8"
	b8Host      = "b8.example.com"
	// b8Rows, in the bench run B8 starts in a network namespace, names
	// the file its rows go to.
	b8Rows = "APIGATEWAY_BENCH_B8_ROWS"
	// b8Replicas is the gateway the rollout row describes.
	b8Replicas = 2
)

// benchB8 makes b8Changes route changes to one gateway pod, played as the
// tests play it (test/gatewaypod: the pod template's init container and
// the reloader of the operator binary, Debian's nginx) while keep-alive
// clients send requests and long-lived streams stay open, and times each
// change from the ConfigMap write to the new route's first answer. There
// is no kubelet: a watch on the ConfigMap stands in for it, projecting
// each version into the pod's volume as the kubelet's atomic writer does.
//
// The pod binds the ports a pod would (8080, 8081, 8082, and a DNS server
// on 53), so B8 runs in a network namespace of its own: the bench runs
// itself again under `unshare -n` with -rows B8, and its own control
// plane, and reads the rows back.
func benchB8(operator string) func(context.Context, *harness) ([]row, error) {
	return func(ctx context.Context, h *harness) ([]row, error) {
		if out := os.Getenv(b8Rows); out != "" {
			rows, err := runB8(ctx, h, operator)
			if err != nil {
				rows = append(rows, row{ID: "B8", What: "error", Figures: err.Error(), Met: "error"})
			}
			return rows, errors.Join(err, writeRows(out, rows))
		}
		return b8InNamespace(ctx, operator)
	}
}

func b8InNamespace(ctx context.Context, operator string) ([]row, error) {
	operator, err := filepath.Abs(operator)
	if err != nil {
		return nil, err
	}
	return rowsInNamespace(ctx, "B8", b8Rows, "-operator", operator)
}

// rowsInNamespace runs row id in a network namespace of its own: the
// bench again, under `unshare -n` with loopback up, with -rows id and
// args, and env naming the file the rows come back in.
func rowsInNamespace(ctx context.Context, id, env string, args ...string) ([]row, error) {
	dir, err := os.MkdirTemp("", "bench-"+strings.ToLower(id)+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "rows.json")
	args = append([]string{os.Args[0], "-rows", id, "-out", filepath.Join(dir, "bench.md")}, args...)
	cmd := exec.CommandContext(ctx, "unshare", append([]string{"-n", "--", "sh", "-c", `ip link set lo up && exec "$0" "$@"`}, args...)...)
	cmd.Env = append(os.Environ(), env+"="+out)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s in a network namespace (needs root for unshare -n): %w", id, err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	var rows []row
	return rows, json.Unmarshal(data, &rows)
}

func writeRows(path string, rows []row) error {
	data, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// b8UID is the UID of the gateway B8 created.
var b8UID types.UID

// b8Ports are the backends' ports: the echo server, the streams, the
// WebSocket echo.
type b8Ports struct{ echo, stream, chat int32 }

// b8Gateway is the gateway of change k: three fixed routes, and /r<k>/.
func b8Gateway(k int, p b8Ports) *v1.APIGateway {
	r := func(path, svc string, port int32) v1.Route {
		return v1.Route{Host: b8Host, Path: v1.HTTPPath(path), PathType: v1.PathTypePrefix, BackendService: v1.BackendService{Name: v1.ServiceName(svc), Port: v1.PortNumber(port)}}
	}
	return &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: b8Namespace, Name: "b8", UID: b8UID},
		Spec: v1.APIGatewaySpec{Image: image, Replicas: ptr.To[int32](b8Replicas), Routes: []v1.Route{
			r("/base", "echo", p.echo), r("/stream", "stream", p.stream), r("/chat", "chat", p.chat), r("/r"+strconv.Itoa(k), "echo", p.echo),
		}},
	}
}

// b8Run is what one B8 run measured.
type b8Run struct {
	total, projected    latencies
	sent                int64
	failed              []string
	cut, socketsCut     int
	peakNginx           int
	podStart            time.Duration
	binaryBytes         int64
	streamsHeldFor      time.Duration
	lastLoaded, refused string
}

func runB8(ctx context.Context, h *harness, operator string) ([]row, error) {
	ports, release, stop, err := b8Backends()
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := h.namespace(ctx, b8Namespace); err != nil {
		return nil, err
	}
	opts := controller.ChildOptions{DefaultImage: image, ReloaderImage: "apigateway-operator:bench"}
	// The gateway exists, as the owner of the ConfigMap the bench writes
	// in the operator's place; no operator runs.
	gw := b8Gateway(0, ports)
	if err := h.client.Create(ctx, gw); err != nil {
		return nil, err
	}
	b8UID = gw.UID
	first, err := controller.Children(gw, opts)
	if err != nil {
		return nil, err
	}
	if err := h.client.Apply(ctx, first.ConfigMap, client.FieldOwner(controller.FieldOwner), client.ForceOwnership); err != nil {
		return nil, err
	}
	pod, run, err := b8StartPod(ctx, operator, ports, opts)
	if err != nil {
		return nil, err
	}
	defer func() { _ = pod.Stop(controller.ShutdownTimeout + 10*time.Second) }()
	projected, err := standInKubelet(ctx, h, pod, *first.ConfigMap.Name)
	if err != nil {
		return nil, err
	}
	if err := run.changes(ctx, h, pod, projected, release, ports, opts); err != nil {
		return nil, err
	}
	dep, err := rolloutSettings(ctx, h, opts, ports)
	if err != nil {
		return nil, err
	}
	return []row{run.row(), rolloutRow(dep, run)}, nil
}

// b8Backends start the Services' side: an echo server, a server of
// streams that end when release closes, a WebSocket echo, and the DNS
// server that sends every Service name to them.
func b8Backends() (ports b8Ports, release chan struct{}, stop func(), err error) {
	_, stopDNS, err := clusterdns.Serve("127.0.0.1:53", "cluster.local", net.IPv4(127, 0, 0, 1))
	if err != nil {
		return ports, nil, nil, err
	}
	release = make(chan struct{})
	var servers []*http.Server
	serve := func(hf http.Handler) (int32, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		srv := &http.Server{Handler: hf, ReadHeaderTimeout: time.Minute}
		servers = append(servers, srv)
		go func() { _ = srv.Serve(ln) }()
		return int32(ln.Addr().(*net.TCPAddr).Port), nil
	}
	stop = func() {
		for _, s := range servers {
			_ = s.Close()
		}
		_ = stopDNS()
	}
	if ports.echo, err = serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.URL.Path) })); err == nil {
		ports.stream, err = serve(gatewaypod.StreamHandler(release, 100*time.Millisecond))
	}
	if err == nil {
		ports.chat, err = serve(wsecho.Handler())
	}
	if err != nil {
		stop()
	}
	return ports, release, stop, err
}

// b8StartPod starts the gateway pod of change 0 and waits until it serves.
func b8StartPod(ctx context.Context, operator string, ports b8Ports, opts controller.ChildOptions) (*gatewaypod.Pod, *b8Run, error) {
	spec, data, err := gatewaypod.FromGateway(b8Gateway(0, ports), opts)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "b8-")
	if err != nil {
		return nil, nil, err
	}
	logFile, err := os.Create(filepath.Join("bin", "bench-b8-pod.log"))
	if err != nil {
		return nil, nil, err
	}
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx = "/usr/sbin/nginx"
	}
	run := &b8Run{}
	t0 := time.Now()
	pod, err := gatewaypod.Start(dir, spec, data, gatewaypod.Options{Binary: reloaderBinary(operator), Nginx: nginx,
		ResolvConf: "nameserver 127.0.0.1\n", Output: logFile})
	if err != nil {
		return nil, nil, err
	}
	hash := reloader.Hash([]byte(data[firstKey(data)]))
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if st, err := pod.Status(ctx, "reloader"); err == nil && st.Loaded == hash && pod.Ready(ctx) {
			break
		}
		if time.Now().After(deadline) {
			_ = pod.Stop(time.Second)
			return nil, nil, fmt.Errorf("the pod did not serve within a minute (log: bin/bench-b8-pod.log)")
		}
	}
	run.podStart = time.Since(t0)
	if fi, err := os.Stat(filepath.Join(dir, "v", "reloader", "apigateway-reloader")); err == nil {
		run.binaryBytes = fi.Size()
	}
	return pod, run, nil
}

// reloaderBinary is the reloader's binary `make build` put beside the
// operator's: what the pods' init container copies from the image.
func reloaderBinary(operator string) string {
	return filepath.Join(filepath.Dir(operator), "apigateway-reloader")
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

// projection is a ConfigMap version the stand-in kubelet projected.
type projection struct {
	hash string
	at   time.Time
}

// standInKubelet watches the ConfigMap and projects every version into
// the pod's volume, as the kubelet does once its sync period comes round.
func standInKubelet(ctx context.Context, h *harness, pod *gatewaypod.Pod, name string) (<-chan projection, error) {
	wc, err := client.NewWithWatch(h.config, client.Options{Scheme: h.env.Scheme})
	if err != nil {
		return nil, err
	}
	w, err := wc.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(b8Namespace), client.MatchingFields{"metadata.name": name})
	if err != nil {
		return nil, err
	}
	out := make(chan projection, b8Changes+2)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			if err := pod.Project(cm.Data); err != nil {
				logf("B8: projecting the ConfigMap: %v", err)
				continue
			}
			out <- projection{hash: reloader.Hash([]byte(cm.Data[firstKey(cm.Data)])), at: time.Now()}
		}
	}()
	return out, nil
}

// changes makes the route changes under load and measures them.
func (run *b8Run) changes(ctx context.Context, h *harness, pod *gatewaypod.Pod, projected <-chan projection,
	release chan struct{}, ports b8Ports, opts controller.ChildOptions) error {
	var streams []*gatewaypod.Stream
	for i := range b8Streams {
		s, err := gatewaypod.OpenStream("127.0.0.1:8080", b8Host, fmt.Sprintf("/stream/%d", i), time.Minute)
		if err != nil {
			return err
		}
		streams = append(streams, s)
	}
	sockets, err := openSockets()
	if err != nil {
		return err
	}
	defer sockets.close()
	held := time.Now()
	load := gatewaypod.StartLoad("127.0.0.1:8080", b8Host, b8Clients, func(c, n int) string { return fmt.Sprintf("/base/%d/%d", c, n) })
	stopCount := countNginx(pod, &run.peakNginx)
	probe := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	for k := 1; k <= b8Changes && err == nil; k++ {
		err = run.change(ctx, h, probe, projected, k, ports, opts)
		// A message both ways on one WebSocket per change, in turn.
		sockets.echo(k % len(sockets.conns))
	}
	run.sent, run.failed = load.Stop()
	close(release)
	for _, s := range streams {
		if s.Wait(time.Minute) != nil {
			run.cut++
		}
	}
	for i := range sockets.conns {
		sockets.echo(i)
	}
	run.socketsCut = sockets.cut()
	run.streamsHeldFor = time.Since(held)
	stopCount()
	if err != nil {
		return err
	}
	st, err := pod.Status(ctx, "reloader")
	if err != nil {
		return err
	}
	run.lastLoaded = st.Loaded
	if st.Refused != nil {
		run.refused = st.Refused.Message
	}
	return nil
}

// change writes the ConfigMap of change k and waits until /r<k>/ answers.
func (run *b8Run) change(ctx context.Context, h *harness, probe *http.Client, projected <-chan projection, k int, ports b8Ports, opts controller.ChildOptions) error {
	d, err := controller.Children(b8Gateway(k, ports), opts)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := h.client.Apply(ctx, d.ConfigMap, client.FieldOwner(controller.FieldOwner), client.ForceOwnership); err != nil {
		return err
	}
	url := fmt.Sprintf("http://127.0.0.1:8080/r%d/x", k)
	for deadline := t0.Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("change %d: /r%d/ did not answer within 30s (log: bin/bench-b8-pod.log)", k, k)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Host = b8Host
		resp, err := probe.Do(req)
		if err != nil {
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
	}
	run.total = append(run.total, time.Since(t0))
	for p := range projected {
		if p.hash == d.ConfigHash {
			run.projected = append(run.projected, p.at.Sub(t0))
			break
		}
	}
	return nil
}

// countNginx records the most nginx processes (master, workers of the
// current configuration and those still closing connections of replaced
// ones) seen until the returned function is called.
func countNginx(pod *gatewaypod.Pod, peak *int) func() {
	done := make(chan struct{})
	var stopped atomic.Bool
	go func() {
		defer close(done)
		for !stopped.Load() {
			if n := nginxProcesses(pod); n > *peak {
				*peak = n
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return func() { stopped.Store(true); <-done }
}

func nginxProcesses(pod *gatewaypod.Pod) int {
	data, err := os.ReadFile(filepath.Join(pod.Dir, "nginx.pid"))
	if err != nil {
		return 0
	}
	master := strings.TrimSpace(string(data))
	entries, _ := os.ReadDir("/proc")
	n := 1
	for _, e := range entries {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 1 && f[1] == master {
			n++
		}
	}
	return n
}

func (run *b8Run) row() row {
	ok := len(run.failed) == 0 && run.cut == 0 && run.socketsCut == 0 && run.refused == "" && len(run.total) == b8Changes
	figures := fmt.Sprintf("%d requests on %d keep-alive clients, %d failed; %d long-lived streams held %.0f s across the changes, %d cut; "+
		"%d WebSockets held as long, one echoing a message after each change and all after the last, %d cut; "+
		"ConfigMap write to the new route answering %s (of which the watch standing in for the kubelet: %s); "+
		"at most %d nginx processes; pod start, the init container copying the %.0f MB binary included: %s",
		run.sent, b8Clients, len(run.failed), b8Streams, run.streamsHeldFor.Seconds(), run.cut, b8Streams, run.socketsCut,
		run.total, run.projected, run.peakNginx, float64(run.binaryBytes)/1e6, ms(run.podStart))
	if len(run.failed) > 0 {
		figures += "; first failure: " + run.failed[0]
	}
	return row{
		ID:      "B8",
		What:    fmt.Sprintf("%d route changes reloaded in one gateway pod (reloader + nginx processes) under load", b8Changes),
		Figures: figures + ". In a cluster the kubelet adds its ConfigMap volume sync before the file changes: up to its syncFrequency (1 m by default) plus jitter",
		Target:  fmt.Sprintf("0 failed requests; 0 streams or WebSockets cut within the %s shutdown bound", controller.ShutdownTimeout),
		Met:     met(ok),
	}
}

// rolloutSettings is the Deployment the Rollout strategy applies, as the
// API server defaults it (a dry run): its own settings say what a rollout
// per change costs.
func rolloutSettings(ctx context.Context, h *harness, opts controller.ChildOptions, ports b8Ports) (*appsv1.Deployment, error) {
	gw := b8Gateway(0, ports)
	gw.Spec.ConfigUpdateStrategy = v1.ConfigUpdateRollout
	d, err := controller.Children(gw, opts)
	if err != nil {
		return nil, err
	}
	dep := &appsv1.Deployment{}
	data, err := json.Marshal(d.Deployment)
	if err == nil {
		err = json.Unmarshal(data, dep)
	}
	if err == nil {
		dep.OwnerReferences = nil
		err = h.client.Create(ctx, dep, client.DryRunAll)
	}
	return dep, err
}

// rolloutRow describes, from the Deployment's own settings, what each
// change cost under the Rollout strategy (and before the reloader).
func rolloutRow(dep *appsv1.Deployment, run *b8Run) row {
	replicas := int(*dep.Spec.Replicas)
	surge, unavailable := 1, 0
	if ru := dep.Spec.Strategy.RollingUpdate; ru != nil {
		surge = scaled(ru.MaxSurge, replicas, true)
		unavailable = scaled(ru.MaxUnavailable, replicas, false)
	}
	if surge == 0 && unavailable == 0 {
		surge = 1
	}
	waves := int(math.Ceil(float64(replicas) / float64(surge+unavailable)))
	probe := dep.Spec.Template.Spec.Containers[0].ReadinessProbe
	return row{
		ID:   "B8r",
		What: "the same changes with configUpdateStrategy Rollout (each change as before the reloader), from the Deployment's own settings",
		Figures: fmt.Sprintf("%d replicas, maxSurge %s, maxUnavailable %s: %d waves per change, each a new pod (scheduling, image pull, "+
			"the init container; here the pod started in %s) and its first readiness probe (period %d s, so up to %d s more); %d changes: "+
			"at least %d new pods; each replaced pod's long-lived connections end within its worker_shutdown_timeout (%s, grace %d s): "+
			"every stream open at a change is cut within %s of it, against %d of %d with Reload",
			replicas, dep.Spec.Strategy.RollingUpdate.MaxSurge, dep.Spec.Strategy.RollingUpdate.MaxUnavailable, waves, ms(run.podStart),
			probe.PeriodSeconds, probe.PeriodSeconds, b8Changes, b8Changes*replicas, controller.ShutdownTimeout,
			*dep.Spec.Template.Spec.TerminationGracePeriodSeconds, controller.ShutdownTimeout, run.cut, b8Streams),
		Target: "described",
		Met:    "—",
	}
}

// scaled resolves a rolling update's maxSurge (round up) or
// maxUnavailable (round down) against replicas, as the Deployment
// controller does.
func scaled(v *intstr.IntOrString, replicas int, up bool) int {
	if v == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, replicas, up)
	if err != nil {
		return 0
	}
	return n
}

// b8Sockets are the WebSockets B8 holds open across its changes: each is
// cut once a message no longer comes back whole.
type b8Sockets struct {
	conns []*websocket.Conn
	cuts  []bool
}

// openSockets opens b8Streams WebSockets to the chat route.
func openSockets() (*b8Sockets, error) {
	s := &b8Sockets{}
	for i := range b8Streams {
		ws, err := dataplane.DialWebSocket("127.0.0.1:8080", b8Host, fmt.Sprintf("/chat/%d", i))
		if err != nil {
			s.close()
			return nil, err
		}
		s.conns = append(s.conns, ws)
		s.cuts = append(s.cuts, false)
	}
	return s, nil
}

// echo sends a message on the i-th WebSocket, unless it was cut, and
// counts it cut when the message does not come back.
func (s *b8Sockets) echo(i int) {
	if s.cuts[i] {
		return
	}
	msg := []byte(fmt.Sprintf("message %d", i))
	got, err := dataplane.EchoOver(s.conns[i], msg)
	s.cuts[i] = err != nil || string(got) != string(msg)
}

func (s *b8Sockets) cut() int {
	n := 0
	for _, c := range s.cuts {
		if c {
			n++
		}
	}
	return n
}

func (s *b8Sockets) close() {
	for _, ws := range s.conns {
		_ = ws.Close()
	}
}
