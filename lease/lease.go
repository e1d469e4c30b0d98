// Package lease keeps a replica that lost the leader lease from writing as
// leader.
//
// client-go's elector notices a lost lease only when a renewal fails, and
// gives up RenewDeadline after the last good one; controller-runtime then
// stops the manager. A replica that was frozen (SIGSTOP, a paused VM, a
// stalled node) past the lease wakes up with its work queue full and its
// caches stale, and its reconcilers write at once, beside the leader that
// took over, until the elector catches up (cilium#42920: "split brain
// observed in the wild"). Lock fences those writes: it records, by this
// process's monotonic clock, when each successful renewal was sent, and the
// leader's client and event recorders (Fence) refuse to write once
// RenewDeadline has passed since. The other replicas wait LeaseDuration
// from their own observation of that renewal before taking over, so the
// gap between the two, 5 s by default, is what a write sent before the
// fence closed has to reach the API server.
package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// ErrNotLeader is in the error of every write the fence refuses.
var ErrNotLeader = errors.New("this replica does not hold the leader lease")

// Lock is the leader-election lock controller-runtime would use, which
// also knows until when this replica may act as leader.
type Lock struct {
	resourcelock.Interface
	// validFor is the renew deadline: how long after a renewal was sent
	// this replica may still act on it.
	validFor time.Duration
	now      func() time.Time

	mu    sync.Mutex
	until time.Time // zero: not held

	// events is where the lock's leadership events go, once bound.
	events atomic.Value // of record.EventRecorder
}

// New returns the Lease lock that controller-runtime makes for opts (the
// manager's LeaderElectionResourceLockInterface), fenced by
// opts.RenewDeadline. Its events go nowhere until BindEvents.
func New(cfg *rest.Config, opts leaderelection.Options) (*Lock, error) {
	if opts.RenewDeadline <= 0 {
		return nil, errors.New("lease: a positive RenewDeadline is required")
	}
	l := &Lock{validFor: opts.RenewDeadline, now: time.Now}
	opts.LeaderElection = true
	inner, err := leaderelection.NewResourceLock(cfg, lockEvents{l}, opts)
	if err != nil {
		return nil, err
	}
	l.Interface = inner
	return l, nil
}

// BindEvents sends the lock's events ("... became leader") to r, such as
// the manager's recorder for the lock's identity.
func (l *Lock) BindEvents(r record.EventRecorder) { l.events.Store(&r) }

// Get reads the lease; one that names another holder ends this replica's
// right to act at once.
func (l *Lock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil && rec.HolderIdentity != l.Identity() {
		l.set(time.Time{})
	}
	return rec, raw, err
}

// Create writes the lease for the first time.
func (l *Lock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, ler, l.Interface.Create)
}

// Update renews, takes over or releases the lease.
func (l *Lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, ler, l.Interface.Update)
}

// write runs op and, when it succeeds, moves the fence: a record naming
// this replica holds from the moment the request was sent (it may have
// reached the API server any time after), one naming nobody (a release)
// holds no more. A failed write leaves the last good renewal to run out.
//
// A release (a record naming another holder: nobody) is written only while
// this replica holds the lease. client-go's release reads the Lease but
// decides by the record it observed last; a replica frozen past its lease
// may not have observed the takeover yet, and would overwrite the new
// leader's lease with an empty one (seen in test/faults' TestFrozenLeader
// under load). Not held, there is nothing of ours to release.
func (l *Lock) write(ctx context.Context, ler resourcelock.LeaderElectionRecord, op func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	if ler.HolderIdentity != l.Identity() && !l.Held() {
		return nil
	}
	sent := l.now()
	if err := op(ctx, ler); err != nil {
		return err
	}
	if ler.HolderIdentity == l.Identity() {
		l.set(sent.Add(l.validFor))
	} else {
		l.set(time.Time{})
	}
	return nil
}

func (l *Lock) set(until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.until = until
}

// Until is when this replica stops acting as leader: RenewDeadline after
// its last successful renewal was sent; zero when it does not hold the
// lease. It carries the monotonic clock reading, so a process frozen past
// it finds it passed when it resumes, whatever the wall clock did.
func (l *Lock) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Held is whether this replica may act as leader now.
func (l *Lock) Held() bool { return l.now().Before(l.Until()) }

// check returns a context bounded by Until for a write, or the error that
// refuses it.
func (l *Lock) check(ctx context.Context) (context.Context, context.CancelFunc, error) {
	until, now := l.Until(), l.now()
	switch {
	case until.IsZero():
		return nil, nil, ErrNotLeader
	case !now.Before(until):
		return nil, nil, fmt.Errorf("%w: the last renewal was sent %s ago, past the renew deadline (%s)",
			ErrNotLeader, now.Sub(until.Add(-l.validFor)).Round(time.Millisecond), l.validFor)
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	return ctx, cancel, nil
}

// RecordEvent records a leadership event while the lease is held: "became
// leader" goes out, and a replica that lost the lease says nothing more
// (its "stopped leading" would be a write after the new leader's).
func (l *Lock) RecordEvent(s string) {
	if l.Held() {
		l.Interface.RecordEvent(s)
	}
}

// lockEvents gives controller-runtime's lock a recorder that forwards to
// the one bound by BindEvents: the manager's, which exists only after the
// lock.
type lockEvents struct{ l *Lock }

func (p lockEvents) target() record.EventRecorder {
	if r, ok := p.l.events.Load().(*record.EventRecorder); ok {
		return *r
	}
	return nil
}

// GetEventRecorderFor implements recorder.Provider for NewResourceLock,
// which asks it for the old-API recorder that LeaseLock takes.
func (p lockEvents) GetEventRecorderFor(string) record.EventRecorder { return p }

// GetEventRecorder implements recorder.Provider; the lock does not use it.
func (p lockEvents) GetEventRecorder(string) recorder.EventRecorder { return nil }

func (p lockEvents) Event(object runtime.Object, eventtype, reason, message string) {
	if r := p.target(); r != nil {
		r.Event(object, eventtype, reason, message)
	}
}

func (p lockEvents) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if r := p.target(); r != nil {
		r.Eventf(object, eventtype, reason, messageFmt, args...)
	}
}

func (p lockEvents) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if r := p.target(); r != nil {
		r.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
	}
}
