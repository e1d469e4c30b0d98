package controller

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/reloader"
)

const (
	// probeGateways is how many gateways' pods are read at once, all
	// gateways together; a gateway waits its turn for a slot (a
	// channel's waiters are served in order), and holds it for one read,
	// podReportsTimeout at most.
	probeGateways = 16
	// probeInterval is how soon after a read the same pods are read again
	// for the same configuration: the poll's shortest period (pollAfter).
	// A reconcile that a read's result caused comes sooner and takes the
	// result as it is, so a pod that answers every other time cannot make
	// its gateway reconcile without end.
	probeInterval = 500 * time.Millisecond
)

// prober reads the gateways' pod reports off the reconcile workers: a
// reconcile takes the last reading of each pod from memory (reports) and
// asks for a new read, which runs in the background, one at a time per
// gateway; when a read's result differs from the one before, the
// gateway is reconciled again (events). A tenant whose pods never answer
// holds one slot of probeGateways for podReportsTimeout per read and no
// reconcile worker at all.
type prober struct {
	client *http.Client
	// timeout bounds one read (podReportsTimeout).
	timeout time.Duration
	slots   chan struct{}
	// events carries the gateways to reconcile again (a source.Channel).
	events chan event.GenericEvent
	base   context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
	now    func() time.Time

	mu       sync.Mutex
	gateways map[client.ObjectKey]*probed
}

// probed is what the prober holds for one gateway: the readings of its
// pods at the last read (only the pods that read asked, at most
// maxPodReports), and the read in flight or asked for.
type probed struct {
	readings map[string]reading // pod name -> reading
	inFlight bool
	next     *probeRequest // asked while a read was in flight
	last     probeRequest  // the last read started
	started  time.Time
}

// reading is one pod's answer, or why there is none, and the
// configuration hash the gateway had when it was asked.
type reading struct {
	ip     string
	hash   string
	status reloader.Status
	err    error
}

// probeRequest is a read to do: these pods, for this configuration.
type probeRequest struct {
	hash    string
	targets []podTarget
}

// newProber reads with c, each read within timeout (0 means
// podReportsTimeout).
func newProber(c *http.Client, timeout time.Duration) *prober {
	if timeout <= 0 {
		timeout = podReportsTimeout
	}
	base, stop := context.WithCancel(context.Background())
	return &prober{client: c, timeout: timeout, slots: make(chan struct{}, probeGateways), events: make(chan event.GenericEvent),
		base: base, stop: stop, now: time.Now, gateways: map[client.ObjectKey]*probed{}}
}

// Start runs until ctx ends, then stops the reads in flight and waits for
// them. The prober is a runnable of the manager's leader-election group,
// as the reconciler that asks it is.
func (p *prober) Start(ctx context.Context) error {
	<-ctx.Done()
	p.stop()
	p.wg.Wait()
	return nil
}

// reports are the targets of gateway key with the last reading of each
// (podReport.unread when there is none for this configuration), and a
// new read asked for: it starts at once unless one is in flight (it then
// follows it) or the same pods were read for the same configuration less
// than probeInterval ago.
func (p *prober) reports(key client.ObjectKey, hash string, targets []podTarget) []podReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.gateways[key]
	if g == nil && len(targets) == 0 {
		// Nothing to read, nothing read before: a gateway whose pods are
		// not up yet, or that has none, holds no entry (one per gateway
		// adds up over thousands).
		return nil
	}
	if g == nil {
		g = &probed{}
		p.gateways[key] = g
	}
	out := make([]podReport, len(targets))
	for i, t := range targets {
		out[i] = t.podReport
		rd, ok := g.readings[t.name]
		// A pod read for an earlier configuration that reported this
		// one loaded may have loaded another since: it is not counted
		// live before it says so again.
		if !ok || rd.ip != t.ip || rd.hash != hash && rd.err == nil && rd.status.Loaded == hash {
			out[i].unread = true
			continue
		}
		out[i].status, out[i].err = rd.status, rd.err
	}
	req := probeRequest{hash: hash, targets: targets}
	switch {
	case len(targets) == 0:
	case g.inFlight && !sameRequest(g.last, req):
		g.next = &req
	case g.inFlight:
	case !sameRequest(g.last, req) || p.now().Sub(g.started) >= probeInterval:
		p.start(key, g, req)
	}
	return out
}

// reread reads gateway key's pods again now, as last asked (or after the
// read in flight): a push that a pod answered changed what it serves,
// and Live should not wait for the next poll to learn it.
func (p *prober) reread(key client.ObjectKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.gateways[key]
	switch {
	case g == nil || len(g.last.targets) == 0:
	case g.inFlight && g.next == nil:
		req := g.last
		g.next = &req
	case !g.inFlight:
		p.start(key, g, g.last)
	}
}

// forget drops what the prober holds for gateway key: it was deleted, or
// has no pods to ask. A read in flight for it is discarded when it ends.
func (p *prober) forget(key client.ObjectKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.gateways, key)
}

// start runs the read req of gateway key; p.mu is held.
func (p *prober) start(key client.ObjectKey, g *probed, req probeRequest) {
	g.inFlight, g.next, g.last, g.started = true, nil, req, p.now()
	p.wg.Go(func() {
		readings, ok := p.read(req)
		if ok && p.done(key, g, readings) {
			select {
			case p.events <- event.GenericEvent{Object: &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}:
			case <-p.base.Done():
			}
		}
	})
}

// read asks req's pods once it has a slot, podReportsParallel at a time,
// all within podReportsTimeout; false when the prober stopped first.
func (p *prober) read(req probeRequest) (map[string]reading, bool) {
	select {
	case p.slots <- struct{}{}:
		defer func() { <-p.slots }()
	case <-p.base.Done():
		return nil, false
	}
	ctx, cancel := context.WithTimeout(p.base, p.timeout)
	defer cancel()
	out := make([]reading, len(req.targets))
	var wg sync.WaitGroup
	sem := make(chan struct{}, podReportsParallel)
	for i, t := range req.targets {
		wg.Go(func() {
			out[i] = reading{ip: t.ip, hash: req.hash}
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
				out[i].status, out[i].err = readPodStatus(ctx, p.client, t.ip)
			case <-ctx.Done():
				out[i].err = fmt.Errorf("not asked within %s: %w", p.timeout, ctx.Err())
			}
		})
	}
	wg.Wait()
	readings := make(map[string]reading, len(out))
	for i, t := range req.targets {
		readings[t.name] = out[i]
	}
	return readings, p.base.Err() == nil
}

// done stores the readings of g's read, starts the read asked for
// meanwhile, and reports whether the readings differ from those before
// (the gateway must be reconciled again). A gateway forgotten meanwhile,
// or forgotten and reconciled anew, keeps nothing of it.
func (p *prober) done(key client.ObjectKey, g *probed, readings map[string]reading) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gateways[key] != g {
		return false
	}
	changed := !sameReadings(g.readings, readings)
	g.readings, g.inFlight = readings, false
	if g.next != nil {
		p.start(key, g, *g.next)
	}
	return changed
}

// sameRequest reports whether a and b ask the same pods, at the same
// addresses and readiness, for the same configuration.
func sameRequest(a, b probeRequest) bool {
	if a.hash != b.hash || len(a.targets) != len(b.targets) {
		return false
	}
	for i := range a.targets {
		x, y := a.targets[i], b.targets[i]
		if x.name != y.name || x.ip != y.ip || x.ready != y.ready {
			return false
		}
	}
	return true
}

// sameReadings reports whether two reads found the same: the same pods
// at the same addresses, asked for the same configuration, each with the
// same status, or both without one. An error's words may change from one
// read to the next (a timeout while dialing or while reading): they reach
// the status at the next reconcile, and do not cause one.
func sameReadings(a, b map[string]reading) bool {
	if len(a) != len(b) {
		return false
	}
	for name, x := range a {
		y, ok := b[name]
		if !ok || x.ip != y.ip || x.hash != y.hash || (x.err == nil) != (y.err == nil) || !sameStatus(x.status, y.status) {
			return false
		}
	}
	return true
}

func sameStatus(a, b reloader.Status) bool {
	if a.Loaded != b.Loaded || (a.Refused == nil) != (b.Refused == nil) {
		return false
	}
	return a.Refused == nil || *a.Refused == *b.Refused
}
