package testenv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Running is a manager started by RunManager. Suites that stop the
// operator in the middle of a test (a leader that steps down, an outage, a
// shutdown under load) need a handle; the others let the test's end stop it.
type Running struct {
	cancel context.CancelFunc
	done   chan error
	within time.Duration
	once   sync.Once
}

// RunManager runs mgr until Stop or the end of the test, without waiting
// for anything: a manager that must first win an election, or whose test
// watches it start, is not held up. Stop, and the test's end, wait up to
// within for it to stop.
func RunManager(t testing.TB, mgr manager.Manager, within time.Duration) *Running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{cancel: cancel, done: make(chan error, 1), within: within}
	go func() { r.done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		if err := r.halt(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// Cancel cancels the manager's context, as SIGTERM does through
// ctrl.SetupSignalHandler, and returns at once: the test watches what the
// manager does while it drains.
func (r *Running) Cancel() { r.cancel() }

// Stop cancels the manager and waits (bounded) until it has stopped; the
// test fails if it stopped with an error or did not stop in time. Only the
// first call (or the test's end) waits and reports.
func (r *Running) Stop(t testing.TB) {
	t.Helper()
	if err := r.halt(); err != nil {
		t.Fatal(err)
	}
}

// halt stops the manager once and returns what went wrong the first time
// only, so a failure is reported once.
func (r *Running) halt() (err error) {
	r.once.Do(func() {
		r.cancel()
		select {
		case err = <-r.done:
			if err != nil {
				err = fmt.Errorf("manager stopped with an error: %w", err)
			}
		case <-time.After(r.within):
			err = fmt.Errorf("manager did not stop within %s", r.within)
		}
	})
	return err
}

// AwaitStarted waits up to within until mgr's caches have synced and, when
// webhooks is set, its webhook server serves TLS: from then on the
// manager's reconcilers see every object, and the API server's calls to
// its webhooks are answered.
func AwaitStarted(t testing.TB, mgr manager.Manager, webhooks bool, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatalf("manager caches did not sync within %s", within)
	}
	if !webhooks {
		return
	}
	started := mgr.GetWebhookServer().StartedChecker()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return started(nil) == nil, nil
	})
	if err != nil {
		t.Fatalf("webhook server did not serve TLS within %s: %v", within, errors.Join(err, started(nil)))
	}
}
