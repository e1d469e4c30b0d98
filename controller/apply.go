package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/tracing"
)

// action is what applying a child did.
type action string

const (
	unchanged action = ""
	created   action = "Created"
	updated   action = "Updated"
	deleted   action = "Deleted"
)

// child is one child kind's plumbing for applyChild.
type child[O client.Object, A runtime.ApplyConfiguration] struct {
	// kind names the child in events and conditions.
	kind string
	// newObj returns an empty object of the kind.
	newObj func() O
	// extract returns what fieldManager last applied to an object.
	extract func(O, string) (A, error)
	// repair, when set, fixes drift server-side apply cannot undo before
	// the apply (see repairServicePorts).
	repair func(ctx context.Context, c client.Client, live O, desired A) error
	// slim, when set, drops from an object entering the cache what the
	// reconciler never reads (see child.transform).
	slim func(O)
}

// stub is an empty object of the kind named key, to refer to the child.
func (k child[O, A]) stub(key client.ObjectKey) O {
	o := k.newObj()
	o.SetName(key.Name)
	o.SetNamespace(key.Namespace)
	return o
}

// clients are the two ways the reconciler reads: cached reads through the
// manager's client, which sees only labelled children (CacheOptions), and
// live reads straight from the API server, which see every object.
type clients struct {
	cached client.Client
	live   client.Reader
}

// applyChild writes desired, a child of gw, when gw controls the object of
// its name or no such object exists; an object of that name that gw does
// not control is left untouched and reported as a *nameTakenError.
//
// The cache answers first; it misses not only absent children but also
// everything that does not carry the children's labels, so a miss is
// checked with a metadata-only live read before anything is written.
// It returns the object as the API server (or the cache) has it.
func applyChild[O client.Object, A runtime.ApplyConfiguration](ctx context.Context, c clients, gw *v1.APIGateway, k child[O, A], key client.ObjectKey, desired A) (O, action, error) {
	ctx, span := tracing.Tracer().Start(ctx, "apigateway.apply", trace.WithAttributes(
		attribute.String("apigateway.child.kind", k.kind), attribute.String("apigateway.child.name", key.Name)))
	defer span.End()
	live := k.newObj()
	switch err := c.cached.Get(ctx, key, live); {
	case err == nil:
		if err := checkControlled(live, gw); err != nil {
			return live, unchanged, err
		}
		return applyControlled(ctx, c, k, live, desired)
	case !apierrors.IsNotFound(err):
		return live, unchanged, fmt.Errorf("reading %s %s: %w", k.kind, key.Name, err)
	}
	m, err := liveMetadata(ctx, c, k, key)
	switch {
	case apierrors.IsNotFound(err):
		return createChild(ctx, c.cached, k, desired)
	case err != nil:
		return live, unchanged, fmt.Errorf("reading %s %s: %w", k.kind, key.Name, err)
	}
	if err := checkControlled(m, gw); err != nil {
		return live, unchanged, err
	}
	// gw's own child out of the cache: its labels were removed, or the
	// cache lags. Applying puts the labels back.
	stub := k.stub(key)
	stub.SetUID(m.GetUID())
	return apply(ctx, c.cached, k, stub, desired)
}

// deleteChild deletes the child of k's kind named key when gw controls it:
// a child the gateway no longer has (see Children). As in applyChild, a
// cache miss is checked with a live metadata read; an object of that name
// that gw does not control is not gw's to delete, and nothing gw needs.
// The delete is conditional on the UID read, so an object created in its
// place meanwhile is left alone.
func deleteChild[O client.Object, A runtime.ApplyConfiguration](ctx context.Context, c clients, gw *v1.APIGateway, k child[O, A], key client.ObjectKey) (action, error) {
	var obj client.Object = k.newObj()
	err := c.cached.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		obj, err = liveMetadata(ctx, c, k, key)
	}
	return deleteControlled(ctx, c, gw, k, key, obj, err)
}

// deleteCachedChild is deleteChild without the live read on a cache
// miss: for a child whose absence is the common case, where a child of
// gw's left behind without its labels does no harm (see
// applyDisruptionBudget).
func deleteCachedChild[O client.Object, A runtime.ApplyConfiguration](ctx context.Context, c clients, gw *v1.APIGateway, k child[O, A], key client.ObjectKey) (action, error) {
	obj := k.newObj()
	return deleteControlled(ctx, c, gw, k, key, obj, c.cached.Get(ctx, key, obj))
}

// deleteControlled deletes obj, named key and read with err, when gw
// controls it.
func deleteControlled[O client.Object, A runtime.ApplyConfiguration](ctx context.Context, c clients, gw *v1.APIGateway, k child[O, A], key client.ObjectKey, obj client.Object, err error) (action, error) {
	switch {
	case apierrors.IsNotFound(err):
		return unchanged, nil
	case err != nil:
		return unchanged, fmt.Errorf("reading %s %s: %w", k.kind, key.Name, err)
	case checkControlled(obj, gw) != nil:
		return unchanged, nil
	}
	uid := obj.GetUID()
	if err := c.cached.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return unchanged, fmt.Errorf("deleting %s %s: %w", k.kind, key.Name, err)
	}
	return deleted, nil
}

// liveMetadata reads the metadata of the object named key from the API
// server. It goes through the live reader only: a PartialObjectMetadata
// read through the cached client would start a cluster-wide metadata
// informer of the kind.
func liveMetadata[O client.Object, A runtime.ApplyConfiguration](ctx context.Context, c clients, k child[O, A], key client.ObjectKey) (*metav1.PartialObjectMetadata, error) {
	gvk, err := c.cached.GroupVersionKindFor(k.newObj())
	if err != nil {
		return nil, err
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m, c.live.Get(ctx, key, m)
}

// createChild creates desired with a plain Create, which fails with
// AlreadyExists if someone took the name since the live read found it free
// (an apply would take that object over); the reconcile is retried and
// decides again. The Create records its fields, server defaults included,
// as FieldOwner's Update; upgradeManagedFields turns them into
// FieldOwner's Apply and the apply hands the defaults back to the server,
// so the child ends as if it had been applied. No comparison first: the
// Apply entry then holds desired and the defaults, so it never equals
// desired where the kind has defaults, and reading it (structured merge
// diff's extraction) was a sixth of the operator's CPU creating 1,000
// gateways (B5); where it does equal desired the apply is a no-op the
// API server does not store.
func createChild[O client.Object, A runtime.ApplyConfiguration](ctx context.Context, c client.Client, k child[O, A], desired A) (O, action, error) {
	obj := k.newObj()
	if err := convertJSON(desired, obj); err != nil {
		return obj, unchanged, fmt.Errorf("building %s: %w", k.kind, err)
	}
	if err := c.Create(ctx, obj, client.FieldOwner(FieldOwner)); err != nil {
		return obj, unchanged, fmt.Errorf("creating %s %s: %w", k.kind, obj.GetName(), err)
	}
	if err := upgradeManagedFields(ctx, c, k.kind, obj); err != nil {
		return obj, unchanged, err
	}
	obj, _, err := apply(ctx, c, k, obj, desired)
	return obj, created, err
}

// applyControlled brings live, a child gw controls, to desired under
// FieldOwner unless it already holds exactly what the operator last
// applied: an idle gateway costs no write. Comparing the applied
// configuration the managed fields record (not the whole object) ignores
// server defaults and other managers' fields while still catching a hand
// edit of any field the operator owns, because such an edit moves the
// field's ownership away from FieldOwner.
func applyControlled[O client.Object, A runtime.ApplyConfiguration](ctx context.Context, c clients, k child[O, A], live O, desired A) (O, action, error) {
	name := live.GetName()
	live, err := upgradeFresh(ctx, c, k, live)
	if err != nil {
		return live, unchanged, err
	}
	same, err := appliedEqual(live, desired, k.extract)
	if err == nil && !same && cachedDigest(live) != "" {
		live, same, err = recheckLive(ctx, c, k, live, desired)
	}
	if err != nil {
		return live, unchanged, fmt.Errorf("reading the fields %s owns in %s %s: %w", FieldOwner, k.kind, name, err)
	}
	if same {
		return live, unchanged, nil
	}
	if k.repair != nil {
		if err := k.repair(ctx, c.cached, live, desired); err != nil {
			return live, unchanged, fmt.Errorf("repairing %s %s: %w", k.kind, name, err)
		}
		// The repair's patch recorded an Update entry; fold it in now, or
		// the next reconcile would write again to do it.
		if err := upgradeManagedFields(ctx, c.cached, k.kind, live); err != nil {
			return live, unchanged, err
		}
	}
	return apply(ctx, c.cached, k, live, desired)
}

// recheckLive compares desired with what FieldOwner last applied to the
// API server's copy of live, a cached child whose digest differed. The
// cache can lag the operator's own writes: a pass that follows the one
// that created the child can read it between the create's upgrade of the
// managed fields and its apply, whose digest then holds the server's
// defaults. Applying again would write nothing but an Updated event for
// a change nobody made. It reads the metadata first, where a write
// follows anyway: the whole object (a ConfigMap holds the rendered
// configuration) only when the cache is behind.
func recheckLive[O client.Object, A runtime.ApplyConfiguration](ctx context.Context, c clients, k child[O, A], live O, desired A) (O, bool, error) {
	key := client.ObjectKeyFromObject(live)
	m, err := liveMetadata(ctx, c, k, key)
	if err != nil {
		return live, false, err
	}
	if m.GetUID() != live.GetUID() {
		return live, false, fmt.Errorf("%s %s was replaced while it was read", k.kind, live.GetName())
	}
	if m.GetResourceVersion() == live.GetResourceVersion() {
		return live, false, nil
	}
	fresh := k.newObj()
	if err := c.live.Get(ctx, key, fresh); err != nil {
		return live, false, err
	}
	if fresh.GetUID() != live.GetUID() {
		return live, false, fmt.Errorf("%s %s was replaced while it was read", k.kind, live.GetName())
	}
	if err := upgradeManagedFields(ctx, c.cached, k.kind, fresh); err != nil {
		return live, false, err
	}
	same, err := appliedEqual(fresh, desired, k.extract)
	return fresh, same, err
}

// upgradeFresh is upgradeManagedFields on live, the cached child, and
// once more on the object the API server holds when the cached one was
// stale: a pass that starts just after the one that created the child
// can read it from the cache before its upgrade (the conflict is then no
// failure of the child's, and would otherwise be reported as one).
func upgradeFresh[O client.Object, A runtime.ApplyConfiguration](ctx context.Context, c clients, k child[O, A], live O) (O, error) {
	err := upgradeManagedFields(ctx, c.cached, k.kind, live)
	if !apierrors.IsConflict(err) {
		return live, err
	}
	fresh := k.newObj()
	if err := c.live.Get(ctx, client.ObjectKeyFromObject(live), fresh); err != nil {
		return live, fmt.Errorf("reading %s %s: %w", k.kind, live.GetName(), err)
	}
	if fresh.GetUID() != live.GetUID() {
		// Deleted, and its name perhaps taken, since the gateway's
		// control of it was checked: the retried pass checks again.
		return live, fmt.Errorf("%s %s was replaced while it was read", k.kind, live.GetName())
	}
	return fresh, upgradeManagedFields(ctx, c.cached, k.kind, fresh)
}

// apply applies desired under FieldOwner to live, the object checked to be
// gw's, and returns the object the API server answered with, so status
// sees the new generation at once. The apply carries live's UID: if the
// object was deleted and its name taken by another since it was checked,
// the API server refuses the write (a conflict), and the reconcile looks
// again, instead of forcing the operator's fields onto someone else's
// object.
func apply[O client.Object, A runtime.ApplyConfiguration](ctx context.Context, c client.Client, k child[O, A], live O, desired A) (O, action, error) {
	u := &unstructured.Unstructured{}
	if err := convertJSON(desired, &u.Object); err != nil {
		return live, unchanged, fmt.Errorf("building %s: %w", k.kind, err)
	}
	u.SetUID(live.GetUID())
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return live, unchanged, fmt.Errorf("applying %s %s: %w", k.kind, live.GetName(), err)
	}
	// Apply decoded the server's answer into u.
	fresh := k.newObj()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, fresh); err != nil {
		return live, updated, err
	}
	return fresh, updated, nil
}

// upgradeManagedFields turns FieldOwner's Update entry in obj's managed
// fields (a Create, or repairServicePorts' patch, records one) into its
// Apply entry, so that FieldOwner owns each field once, as an applier: a
// field it co-owned as an updater would survive being dropped from the
// desired object. Nothing is written when there is no such entry. The
// patch carries obj's resourceVersion: it fails, and the reconcile is
// retried, if obj changed meanwhile.
func upgradeManagedFields(ctx context.Context, c client.Client, kind string, obj client.Object) error {
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj, sets.New(FieldOwner), FieldOwner)
	if err == nil && patch != nil {
		err = c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
	}
	if err != nil {
		return fmt.Errorf("moving the fields of %s %s to %s's apply: %w", kind, obj.GetName(), FieldOwner, err)
	}
	return nil
}

// checkControlled returns a *nameTakenError unless gw is obj's controller.
func checkControlled(obj metav1.Object, gw *v1.APIGateway) error {
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return &nameTakenError{}
	}
	if ref.UID == gw.UID {
		return nil
	}
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return &nameTakenError{earlierGateway: gv.Group == v1.GroupVersion.Group && ref.Kind == "APIGateway" && ref.Name == gw.Name}
}

// nameTakenError says a child's name belongs to an object the gateway does
// not control, which it therefore leaves alone.
type nameTakenError struct {
	// earlierGateway: the controller is an APIGateway of the same name but
	// another UID, most likely a deleted one whose children the garbage
	// collector has not removed yet.
	earlierGateway bool
}

// Error says what the user can do; the failure it is reported with names
// the kind and name.
func (e *nameTakenError) Error() string {
	if e.earlierGateway {
		return "controlled by an earlier APIGateway of this name, probably being deleted; " +
			"created again once the garbage collector has removed it"
	}
	return "already exists and is not controlled by this APIGateway; delete or rename it, or rename the gateway"
}

// appliedEqual reports whether the fields FieldOwner owns in live are
// exactly desired, comparing digests (configDigest): a child read from the
// cache carries its digest (child.transform), any other is digested from
// its managed fields.
func appliedEqual[O client.Object, A runtime.ApplyConfiguration](live O, desired A, extract func(O, string) (A, error)) (bool, error) {
	have := cachedDigest(live)
	if have == "" {
		var err error
		if have, err = appliedDigest(live, extract); err != nil {
			return false, err
		}
	}
	want, err := configDigest(desired)
	if err != nil {
		return false, err
	}
	return have == want, nil
}

func convertJSON(from, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
}

// repairServicePorts removes Service ports the operator did not ask for.
// Server-side apply cannot: a port changed by hand (kubectl edit) becomes a
// new list entry owned by that editor, which an apply leaves in place next
// to the operator's port, and two ports named http are invalid. A JSON merge
// patch replaces the list; the resourceVersion makes it fail, and the
// reconcile retry, if the Service changed since the cache saw it.
func repairServicePorts(ctx context.Context, c client.Client, live *corev1.Service, desired *corev1ac.ServiceApplyConfiguration) error {
	want := map[string]bool{}
	for _, p := range desired.Spec.Ports {
		want[portKey(*p.Port, p.Protocol)] = true
	}
	foreign := false
	for _, p := range live.Spec.Ports {
		proto := p.Protocol
		foreign = foreign || !want[portKey(p.Port, &proto)]
	}
	if !foreign {
		return nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": live.ResourceVersion},
		"spec":     map[string]any{"ports": desired.Spec.Ports},
	})
	if err != nil {
		return err
	}
	return c.Patch(ctx, live, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldOwner))
}

func portKey(port int32, proto *corev1.Protocol) string {
	p := corev1.ProtocolTCP
	if proto != nil && *proto != "" {
		p = *proto
	}
	return fmt.Sprintf("%d/%s", port, p)
}

// isNameTaken reports whether err says a child's name is taken.
func isNameTaken(err error) bool {
	var taken *nameTakenError
	return errors.As(err, &taken)
}
