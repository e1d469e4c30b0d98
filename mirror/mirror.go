// Package mirror serves caches restricted to some namespaces
// (--watch-namespaces): it says which namespaces a cache sees, and gives an
// informer's objects an indexer to read: the informer's own when it exposes
// one, as controller-runtime's informer of every namespace does, and
// otherwise a copy kept by its events. A restricted cache has one informer
// per namespace behind the one GetInformer returns, and no indexer or store
// holds them all.
package mirror

import (
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// Namespaces is cache.Options.DefaultNamespaces for namespaces: nil, every
// namespace, when there are none. Every cache of the operator that holds
// namespaced objects is built with it, so none lists what its Roles do not
// allow.
func Namespaces(namespaces []string) map[string]cache.Config {
	if len(namespaces) == 0 {
		return nil
	}
	m := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		m[ns] = cache.Config{}
	}
	return m
}

// Indexer returns informer's indexer with indexers added, and nil: the
// cache's own sync covers it. An informer that exposes none gets a mirror
// (see Handler) with indexers, and synced, which is closed once the mirror
// holds what the informer held when it synced; until then the mirror may
// lack objects the informer has. Call it once per informer: a second call
// adds the indexers again, which the informer refuses, or a second mirror.
func Indexer(informer cache.Informer, indexers toolscache.Indexers) (toolscache.Indexer, <-chan struct{}, error) {
	return IndexerThen(informer, indexers, nil)
}

// IndexerThen is Indexer, and has then told of each of the informer's
// events once the indexer it returns holds it: a reader that an event
// sends to that indexer finds what the event announced, which two
// handlers of one informer do not promise each other. A nil then is
// Indexer.
func IndexerThen(informer cache.Informer, indexers toolscache.Indexers, then toolscache.ResourceEventHandler) (toolscache.Indexer, <-chan struct{}, error) {
	if own, ok := informer.(interface{ GetIndexer() toolscache.Indexer }); ok {
		if len(indexers) > 0 {
			if err := informer.AddIndexers(indexers); err != nil {
				return nil, nil, err
			}
		}
		if then != nil {
			// The informer updates its indexer before it tells any handler.
			if _, err := informer.AddEventHandler(then); err != nil {
				return nil, nil, fmt.Errorf("watching %s: %w", informer.HasSyncedChecker().Name(), err)
			}
		}
		return own.GetIndexer(), nil, nil
	}
	if indexers == nil {
		indexers = toolscache.Indexers{}
	}
	m := Handler{Store: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers), Then: then}
	reg, err := informer.AddEventHandler(m)
	if err != nil {
		return nil, nil, fmt.Errorf("mirroring %s: %w", informer.HasSyncedChecker().Name(), err)
	}
	return m.Store.(toolscache.Indexer), reg.HasSyncedChecker().Done(), nil
}

// Synced reports whether synced, as Indexer returns it, is nil or closed.
func Synced(synced <-chan struct{}) bool {
	if synced == nil {
		return true
	}
	select {
	case <-synced:
		return true
	default:
		return false
	}
}

// Handler keeps Store a copy of an informer's objects by its events. It
// holds the informer's objects, not copies of them (they are the cache's,
// read only): what it costs is its keys and indexes. It lags the
// informer's own store by the delivery of an event.
type Handler struct {
	Store toolscache.Store
	// Then, when set, is told of each event after Store holds it.
	Then toolscache.ResourceEventHandler
}

var _ toolscache.ResourceEventHandler = Handler{}

// OnAdd implements toolscache.ResourceEventHandler.
func (h Handler) OnAdd(obj any, initial bool) {
	_ = h.Store.Add(obj)
	if h.Then != nil {
		h.Then.OnAdd(obj, initial)
	}
}

// OnUpdate implements toolscache.ResourceEventHandler.
func (h Handler) OnUpdate(old, obj any) {
	_ = h.Store.Update(obj)
	if h.Then != nil {
		h.Then.OnUpdate(old, obj)
	}
}

// OnDelete implements toolscache.ResourceEventHandler.
func (h Handler) OnDelete(obj any) {
	gone := obj
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		gone = tombstone.Obj
	}
	_ = h.Store.Delete(gone)
	if h.Then != nil {
		h.Then.OnDelete(obj)
	}
}
