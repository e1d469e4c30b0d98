package lease

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// Fence returns mgr as the leader's runnables (the reconciler, the policy
// parameters) must see it: its client writes, and its event recorders
// record, only while l is held, each write bounded by Until. Reads, and
// everything else, are mgr's. Runnables that every replica runs (the
// webhooks, the serving certificate) keep using mgr.
func (l *Lock) Fence(mgr manager.Manager) manager.Manager {
	return fencedManager{Manager: mgr, client: &Client{Client: mgr.GetClient(), lock: l}, lock: l}
}

type fencedManager struct {
	manager.Manager
	client *Client
	lock   *Lock
}

func (m fencedManager) GetClient() client.Client { return m.client }

func (m fencedManager) GetEventRecorder(name string) recorder.EventRecorder {
	return fencedRecorder{EventRecorder: m.Manager.GetEventRecorder(name), lock: m.lock}
}

// fencedRecorder drops the events of a replica that is not the leader: a
// stale leader's "ApplyFailed" would only mislead.
type fencedRecorder struct {
	recorder.EventRecorder
	lock *Lock
}

func (r fencedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if r.lock.Held() {
		r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
	}
}

func (r fencedRecorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	if r.lock.Held() {
		r.EventRecorder.AnnotatedEventf(regarding, related, annotations, eventtype, reason, action, note, args...)
	}
}

// Client is a client whose writes fail with ErrNotLeader unless its lock
// is held, each with a deadline at the lock's Until.
type Client struct {
	client.Client
	lock *Lock
}

// fenced runs write under the lock's check.
func fenced(ctx context.Context, l *Lock, write func(context.Context) error) error {
	ctx, cancel, err := l.check(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return write(ctx)
}

// Create implements client.Writer.
func (c *Client) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return fenced(ctx, c.lock, func(ctx context.Context) error { return c.Client.Create(ctx, obj, opts...) })
}

// Update implements client.Writer.
func (c *Client) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return fenced(ctx, c.lock, func(ctx context.Context) error { return c.Client.Update(ctx, obj, opts...) })
}

// Patch implements client.Writer.
func (c *Client) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return fenced(ctx, c.lock, func(ctx context.Context) error { return c.Client.Patch(ctx, obj, patch, opts...) })
}

// Apply implements client.Writer.
func (c *Client) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return fenced(ctx, c.lock, func(ctx context.Context) error { return c.Client.Apply(ctx, obj, opts...) })
}

// Delete implements client.Writer.
func (c *Client) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return fenced(ctx, c.lock, func(ctx context.Context) error { return c.Client.Delete(ctx, obj, opts...) })
}

// DeleteAllOf implements client.Writer.
func (c *Client) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return fenced(ctx, c.lock, func(ctx context.Context) error { return c.Client.DeleteAllOf(ctx, obj, opts...) })
}

// Status implements client.StatusClient.
func (c *Client) Status() client.SubResourceWriter {
	return subResourceWriter{SubResourceWriter: c.Client.Status(), lock: c.lock}
}

// SubResource implements client.SubResourceClientConstructor.
func (c *Client) SubResource(name string) client.SubResourceClient {
	sub := c.Client.SubResource(name)
	return subResourceClient{SubResourceReader: sub, subResourceWriter: subResourceWriter{SubResourceWriter: sub, lock: c.lock}}
}

type subResourceClient struct {
	client.SubResourceReader
	subResourceWriter
}

type subResourceWriter struct {
	client.SubResourceWriter
	lock *Lock
}

func (w subResourceWriter) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return fenced(ctx, w.lock, func(ctx context.Context) error { return w.SubResourceWriter.Create(ctx, obj, sub, opts...) })
}

func (w subResourceWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return fenced(ctx, w.lock, func(ctx context.Context) error { return w.SubResourceWriter.Update(ctx, obj, opts...) })
}

func (w subResourceWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return fenced(ctx, w.lock, func(ctx context.Context) error { return w.SubResourceWriter.Patch(ctx, obj, patch, opts...) })
}

func (w subResourceWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return fenced(ctx, w.lock, func(ctx context.Context) error { return w.SubResourceWriter.Apply(ctx, obj, opts...) })
}
