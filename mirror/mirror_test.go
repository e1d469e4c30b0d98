package mirror

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

func svc(ns, version string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api", ResourceVersion: version}}
}

// TestHandler: the store holds what the informer's events leave, a
// tombstone's object deleted too.
func TestHandler(t *testing.T) {
	a1, a2, b := svc("team-a", "1"), svc("team-a", "2"), svc("team-b", "3")
	for _, tc := range []struct {
		name   string
		events func(h Handler)
		want   []string // namespace/name@version
	}{
		{"adds", func(h Handler) { h.OnAdd(a1, true); h.OnAdd(b, false) }, []string{"team-a/api@1", "team-b/api@3"}},
		{"an update replaces", func(h Handler) { h.OnAdd(a1, true); h.OnUpdate(a1, a2) }, []string{"team-a/api@2"}},
		{"a delete removes", func(h Handler) { h.OnAdd(a1, true); h.OnAdd(b, true); h.OnDelete(a1) }, []string{"team-b/api@3"}},
		{"a tombstone removes its object", func(h Handler) {
			h.OnAdd(a1, true)
			h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "team-a/api", Obj: a1})
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Handler{Store: toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)}
			tc.events(h)
			var got []string
			for _, o := range h.Store.List() {
				s := o.(*corev1.Service)
				got = append(got, s.Namespace+"/"+s.Name+"@"+s.ResourceVersion)
			}
			assert.ElementsMatch(t, tc.want, got)
		})
	}
}

// TestHandlerThen: Then hears of each event once the store holds it, a
// tombstone as it came.
func TestHandlerThen(t *testing.T) {
	a1, a2 := svc("team-a", "1"), svc("team-a", "2")
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	var seen []string
	stored := func() string {
		obj, ok, _ := store.GetByKey("team-a/api")
		if !ok {
			return "none"
		}
		return obj.(*corev1.Service).ResourceVersion
	}
	h := Handler{Store: store, Then: toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, _ bool) { seen = append(seen, "add, store at "+stored()) },
		UpdateFunc: func(_, obj any) { seen = append(seen, "update, store at "+stored()) },
		DeleteFunc: func(obj any) {
			_, tombstone := obj.(toolscache.DeletedFinalStateUnknown)
			seen = append(seen, fmt.Sprintf("delete (tombstone %v), store at %s", tombstone, stored()))
		},
	}}
	h.OnAdd(a1, true)
	h.OnUpdate(a1, a2)
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "team-a/api", Obj: a2})
	assert.Equal(t, []string{"add, store at 1", "update, store at 2", "delete (tombstone true), store at none"}, seen)
}

func TestSynced(t *testing.T) {
	assert.True(t, Synced(nil), "the informer's own store: the cache's sync covers it")
	ch := make(chan struct{})
	assert.False(t, Synced(ch))
	close(ch)
	require.True(t, Synced(ch))
}

// TestNamespaces: no namespaces is every namespace (nil); some are exactly
// those.
func TestNamespaces(t *testing.T) {
	assert.Nil(t, Namespaces(nil))
	assert.Nil(t, Namespaces([]string{}))
	got := Namespaces([]string{"team-a", "team-b"})
	assert.Len(t, got, 2)
	assert.Contains(t, got, "team-a")
	assert.Contains(t, got, "team-b")
}
