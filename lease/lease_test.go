package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

const (
	me        = "replica-a"
	renewedIn = 10 * time.Second
)

// fakeLock is the Lease as the API server holds it.
type fakeLock struct {
	record resourcelock.LeaderElectionRecord
	err    error // of the next write
	events []string
	// during runs inside each write, while the request is "in flight".
	during func()
}

func (f *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r := f.record
	return &r, []byte(r.HolderIdentity), nil
}

func (f *fakeLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return f.Update(ctx, ler)
}

func (f *fakeLock) Update(_ context.Context, ler resourcelock.LeaderElectionRecord) error {
	if f.during != nil {
		f.during()
	}
	if f.err != nil {
		return f.err
	}
	f.record = ler
	return nil
}

func (f *fakeLock) RecordEvent(s string) { f.events = append(f.events, s) }
func (f *fakeLock) Identity() string     { return me }
func (f *fakeLock) Describe() string     { return "ns/lease" }

// clock is a settable time with a monotonic reading, as time.Now has.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newLock() (*Lock, *fakeLock, *clock) {
	inner := &fakeLock{}
	c := &clock{t: time.Now()}
	return &Lock{Interface: inner, validFor: renewedIn, now: c.now}, inner, c
}

func TestLockHeldFromTheRenewalSent(t *testing.T) {
	type step struct {
		// advance the clock by this much before the step
		wait time.Duration
		// what the step does: renew, release, fail (a renewal that
		// errors), lose (a Get that finds another holder), check
		do       string
		wantHeld bool
	}
	tests := map[string][]step{
		"never renewed": {{do: "check", wantHeld: false}},
		"renewed, then held until the renew deadline": {
			{do: "renew", wantHeld: true},
			{wait: renewedIn - time.Millisecond, do: "check", wantHeld: true},
			{wait: time.Millisecond, do: "check", wantHeld: false},
		},
		"a failed renewal leaves the last good one to run out": {
			{do: "renew", wantHeld: true},
			{wait: 5 * time.Second, do: "fail", wantHeld: true},
			{wait: 5 * time.Second, do: "check", wantHeld: false},
		},
		"each renewal moves the fence": {
			{do: "renew"},
			{wait: 8 * time.Second, do: "renew"},
			{wait: 8 * time.Second, do: "check", wantHeld: true},
		},
		"a release ends it": {
			{do: "renew"},
			{wait: time.Second, do: "release", wantHeld: false},
		},
		"seeing another holder ends it": {
			{do: "renew"},
			{wait: time.Second, do: "lose", wantHeld: false},
		},
		// A process frozen past the deadline finds it passed on waking:
		// the clock is what advanced while it slept.
		"frozen past the deadline": {
			{do: "renew"},
			{wait: time.Minute, do: "check", wantHeld: false},
		},
	}
	for name, steps := range tests {
		t.Run(name, func(t *testing.T) {
			l, inner, c := newLock()
			for i, s := range steps {
				c.t = c.t.Add(s.wait)
				inner.err = nil
				switch s.do {
				case "renew":
					require.NoError(t, l.Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: me}))
				case "release":
					require.NoError(t, l.Update(t.Context(), resourcelock.LeaderElectionRecord{}))
				case "fail":
					inner.err = errors.New("timeout")
					require.Error(t, l.Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: me}))
				case "lose":
					inner.record.HolderIdentity = "replica-b"
					_, _, err := l.Get(t.Context())
					require.NoError(t, err)
				}
				if s.do != "renew" || s.wantHeld {
					assert.Equal(t, s.wantHeld, l.Held(), "step %d (%s)", i, s.do)
				}
			}
		})
	}
}

// TestLockReleasesOnlyWhatItHolds: a release by a replica that no longer
// holds the lease (frozen past it, or it saw the new holder) writes
// nothing, so the new leader's lease stays; one while held is written.
func TestLockReleasesOnlyWhatItHolds(t *testing.T) {
	tests := map[string]struct {
		before    func(l *Lock, inner *fakeLock, c *clock)
		wantWrite bool
	}{
		"held": {
			before:    func(*Lock, *fakeLock, *clock) {},
			wantWrite: true,
		},
		"frozen past the deadline, another took over": {
			before: func(_ *Lock, inner *fakeLock, c *clock) {
				c.t = c.t.Add(time.Minute)
				inner.record.HolderIdentity = "replica-b"
			},
		},
		"the release's own read found another holder": {
			before: func(l *Lock, inner *fakeLock, _ *clock) {
				inner.record.HolderIdentity = "replica-b"
				_, _, err := l.Get(context.Background())
				require.NoError(t, err)
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l, inner, c := newLock()
			require.NoError(t, l.Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: me}))
			tc.before(l, inner, c)
			holder := inner.record.HolderIdentity
			require.NoError(t, l.Update(t.Context(), resourcelock.LeaderElectionRecord{}))
			if tc.wantWrite {
				assert.Empty(t, inner.record.HolderIdentity, "released")
			} else {
				assert.Equal(t, holder, inner.record.HolderIdentity, "the new leader's lease was overwritten")
			}
			assert.False(t, l.Held())
		})
	}
}

// A renewal counts from when it was sent: the API server may have stored
// it at any moment after, and the other replicas count from there.
func TestLockCountsFromTheSend(t *testing.T) {
	l, inner, c := newLock()
	inner.during = func() { c.t = c.t.Add(3 * time.Second) } // a slow request
	sent := c.t
	require.NoError(t, l.Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: me}))
	assert.Equal(t, sent.Add(renewedIn), l.Until())
}

func TestLockEventsOnlyWhileHeld(t *testing.T) {
	l, inner, c := newLock()
	require.NoError(t, l.Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: me}))
	l.RecordEvent("became leader")
	c.t = c.t.Add(time.Minute)
	l.RecordEvent("stopped leading")
	assert.Equal(t, []string{"became leader"}, inner.events)
}

func TestFencedClient(t *testing.T) {
	l, _, c := newLock()
	existing := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "existing"}}
	inner := fake.NewClientBuilder().WithObjects(existing).Build()
	fenced := l.Fence(fakeManager{client: inner}).GetClient()
	ctx := t.Context()
	writes := map[string]func() error{
		"create": func() error {
			return fenced.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"}})
		},
		"update": func() error { return fenced.Update(ctx, existing.DeepCopy()) },
		"patch": func() error {
			return fenced.Patch(ctx, existing.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{}`)))
		},
		"status patch": func() error {
			return fenced.Status().Patch(ctx, existing.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{}`)))
		},
		"subresource update": func() error { return fenced.SubResource("status").Update(ctx, existing.DeepCopy()) },
		"delete":             func() error { return fenced.Delete(ctx, existing.DeepCopy()) },
		"delete all":         func() error { return fenced.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace("ns")) },
	}
	for name, write := range writes {
		t.Run(name+" while not leader", func(t *testing.T) {
			require.ErrorIs(t, write(), ErrNotLeader)
		})
	}
	require.NoError(t, l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: me}))
	c.t = c.t.Add(renewedIn)
	t.Run("past the renew deadline", func(t *testing.T) {
		err := writes["create"]()
		require.ErrorIs(t, err, ErrNotLeader)
		assert.EqualError(t, err, ErrNotLeader.Error()+": the last renewal was sent 10s ago, past the renew deadline (10s)")
		require.NoError(t, fenced.Get(ctx, client.ObjectKeyFromObject(existing), &corev1.ConfigMap{}), "reads are never fenced")
	})
	require.NoError(t, l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: me}))
	for _, name := range []string{"create", "update", "patch", "delete"} {
		t.Run(name+" while leader", func(t *testing.T) {
			require.NoError(t, writes[name]())
		})
	}
}

// The deadline of a write is the fence: a request still in flight then is
// abandoned.
func TestFencedWriteDeadline(t *testing.T) {
	l, _, _ := newLock()
	l.now = time.Now
	require.NoError(t, l.Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: me}))
	ctx, cancel, err := l.check(t.Context())
	require.NoError(t, err)
	defer cancel()
	deadline, ok := ctx.Deadline()
	require.True(t, ok)
	assert.Equal(t, l.Until(), deadline)
}

func TestFencedRecorder(t *testing.T) {
	l, _, c := newLock()
	rec := &countingRecorder{}
	r := l.Fence(fakeManager{recorder: rec}).GetEventRecorder("apigateway")
	r.Eventf(nil, nil, corev1.EventTypeWarning, "ApplyFailed", "Apply", "dropped: not the leader")
	require.NoError(t, l.Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: me}))
	r.Eventf(nil, nil, corev1.EventTypeNormal, "Created", "Apply", "recorded")
	r.AnnotatedEventf(nil, nil, nil, corev1.EventTypeNormal, "Created", "Apply", "recorded")
	c.t = c.t.Add(time.Minute)
	r.Eventf(nil, nil, corev1.EventTypeWarning, "ApplyFailed", "Apply", "dropped: the lease ran out")
	assert.Equal(t, []string{"recorded", "recorded"}, rec.notes)
}

// fakeManager is the part of a manager Fence wraps.
type fakeManager struct {
	manager.Manager // nil: Fence calls only the methods below
	client          client.Client
	recorder        recorder.EventRecorder
}

func (m fakeManager) GetClient() client.Client                       { return m.client }
func (m fakeManager) GetEventRecorder(string) recorder.EventRecorder { return m.recorder }

type countingRecorder struct{ notes []string }

func (r *countingRecorder) Eventf(_, _ runtime.Object, _, _, _, note string, _ ...any) {
	r.notes = append(r.notes, note)
}

func (r *countingRecorder) AnnotatedEventf(_, _ runtime.Object, _ map[string]string, _, _, _, note string, _ ...any) {
	r.notes = append(r.notes, note)
}
