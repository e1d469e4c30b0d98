package node

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/push"
	"example.com/apigateway-operator/render"
	"example.com/apigateway-operator/test/dataplane"
	"example.com/apigateway-operator/test/testenv"
)

// pushChanges is how many route changes TestRouteChangesArePushedToEveryPod
// makes: B8n's sample.
const pushChanges = 20

// steadyPath is the route TestRouteChangesArePushedToEveryPod leaves as
// it is, asked without pause on every pod while the other one changes.
const steadyPath = "/steady"

// chatsPerPod is how many WebSockets TestRouteChangesArePushedToEveryPod
// holds open on each pod across its changes.
const chatsPerPod = 4

// TestRouteChangesArePushedToEveryPod is B8n: with pushes on and the
// kubelet's default syncFrequency (a minute, so the ConfigMap volume
// follows 31-81 s after a write), each of pushChanges route changes is
// served by every ready pod of a two-replica gateway, without new pods,
// a steady stream of requests to a route that does not change meets no
// failure on any pod, and WebSockets opened before the changes echo
// every message throughout them. It logs, from the write of each change to the
// first 200 on its new route on every pod, the median and the 99th
// percentile (the largest of 20), and where that time went (the pods'
// push log lines), for docs/benchmarks.md; it asserts no timing.
func TestRouteChangesArePushedToEveryPod(t *testing.T) {
	ctx := t.Context()
	startServiceDNS(t)
	ns := testenv.NewNamespace(t, env.Client, "push")
	backend := startBackend(t, ns)
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: controller.DefaultPushKeySecret}}
	require.NoError(t, env.Client.Create(ctx, key))
	startOperator(t, func(o *controller.Options) { o.PushKeySecret = client.ObjectKeyFromObject(key) })
	gw := newGateway(ns, "shop", backend, 2)
	steady := gw.Spec.Routes[0]
	steady.Path = steadyPath
	gw.Spec.Routes = append(gw.Spec.Routes, steady)
	require.NoError(t, env.Client.Create(ctx, gw))
	// Live needs one pod serving; the steady stream and the changes go
	// to both, so both must be ready (Ready): seen, Live with the second
	// pod's nginx not listening yet.
	for _, cond := range []string{"Live", "Ready"} {
		res := env.Kubectl(ctx, nil, "wait", "--for=condition="+cond, "agw/"+gw.Name, "-n", gw.Namespace, "--timeout=2m")
		require.NoError(t, res.Err, "%s", res.Stderr)
	}
	var pods corev1.PodList
	require.NoError(t, env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{controller.LabelInstance: gw.Name}))
	require.Len(t, pods.Items, 2)

	streams := make([]*steadyStream, len(pods.Items))
	chats := make([][]*chat, len(pods.Items))
	for i, pod := range pods.Items {
		streams[i] = startSteadyStream(ctx, pod.Status.PodIP, gatewayHost(ns))
		for range chatsPerPod {
			chats[i] = append(chats[i], startChat(t, pod.Status.PodIP, gatewayHost(ns)))
		}
	}
	changes := make([]pushedChange, pushChanges)
	for i := range changes {
		changes[i] = changeRoute(t, gw, pods.Items, fmt.Sprintf("/change-%d", i))
	}
	for i, s := range streams {
		s.stop()
		t.Logf("B8n: steady stream to %s on pod %s during the changes: %d requests, %d failed %v",
			steadyPath, pods.Items[i].Name, s.sent.Load(), len(s.failures), s.failures)
	}
	for i, cs := range chats {
		for _, c := range cs {
			c.stop()
			t.Logf("B8n: WebSocket on pod %s across the changes: %d messages echoed, cut: %v", pods.Items[i].Name, c.echoed.Load(), c.err)
			require.NoError(t, c.err, "a WebSocket opened on pod %s before the changes was cut", pods.Items[i].Name)
			require.Positive(t, c.echoed.Load())
		}
	}
	var now corev1.PodList
	require.NoError(t, env.Client.List(ctx, &now, client.InNamespace(ns), client.MatchingLabels{controller.LabelInstance: gw.Name}))
	require.ElementsMatch(t, podUIDs(pods), podUIDs(now), "the pods were replaced")
	logPushBreakdown(t, changes, pods.Items)
	for i, s := range streams {
		require.Empty(t, s.failures, "requests to the unchanged route %s on pod %s failed", steadyPath, pods.Items[i].Name)
	}
}

// pushedChange is one route change as TestRouteChangesArePushedToEveryPod
// saw it: when it was written, when the ConfigMap held it, under which
// serial, and when each pod first answered 200 on the new route.
type pushedChange struct {
	written, inConfigMap time.Time
	serial               uint64
	served               []time.Time
}

// changeRoute moves gw's first route to path and waits until every pod
// serves it, polling the pods at once.
func changeRoute(t *testing.T, gw *v1.APIGateway, pods []corev1.Pod, path string) pushedChange {
	ctx := t.Context()
	patch := client.MergeFrom(gw.DeepCopy())
	gw.Spec.Routes[0].Path = v1.HTTPPath(path)
	c := pushedChange{written: time.Now(), served: make([]time.Time, len(pods))}
	require.NoError(t, env.Client.Patch(ctx, gw, patch))
	require.Eventually(t, func() bool {
		var cm corev1.ConfigMap
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: gw.Namespace, Name: gw.Name + "-config"}, &cm)
		if err != nil || !strings.Contains(cm.Data[render.ConfigKey], path) {
			return false
		}
		id, err := push.ParseIdentity([]byte(cm.Data[push.IdentityKey]))
		c.serial = id.Serial
		return err == nil
	}, routeChangeWait, 5*time.Millisecond, "the ConfigMap never routed %s", path)
	c.inConfigMap = time.Now()
	var wg sync.WaitGroup
	for i, pod := range pods {
		wg.Go(func() { c.served[i] = firstOK(ctx, pod.Status.PodIP, gatewayHost(gw.Namespace), path+"/7") })
	}
	wg.Wait()
	for i, at := range c.served {
		require.False(t, at.IsZero(), "pod %s never served %s", pods[i].Name, path)
	}
	return c
}

// firstOK polls the pod at ip for path on host every 5 ms and returns the
// time of its first 200, zero if none came within routeChangeWait.
func firstOK(ctx context.Context, ip, host, path string) time.Time {
	ctx, cancel := context.WithTimeout(ctx, routeChangeWait)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if statusThrough(ctx, ip, host, path) == http.StatusOK {
			return time.Now()
		}
		select {
		case <-ctx.Done():
			return time.Time{}
		case <-tick.C:
		}
	}
}

// steadyStream asks one pod for steadyPath every 10 ms over a keep-alive
// client of its own, as a client of the gateway would, until stop.
type steadyStream struct {
	sent     atomic.Int64
	failures []string
	stop     func()
}

// maxFailuresKept bounds the failures a steadyStream describes.
const maxFailuresKept = 10

func startSteadyStream(ctx context.Context, ip, host string) *steadyStream {
	s := &steadyStream{}
	c := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}}
	s.stop = ticking(ctx, 10*time.Millisecond, func(ctx context.Context, i int) bool {
		if failure := s.ask(ctx, c, ip, host, fmt.Sprintf("%s/%d", steadyPath, i)); failure != "" && len(s.failures) < maxFailuresKept {
			s.failures = append(s.failures, failure)
		}
		return true
	})
	return s
}

// ticking runs step every period, i counting from 0, in a goroutine of
// its own until ctx ends, stop is called or step returns false; stop
// waits for it to end.
func ticking(ctx context.Context, period time.Duration, step func(ctx context.Context, i int) bool) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if !step(ctx, i) {
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// ask sends one request and describes its failure, "" for a 200 or a
// request the stop cut.
func (s *steadyStream) ask(ctx context.Context, c *http.Client, ip, host, path string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ip+":8080"+path, http.NoBody)
	if err != nil {
		return err.Error()
	}
	req.Host = host
	s.sent.Add(1)
	resp, err := c.Do(req)
	switch {
	case ctx.Err() != nil:
		s.sent.Add(-1)
		return ""
	case err != nil:
		return time.Now().Format(time.StampMilli) + " " + err.Error()
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return time.Now().Format(time.StampMilli) + " " + resp.Status
	}
	return ""
}

// chat is a WebSocket through a gateway pod to the echo backend, held
// open across the changes and echoing a message every 100 ms; err is its
// first failure, after which it stops.
type chat struct {
	echoed atomic.Int64
	err    error
	stop   func()
}

// startChat opens a chat through the gateway pod at ip on host's steady
// route.
func startChat(t *testing.T, ip, host string) *chat {
	t.Helper()
	ws, err := dataplane.DialWebSocket(net.JoinHostPort(ip, "8080"), host, steadyPath+"/ws")
	require.NoError(t, err, "no WebSocket through the gateway pod at %s", ip)
	c := &chat{}
	stop := ticking(t.Context(), 100*time.Millisecond, func(_ context.Context, i int) bool {
		msg := fmt.Appendf(nil, "message %d", i)
		got, err := dataplane.EchoOver(ws, msg)
		if err == nil && !bytes.Equal(got, msg) {
			err = fmt.Errorf("sent %q, got %q back", msg, got)
		}
		if err != nil {
			c.err = fmt.Errorf("%s, message %d: %w", time.Now().Format(time.StampMilli), i, err)
			return false
		}
		c.echoed.Add(1)
		return true
	})
	c.stop = func() {
		stop()
		_ = ws.Close()
	}
	return c
}

// pushSteps are the steps a reloader's push log line times, in order
// (reloader.servePush): the wait in line for the push slot, the body
// read, the signature checked, the wait
// for a load in progress, nginx -t, the HUP until the new workers serve,
// until the old ones no longer accept.
var pushSteps = []string{"queue", "read", "verify", "wait", "test", "serve", "retire"}

// pushLine is a reloader's log line of one push: when it was written and
// how long each step took.
type pushLine struct {
	at    time.Time
	steps map[string]time.Duration
}

// arrived is when the push reached the reloader: the line's time less
// its steps.
func (l pushLine) arrived() time.Time {
	at := l.at
	for _, d := range l.steps {
		at = at.Add(-d)
	}
	return at
}

// pushLines are the pod's reloader's log lines of pushes it loaded, by
// serial.
func pushLines(t *testing.T, pod corev1.Pod) map[uint64]pushLine {
	res := env.Kubectl(t.Context(), nil, "logs", "-n", pod.Namespace, pod.Name, "-c", "nginx")
	require.NoError(t, res.Err, "%s", res.Stderr)
	lines := map[uint64]pushLine{}
	for _, line := range strings.Split(res.Stdout, "\n") {
		f := logFields(line)
		if f["msg"] != "push" || f["code"] != "200" {
			continue
		}
		serial, err1 := strconv.ParseUint(f["serial"], 10, 64)
		at, err2 := time.Parse(time.RFC3339, f["time"])
		if err1 != nil || err2 != nil {
			continue
		}
		l := pushLine{at: at, steps: map[string]time.Duration{}}
		for _, s := range pushSteps {
			l.steps[s], _ = time.ParseDuration(f[s])
		}
		lines[serial] = l
	}
	return lines
}

// logFields are the key=value fields of a slog text line before its
// message field (the last, and the only one with spaces).
func logFields(line string) map[string]string {
	f := map[string]string{}
	for _, kv := range strings.Fields(line) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "message" {
			break
		}
		f[k] = strings.Trim(v, `"`)
	}
	return f
}

// logPushBreakdown logs B8n's figures: from the write of each change to
// its first 200 on both pods, and the same time cut at each step, from
// the test's clock and the reloaders' push log lines (the pods run on the
// test's machine: one clock).
func logPushBreakdown(t *testing.T, changes []pushedChange, pods []corev1.Pod) {
	lines := make([]map[uint64]pushLine, len(pods))
	for i, pod := range pods {
		lines[i] = pushLines(t, pod)
	}
	phases := map[string][]time.Duration{}
	var order []string
	add := func(name string, d time.Duration) {
		if _, ok := phases[name]; !ok {
			order = append(order, name)
		}
		phases[name] = append(phases[name], d)
	}
	for n, c := range changes {
		add("both pods serve it", slices.MaxFunc(c.served, time.Time.Compare).Sub(c.written))
		add("the ConfigMap holds it", c.inConfigMap.Sub(c.written))
		for i, served := range c.served {
			l, ok := lines[i][c.serial]
			if !ok {
				t.Logf("B8n change %d, pod %s: no push log line for serial %d", n, pods[i].Name, c.serial)
				continue
			}
			add("ConfigMap to the push's arrival", l.arrived().Sub(c.inConfigMap))
			for _, s := range pushSteps {
				add("pod: "+s, l.steps[s])
			}
			add("pod's answer to the first 200", served.Sub(l.at))
			t.Logf("B8n change %d, pod %s: written +0, ConfigMap +%s, push arrived +%s, %v, answered +%s, first 200 +%s",
				n, pods[i].Name, ms(c.inConfigMap.Sub(c.written)), ms(l.arrived().Sub(c.written)), l.steps,
				ms(l.at.Sub(c.written)), ms(served.Sub(c.written)))
		}
	}
	for _, name := range order {
		d := phases[name]
		slices.Sort(d)
		t.Logf("B8n %-34s over %2d: p50 %7s, p99 %7s, min %7s", name, len(d), ms(d[len(d)/2]), ms(d[len(d)*99/100]), ms(d[0]))
	}
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
