package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// action is what applying a child did.
type action string

const (
	unchanged action = ""
	created   action = "Created"
	updated   action = "Updated"
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
}

// stub is an empty object of the kind named key, to refer to the child.
func (k child[O, A]) stub(key client.ObjectKey) O {
	o := k.newObj()
	o.SetName(key.Name)
	o.SetNamespace(key.Namespace)
	return o
}

// applyChild applies desired under FieldOwner unless the object in the cache
// already holds exactly what the operator last applied: an idle gateway
// costs no write. Comparing the applied configuration the managed fields
// record (not the whole object) ignores server defaults and other managers'
// fields while still catching a hand edit of any field the operator owns,
// because such an edit moves the field's ownership away from FieldOwner.
// It returns the object as the API server (or the cache) has it.
func applyChild[O client.Object, A runtime.ApplyConfiguration](ctx context.Context, c client.Client, k child[O, A], key client.ObjectKey, desired A) (O, action, error) {
	live := k.newObj()
	act := updated
	switch err := c.Get(ctx, key, live); {
	case apierrors.IsNotFound(err):
		act = created
	case err != nil:
		return live, unchanged, fmt.Errorf("reading %s %s: %w", k.kind, key.Name, err)
	default:
		same, err := appliedEqual(live, desired, k.extract)
		if err != nil {
			return live, unchanged, fmt.Errorf("reading the fields %s owns in %s %s: %w", FieldOwner, k.kind, key.Name, err)
		}
		if same {
			return live, unchanged, nil
		}
		if k.repair != nil {
			if err := k.repair(ctx, c, live, desired); err != nil {
				return live, unchanged, fmt.Errorf("repairing %s %s: %w", k.kind, key.Name, err)
			}
		}
	}
	if err := c.Apply(ctx, desired, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return live, unchanged, fmt.Errorf("applying %s %s: %w", k.kind, key.Name, err)
	}
	// Apply decoded the server's answer into desired; read it back as the
	// typed object so status sees the new generation at once.
	fresh := k.newObj()
	if err := convertJSON(desired, fresh); err != nil {
		return live, act, err
	}
	return fresh, act, nil
}

// appliedEqual reports whether the fields FieldOwner owns in live are
// exactly desired. Both sides go through JSON so that quantities and
// empty structs compare by their wire form.
func appliedEqual[O client.Object, A runtime.ApplyConfiguration](live O, desired A, extract func(O, string) (A, error)) (bool, error) {
	current, err := extract(live, FieldOwner)
	if err != nil {
		return false, err
	}
	var a, b any
	if err := convertJSON(current, &a); err != nil {
		return false, err
	}
	if err := convertJSON(desired, &b); err != nil {
		return false, err
	}
	return reflect.DeepEqual(a, b), nil
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
