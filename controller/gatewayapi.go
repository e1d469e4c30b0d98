package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apifields "k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/mirror"
)

// HTTPRouteCRD is the name of Gateway API's HTTPRoute CRD. Whether the
// cluster serves HTTPRoutes is read from it, the one CRD the operator
// watches for that: installing or removing Gateway API while the operator
// runs starts or stops its HTTPRoute cache, with no restart.
const HTTPRouteCRD = "httproutes.gateway.networking.k8s.io"

// The operator reads the HTTPRoute CRD by name only (a metadata.name field
// selector, which RBAC's resourceNames authorizes for list and watch too).
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch,resourceNames=httproutes.gateway.networking.k8s.io

// servesHTTPRoutes reports whether crd, the HTTPRoute CRD, makes the API
// server serve gateway.networking.k8s.io/v1 HTTPRoutes: it is established,
// not being deleted (the API server then refuses new objects and deletes
// the others) and serves version v1.
func servesHTTPRoutes(crd *apiextensionsv1.CustomResourceDefinition) bool {
	if crd == nil || !crd.DeletionTimestamp.IsZero() || crd.Spec.Group != gatewayv1.GroupName {
		return false
	}
	established := false
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			established = c.Status == apiextensionsv1.ConditionTrue
		}
	}
	if !established {
		return false
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == gatewayv1.GroupVersion.Version && v.Served {
			return true
		}
	}
	return false
}

// crdCache is CacheOptions' entry for the HTTPRoute CRD: that one object,
// slimmed to what servesHTTPRoutes reads (its schema alone is hundreds of
// kilobytes).
func crdCache() cache.ByObject {
	// (apifields: the package's tests have a helper named fields.)
	return cache.ByObject{
		Field: apifields.OneTermEqualSelector("metadata.name", HTTPRouteCRD),
		Transform: func(obj any) (any, error) {
			if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
				crd.ManagedFields = nil
				crd.Annotations = nil
				versions := make([]apiextensionsv1.CustomResourceDefinitionVersion, 0, len(crd.Spec.Versions))
				for _, v := range crd.Spec.Versions {
					versions = append(versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v.Name, Served: v.Served, Storage: v.Storage})
				}
				crd.Spec = apiextensionsv1.CustomResourceDefinitionSpec{Group: crd.Spec.Group, Names: crd.Spec.Names, Scope: crd.Spec.Scope, Versions: versions}
				crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{Conditions: crd.Status.Conditions}
			}
			return obj, nil
		},
	}
}

// GatewayAPI tells whether the cluster serves HTTPRoutes, from the
// HTTPRoute CRD as the manager's cache holds it (see CacheOptions): a
// read costs no request.
type GatewayAPI struct {
	reader   client.Reader
	informer cache.Informer
}

// NewGatewayAPI reads the HTTPRoute CRD through mgr's cache. It registers
// the CRD's informer now, so that it starts, and syncs, with the cache on
// every replica rather than on the first read.
func NewGatewayAPI(mgr ctrl.Manager) (*GatewayAPI, error) {
	inf, err := mgr.GetCache().GetInformer(context.Background(), &apiextensionsv1.CustomResourceDefinition{}, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("watching CustomResourceDefinition %s: %w", HTTPRouteCRD, err)
	}
	return &GatewayAPI{reader: mgr.GetCache(), informer: inf}, nil
}

// ServesHTTPRoutes reports whether the cluster serves
// gateway.networking.k8s.io/v1 HTTPRoutes now.
func (g *GatewayAPI) ServesHTTPRoutes(ctx context.Context) (bool, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	switch err := g.reader.Get(ctx, client.ObjectKey{Name: HTTPRouteCRD}, crd); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading CustomResourceDefinition %s: %w", HTTPRouteCRD, err)
	}
	return servesHTTPRoutes(crd), nil
}

// httpRouteWatch follows Gateway API on the cluster for the reconciler:
// while the cluster serves HTTPRoutes it runs a cache of the operator's
// HTTPRoutes, with the reconciler's watch on it, and stops both when the
// CRD goes. After each change it requeues the gateways exposed through
// HTTPRoutes, which then apply their HTTPRoutes or report
// GatewayAPIMissing.
//
// The HTTPRoutes have a cache of their own, rather than an informer in the
// manager's: the manager's cache is configured (label selector, transform)
// when it is built, which needs the REST mapping of every kind it is
// configured for, and a read through it of a kind with no informer starts
// one, unfiltered. This cache is built when the kind exists, reads nothing
// else, and stops as a whole.
type httpRouteWatch struct {
	api        *GatewayAPI
	mgr        ctrl.Manager
	reconciler controller.Controller
	log        logr.Logger
	// namespaces restrict the HTTPRoute cache (Options.Namespaces).
	namespaces []string
	// retry spaces the attempts after a failure (for one, the API
	// server's discovery may lag the CRD's Established condition).
	retry wait.Backoff
	// requeue says the HTTPRoute gateways are still to be requeued after
	// a change (Start's goroutine only).
	requeue bool

	decided chan struct{} // closed once the first decision is made
	decide  sync.Once
	mu      sync.RWMutex
	running *routeCache
}

// routeCache is a running cache of HTTPRoutes and the client that reads
// through it.
type routeCache struct {
	client client.Client
	stop   context.CancelFunc
	done   chan error
}

// watchHTTPRoutes makes the httpRouteWatch of reconciler, the controller
// Reconcile runs in, and adds it to mgr (on the leader, as the
// reconciler).
func watchHTTPRoutes(mgr ctrl.Manager, reconciler controller.Controller, namespaces []string) (*httpRouteWatch, error) {
	api, err := NewGatewayAPI(mgr)
	if err != nil {
		return nil, err
	}
	w := &httpRouteWatch{
		api: api, mgr: mgr, reconciler: reconciler, log: mgr.GetLogger().WithName("gatewayapi"), namespaces: namespaces,
		retry:   wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 9, Cap: 30 * time.Second},
		decided: make(chan struct{}),
	}
	return w, mgr.Add(w)
}

// NeedLeaderElection: the watch serves the reconciler, which runs on the
// leader only.
func (w *httpRouteWatch) NeedLeaderElection() bool { return true }

// Start follows the HTTPRoute CRD until ctx ends, then stops the
// HTTPRoute cache.
func (w *httpRouteWatch) Start(ctx context.Context) error {
	defer w.decide.Do(func() { close(w.decided) })
	defer w.stop()
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	reg, err := w.api.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	})
	if err != nil {
		return fmt.Errorf("watching CustomResourceDefinition %s: %w", HTTPRouteCRD, err)
	}
	defer func() { _ = w.api.informer.RemoveEventHandler(reg) }()

	backoff := w.retry
	for {
		var retry <-chan time.Time
		if err := w.sync(ctx); err != nil && ctx.Err() == nil {
			delay := backoff.Step()
			w.log.Error(err, "following Gateway API; trying again", "after", delay)
			retry = time.After(delay)
		} else {
			backoff = w.retry
		}
		w.decide.Do(func() { close(w.decided) })
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-retry:
		}
	}
}

// sync starts or stops the HTTPRoute cache as the CRD says, and then
// requeues the HTTPRoute gateways.
func (w *httpRouteWatch) sync(ctx context.Context) error {
	served, err := w.api.ServesHTTPRoutes(ctx)
	if err != nil {
		return err
	}
	w.mu.RLock()
	running := w.running != nil
	w.mu.RUnlock()
	switch {
	case served && !running:
		rc, err := w.start(ctx)
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.running = rc
		w.mu.Unlock()
		w.requeue = true
		w.log.Info("the cluster serves HTTPRoutes: watching the operator's")
	case !served && running:
		w.stop()
		w.requeue = true
		w.log.Info("the cluster no longer serves HTTPRoutes: stopped watching them")
	}
	if !w.requeue {
		return nil
	}
	if err := w.reconciler.Watch(source.Func(w.requeueHTTPRouteGateways)); err != nil {
		return err
	}
	w.requeue = false
	return nil
}

// start runs a cache of the operator's HTTPRoutes (CacheOptions' label
// selector and transform), waits for it to sync and adds the reconciler's
// watch on it: a change of an HTTPRoute reconciles the gateway that
// controls it, status included (the parent Gateways' verdicts make the
// Exposed condition).
func (w *httpRouteWatch) start(ctx context.Context) (*routeCache, error) {
	opts := cache.Options{
		HTTPClient:                  w.mgr.GetHTTPClient(),
		Scheme:                      w.mgr.GetScheme(),
		Mapper:                      w.mgr.GetRESTMapper(),
		ByObject:                    map[client.Object]cache.ByObject{&gatewayv1.HTTPRoute{}: cachedChildren(httpRouteChild)},
		ReaderFailOnMissingInformer: true,
		DefaultNamespaces:           mirror.Namespaces(w.namespaces),
	}
	c, err := cache.New(w.mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("building the HTTPRoute cache: %w", err)
	}
	inf, err := c.GetInformer(ctx, &gatewayv1.HTTPRoute{}, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("watching HTTPRoutes: %w", err)
	}
	cctx, stop := context.WithCancel(ctx)
	rc := &routeCache{stop: stop, done: make(chan error, 1)}
	go func() { rc.done <- c.Start(cctx) }()
	syncCtx, cancel := context.WithTimeout(cctx, time.Minute)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		return nil, errors.Join(errors.New("the HTTPRoute cache did not sync within a minute"), rc.halt())
	}
	rc.client, err = client.New(w.mgr.GetConfig(), client.Options{
		HTTPClient: w.mgr.GetHTTPClient(), Scheme: w.mgr.GetScheme(), Mapper: w.mgr.GetRESTMapper(),
		Cache: &client.CacheOptions{Reader: c},
	})
	if err == nil {
		err = w.reconciler.Watch(&source.Informer{
			Informer: inf,
			Handler:  handler.EnqueueRequestForOwner(w.mgr.GetScheme(), w.mgr.GetRESTMapper(), &v1.APIGateway{}, handler.OnlyControllerOwner()),
		})
	}
	if err != nil {
		return nil, errors.Join(err, rc.halt())
	}
	return rc, nil
}

// halt stops the cache and waits for it; the error is the one it stopped
// with.
func (rc *routeCache) halt() error {
	rc.stop()
	return <-rc.done
}

// stop stops the HTTPRoute cache, if it runs; its informer's handlers,
// the reconciler's watch among them, stop with it.
func (w *httpRouteWatch) stop() {
	w.mu.Lock()
	rc := w.running
	w.running = nil
	w.mu.Unlock()
	if rc == nil {
		return
	}
	if err := rc.halt(); err != nil {
		w.log.Error(err, "the HTTPRoute cache stopped with an error")
	}
}

// requeueHTTPRouteGateways queues every gateway exposed through
// HTTPRoutes, as a source of the reconciler.
func (w *httpRouteWatch) requeueHTTPRouteGateways(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	var list v1.APIGatewayList
	if err := w.mgr.GetCache().List(ctx, &list); err != nil {
		return fmt.Errorf("listing the APIGateways to requeue: %w", err)
	}
	for i := range list.Items {
		if exposedByHTTPRoute(&list.Items[i]) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return nil
}

// client is the client of the operator's HTTPRoutes, reading through
// their cache, while the cluster serves them; nil when it does not. It
// waits for the watch's first decision, so that a gateway reconciled as
// the operator starts is not told Gateway API is missing while its cache
// syncs.
func (w *httpRouteWatch) client(ctx context.Context) (client.Client, error) {
	select {
	case <-w.decided:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.running == nil {
		return nil, nil
	}
	return w.running.client, nil
}
