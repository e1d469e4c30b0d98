package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/ownership"
	"example.com/apigateway-operator/routeindex"
	"example.com/apigateway-operator/tracing"
)

// ControllerName names the controller (metrics, logs) and the events'
// reporting controller.
const ControllerName = "apigateway"

// Options configures the reconciler.
type Options struct {
	// MaxConcurrentReconciles is how many gateways reconcile at once;
	// 0 means 1.
	MaxConcurrentReconciles int
	// DefaultImage is the gateway image when spec.image is empty, which
	// happens only for objects stored while no admission webhook ran (the
	// validating webhook rejects an empty image). Required: the operator
	// passes its --default-gateway-image.
	DefaultImage string
	// ReloaderImage is the operator's own image: an init container copies
	// its binary into every gateway pod, where it runs nginx (package
	// reloader). Required.
	ReloaderImage string
	// Resolvers are the DNS servers nginx resolves backends with, each an
	// IP address or IP:port. Empty (the usual) means the cluster DNS from
	// the pod's /etc/resolv.conf, filled in by the nginx image's
	// entrypoint; set them for images without that entrypoint.
	Resolvers []string
	// ClusterDomain is the Services' DNS suffix; empty means cluster.local.
	ClusterDomain string
	// TrustedProxies: see ChildOptions.
	TrustedProxies []string
	// StatusFrom and MetricsFrom: see ChildOptions.
	StatusFrom, MetricsFrom string
	// NoDisruptionBudget: see ChildOptions.
	NoDisruptionBudget bool
	// Namespaces, when set, are the only namespaces the manager's cache
	// holds (namespaced mode); the HTTPRoute cache (httpRouteWatch) is
	// restricted to them too.
	Namespaces []string
	// Policy says whether a host belongs to the namespace that claimed it
	// first (ownership.Strict, the default when empty) or every namespace
	// may route on every host (ownership.InterNamespaceAllowed).
	Policy ownership.Policy
	// NameTakenRetry is how often a gateway whose child name is held by
	// an object it does not control looks again; 0 means a minute. Such
	// objects are outside the cache, so no event says when the name is
	// free.
	NameTakenRetry time.Duration
	// HostReleaseAfter is how long a host's owner may route it nowhere
	// before its HostClaim ends and another namespace may take it; 0
	// means DefaultHostReleaseAfter.
	HostReleaseAfter time.Duration

	// PushKeySecret names the Secret holding the key the leader signs
	// pushes with (pushKeys); empty Name turns pushes off: the gateways'
	// ConfigMaps carry no push identity and route changes reach the pods
	// through their ConfigMap volume only.
	PushKeySecret client.ObjectKey

	// dialStatus, when set, dials the pods' status ports (tests).
	dialStatus dialFunc
	// podReportsTimeout, when set, replaces podReportsTimeout (tests).
	podReportsTimeout time.Duration
	// basicAuthResync, when set, replaces basicAuthResync (tests).
	basicAuthResync time.Duration
}

// children are the options that shape the children (Children).
func (o Options) children() ChildOptions {
	return ChildOptions{DefaultImage: o.DefaultImage, Resolvers: o.Resolvers, ClusterDomain: o.ClusterDomain,
		TrustedProxies: o.TrustedProxies, ReloaderImage: o.ReloaderImage, StatusFrom: o.StatusFrom,
		MetricsFrom: o.MetricsFrom, NoDisruptionBudget: o.NoDisruptionBudget}
}

// childOptions are the options Children renders with now: the operator's,
// and the backend Services' ClusterIPs and ready endpoints as the caches
// hold them.
func (r *Reconciler) childOptions() ChildOptions {
	o := r.opts.children()
	o.ServiceAddresses = r.backends.addresses()
	o.ServiceEndpoints = r.backends.ready()
	return o
}

// Reconciler keeps each APIGateway's ConfigMap, Deployment, Service and
// Ingress or HTTPRoutes as its spec says and reports their state in its status.
type Reconciler struct {
	// backends are the ClusterIPs and endpoints of the Services the
	// gateways route to.
	backends *backendServices
	clients  clients
	recorder recorder.EventRecorder
	opts     Options
	// gateways finds the APIGateways, of any namespace, that have a
	// route; the manager cache's route index.
	gateways routeindex.Finder
	// httpRoutes is the client of the operator's HTTPRoutes while the
	// cluster serves them, nil while it does not (httpRouteWatch.client).
	httpRoutes func(context.Context) (client.Client, error)
	// prober reads the pods' reloader status off the reconcile workers
	// (Reconciler.liveStatus).
	prober *prober
	// authWatch notices changes of the Secrets basicAuth routes name.
	authWatch *basicAuthWatch
	// keys is the push key, nil with pushes off; pusher sends new
	// configurations to the pods off the reconcile workers.
	keys   *pushKeys
	pusher *pusher
	// requeue carries gateways to reconcile again (every one, when the
	// push key changes).
	requeue chan event.GenericEvent
}

// +kubebuilder:rbac:groups=example.com,resources=apigateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=example.com,resources=apigateways/status,verbs=get;patch
// +kubebuilder:rbac:groups=example.com,resources=apigateways/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingressclasses,verbs=get;list;watch

// SetupWithManager registers the reconciler with mgr. The manager's cache
// should be built with CacheOptions.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	return setup(mgr, opts, nil)
}

// setup registers the reconciler; observe, when set, sees every request
// (tests count reconciles with it).
func setup(mgr ctrl.Manager, opts Options, observe func(ctrl.Request)) error {
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = 1
	}
	if opts.NameTakenRetry <= 0 {
		opts.NameTakenRetry = time.Minute
	}
	if opts.DefaultImage == "" || opts.ReloaderImage == "" {
		return errors.New("controller: Options.DefaultImage and Options.ReloaderImage are required")
	}
	if err := opts.children().renderOptions().Check(); err != nil {
		return err
	}
	if opts.Policy == "" {
		opts.Policy = ownership.Strict
	}
	if opts.HostReleaseAfter <= 0 {
		opts.HostReleaseAfter = DefaultHostReleaseAfter
	}
	gateways, err := routeindex.Index(context.Background(), mgr.GetCache())
	if err != nil {
		return err
	}
	if err := routeindex.WatchClasses(context.Background(), mgr.GetCache()); err != nil {
		return err
	}
	if err := routeindex.WatchRecords(context.Background(), mgr.GetCache()); err != nil {
		return err
	}
	backends, err := newBackendServices(mgr, opts.Namespaces)
	if err != nil {
		return err
	}
	pods := newPodStatusClient(opts.dialStatus)
	r := &Reconciler{
		backends: backends,
		clients:  clients{cached: mgr.GetClient(), live: mgr.GetAPIReader()},
		recorder: mgr.GetEventRecorder(ControllerName),
		opts:     opts,
		gateways: gateways,

		prober:  newProber(pods, opts.podReportsTimeout),
		requeue: make(chan event.GenericEvent),
	}
	r.pusher = newPusher(pods, mgr.GetLogger().WithName("push"), r.prober.reread)
	r.authWatch = &basicAuthWatch{live: mgr.GetAPIReader(), requeue: r.requeue, every: cmp.Or(opts.basicAuthResync, basicAuthResync),
		gateways: map[client.ObjectKey]map[string]string{}}
	runs := []manager.Runnable{r.prober, r.pusher, r.authWatch}
	if opts.PushKeySecret.Name != "" {
		r.keys = &pushKeys{secret: opts.PushKeySecret, live: mgr.GetAPIReader(), write: mgr.GetClient(),
			log: mgr.GetLogger().WithName("push-key"), changed: r.requeueAll}
		runs = append(runs, r.keys)
	}
	for _, run := range runs {
		if err := mgr.Add(run); err != nil {
			return err
		}
	}
	var rec interface {
		Reconcile(context.Context, ctrl.Request) (ctrl.Result, error)
	} = r
	if observe != nil {
		rec = observingReconciler{r, observe}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		// Status-only writes (ours included) do not bump the generation.
		For(&v1.APIGateway{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// The gateways that compete with one for a route.
		Watches(&v1.APIGateway{}, competitorHandler{gateways: gateways, classes: mgr.GetClient()}).
		// A class that appears, goes or becomes the default changes where
		// the gateways of that class, or of none, route.
		WatchesMetadata(ingressClass(), handler.EnqueueRequestsFromMapFunc(r.gatewaysOfClass)).
		// A host record that appears or goes, a binding that changes.
		Watches(&v1.HostClaim{}, handler.EnqueueRequestsFromMapFunc(r.gatewaysOverlapping)).
		Watches(&v1.DomainBinding{}, handler.EnqueueRequestsFromMapFunc(r.gatewaysOverlapping)).
		Owns(&corev1.ConfigMap{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&networkingv1.Ingress{}).
		// Pods that become ready or go: what they serve changes Live.
		Watches(&corev1.Pod{}, podGateway).
		// A backend Service that appears, goes or changes its ClusterIP:
		// the pool the configuration names.
		WatchesRawSource(backends.watch(mgr.GetClient())).
		// A backend's endpoints that change what a gateway writes: those
		// of routes with retries, or the 503 of a Service without any.
		WatchesRawSource(backends.watchEndpoints(mgr.GetClient())).
		// A read of its pods that found something new.
		WatchesRawSource(source.Channel(r.prober.events, &handler.EnqueueRequestForObject{})).
		// Every gateway, when the push key changed.
		WatchesRawSource(source.Channel(r.requeue, &handler.EnqueueRequestForObject{}))
	if opts.StatusFrom != "" {
		b = b.Owns(&networkingv1.NetworkPolicy{})
	}
	if !opts.NoDisruptionBudget {
		// One deleted or edited by hand is put back.
		b = b.Owns(&policyv1.PodDisruptionBudget{})
	}
	c, err := b.WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).Build(rec)
	if err != nil {
		return err
	}
	// HTTPRoutes are watched while the cluster serves them.
	w, err := watchHTTPRoutes(mgr, c, opts.Namespaces)
	r.httpRoutes = w.client
	if err != nil || opts.Policy == ownership.InterNamespaceAllowed {
		return err
	}
	return setupHostClaims(mgr, gateways, opts.HostReleaseAfter)
}

type observingReconciler struct {
	*Reconciler
	observe func(ctrl.Request)
}

func (o observingReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	o.observe(req)
	return o.Reconciler.Reconcile(ctx, req)
}

// Reconcile brings one gateway's children in line with its spec and
// records the outcome in its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// A span per reconcile, a child span per applied child (applyChild):
	// no-ops unless tracing is on (package tracing).
	ctx, span := tracing.Tracer().Start(ctx, "apigateway.reconcile", trace.WithAttributes(
		attribute.String("k8s.namespace.name", req.Namespace), attribute.String("apigateway.name", req.Name)))
	defer span.End()
	gw, err := r.fetch(ctx, req.NamespacedName)
	if gw == nil {
		r.prober.forget(req.NamespacedName)
		r.authWatch.track(req.NamespacedName, nil)
		return ctrl.Result{}, err
	}
	d, err := r.decide(ctx, gw, r.currentHTTPRoutes(ctx, gw))
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.recordClaims(ctx, gw, d.claims); err != nil {
		return retryStale(err)
	}
	auth := r.authWatch.recall(gw, func() basicAuth { return readBasicAuth(ctx, r.clients.live, gw) })
	dep, hash, exposed, failures := r.applyChildren(ctx, gw, servedGateway(gw, d.kept), &auth)
	r.authWatch.settle(gw, &auth)
	if staleConfigMap(failures) {
		return retryStale(errStale)
	}
	live := r.liveStatus(ctx, gw, dep, failures, hash)
	r.noteConflicts(gw, d.lost)
	r.noteRefusal(gw, live)
	statusErr := r.updateStatus(ctx, gw, dep, failures, d, exposed, live, basicAuthCondition(gw, auth))
	if errors.Is(statusErr, errStale) {
		return retryStale(statusErr)
	}
	res, err := reconcileResult(failures, statusErr, r.opts.NameTakenRetry)
	return pollPods(res, err, gw, live, time.Now()), err
}

// noteConflicts records a Warning event when gw starts losing routes to
// other gateways: once, as the Accepted condition turns False, not on
// every reconcile (an idle gateway writes nothing). The condition keeps
// the current list.
func (r *Reconciler) noteConflicts(gw *v1.APIGateway, lost []routeConflict) {
	if len(lost) == 0 || meta.IsStatusConditionFalse(gw.Status.Conditions, v1.ConditionAccepted) {
		return
	}
	r.recorder.Eventf(gw, nil, corev1.EventTypeWarning, conflictsReason(lost), "Resolve", "%s", conflictsMessage(lost))
}

// fetch reads the gateway named key; nil means there is nothing to do.
func (r *Reconciler) fetch(ctx context.Context, key client.ObjectKey) (*v1.APIGateway, error) {
	gw := &v1.APIGateway{}
	if err := r.clients.cached.Get(ctx, key, gw); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !gw.DeletionTimestamp.IsZero() {
		// The garbage collector removes the children through their owner
		// references; re-applying them now would only race it.
		return nil, nil
	}
	return gw, nil
}

// reconcileResult is what Reconcile returns for the failures of one pass
// and the status write's error. Invalid routes are terminal: retrying
// cannot help, a spec change reconciles again. A taken name is no error
// (the status says it); the pass is repeated after retry, since nothing
// watches the object that holds the name.
func reconcileResult(failures []failure, statusErr error, retry time.Duration) (ctrl.Result, error) {
	errs := []error{statusErr}
	taken := false
	for _, f := range failures {
		err := fmt.Errorf("%s %s: %w", f.kind, f.name, f.err)
		switch f.reason {
		case ReasonChildNameTaken:
			taken = true
		case ReasonInvalidRoutes, v1.ReasonGatewayAPIMissing:
			// Only a spec change can help, or Gateway API installed,
			// which requeues the gateway (httpRouteWatch).
			errs = append(errs, reconcile.TerminalError(err))
		default:
			errs = append(errs, err)
		}
	}
	err := joinRetryable(errs...)
	if taken && (err == nil || errors.Is(err, reconcile.TerminalError(nil))) {
		// A terminal error would stop the retries that notice the name is
		// free; the routes' error is in the status and an event already.
		return ctrl.Result{RequeueAfter: retry}, nil
	}
	return ctrl.Result{}, err
}

// joinRetryable joins errs (nils skipped) so that a retryable error is
// retried: controller-runtime treats the whole join as terminal when any
// member is a reconcile.TerminalError, so the terminal errors are returned
// only when every error is terminal.
func joinRetryable(errs ...error) error {
	var retryable, terminal []error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, reconcile.TerminalError(nil)):
			terminal = append(terminal, err)
		default:
			retryable = append(retryable, err)
		}
	}
	if len(retryable) > 0 {
		return errors.Join(retryable...)
	}
	return errors.Join(terminal...)
}

// applyChildren applies the children, built from served (gw with only the
// routes it wins, see servedGateway), recording what changed or failed.
// It returns the Deployment as the API server has it (nil if missing), the
// hash of the configuration in the ConfigMap when it is the spec's (empty
// otherwise) and the Exposed condition (exposedCondition).
func (r *Reconciler) applyChildren(ctx context.Context, gw, served *v1.APIGateway, auth *basicAuth) (*appsv1.Deployment, string, *metav1.Condition, []failure) {
	var (
		failures []failure
		made     []string
	)
	// An update's or a failure's event has the child as its related
	// object: it names the child, and keeps the children's events from
	// merging into one series. The children a pass creates, every child
	// of a new gateway, share one event: that is one write to the API
	// server instead of four, and one entry instead of four in the event
	// recorder's cache, which keeps every event for six minutes.
	note := func(kind string, related client.Object, act action, err error) {
		recordApplied(kind, act, err)
		switch {
		case err != nil:
			reason := ReasonApplyFailed
			if isNameTaken(err) {
				reason = ReasonChildNameTaken
			}
			failures = append(failures, failure{kind: kind, name: related.GetName(), reason: reason, err: err})
			r.recorder.Eventf(gw, related, corev1.EventTypeWarning, reason, "Apply", "%s %s: %v", kind, related.GetName(), err)
		case act == created:
			made = append(made, kind+" "+related.GetName())
		case act != unchanged:
			r.recorder.Eventf(gw, related, corev1.EventTypeNormal, string(act), "Apply", "%s %s %s", string(act), kind, related.GetName())
		}
	}
	want, renderErr := Children(served, r.childOptions())
	if renderErr != nil && served != gw {
		// The renderer names a route by its index in the list it is
		// given; refusing the whole spec, it names them as the user wrote
		// them. It refuses the whole spec too: served's routes are in it.
		if _, err := Children(gw, r.childOptions()); err != nil {
			renderErr = err
		}
	}
	r.applyBasicAuth(ctx, gw, auth, note)
	dep, hash, depFailure := r.applyConfigAndDeployment(ctx, gw, want, renderErr, auth.taken, note)
	if depFailure != nil {
		failures = append(failures, *depFailure)
	}
	routes, f := r.applyServiceAndExposure(ctx, gw, want, note)
	if f != nil {
		failures = append(failures, *f)
	}
	r.applyNetworkPolicy(ctx, gw, want, note)
	r.applyDisruptionBudget(ctx, gw, want, note)
	if len(made) > 0 {
		r.recorder.Eventf(gw, nil, corev1.EventTypeNormal, string(created), "Apply", "%s %s", string(created), strings.Join(made, ", "))
	}
	return dep, hash, exposedCondition(gw, routes, len(want.HTTPRoutes), failures), failures
}

// applyConfigAndDeployment applies the ConfigMap and the Deployment, whose
// pods load the configuration (keepRunningTemplate says which pod
// template), and returns the configuration's hash once the ConfigMap
// holds it. Routes the renderer refused (renderErr) leave both as they
// are; so does a ConfigMap name held by someone else, whose data the pods
// would otherwise mount, and a basic-auth Secret name (authTaken).
func (r *Reconciler) applyConfigAndDeployment(ctx context.Context, gw *v1.APIGateway, want Desired, renderErr error, authTaken bool, note func(string, client.Object, action, error)) (*appsv1.Deployment, string, *failure) {
	key := client.ObjectKey{Namespace: gw.Namespace, Name: gw.Name}
	if renderErr != nil {
		r.recorder.Eventf(gw, nil, corev1.EventTypeWarning, ReasonInvalidRoutes, "Render", "%v", renderErr)
		return r.currentDeployment(ctx, gw), "", &failure{kind: "ConfigMap", name: configMapName(gw), reason: ReasonInvalidRoutes, err: renderErr}
	}
	cmKey := client.ObjectKey{Namespace: gw.Namespace, Name: configMapName(gw)}
	next, err := r.stampIdentity(ctx, gw, cmKey, want.ConfigMap)
	if err != nil {
		return r.currentDeployment(ctx, gw), "", &failure{kind: "ConfigMap", name: cmKey.Name, reason: ReasonApplyFailed, err: err}
	}
	_, act, err := applyChild(ctx, r.clients, gw, configMapChild, cmKey, want.ConfigMap)
	if next != nil && apierrors.IsConflict(err) {
		// The ConfigMap changed since the cache saw it: its serial may be
		// handed out already (nextIdentity). Not a failure of the child.
		return r.currentDeployment(ctx, gw), "", &failure{kind: "ConfigMap", name: cmKey.Name, err: errStale}
	}
	note("ConfigMap", configMapChild.stub(cmKey), act, err)
	if isNameTaken(err) {
		return r.currentDeployment(ctx, gw), "", notApplied("Deployment", gw.Name, "its pods would mount ConfigMap "+cmKey.Name)
	}
	if authTaken {
		return r.currentDeployment(ctx, gw), "", notApplied("Deployment", gw.Name, "its pods would mount Secret "+basicAuthSecretName(gw))
	}
	hash := want.ConfigHash
	if err != nil {
		hash = ""
	}
	deployment, err := r.podTemplate(ctx, gw, want)
	if err == nil {
		var dep *appsv1.Deployment
		dep, act, err = applyChild(ctx, r.clients, gw, deploymentChild, key, deployment)
		note("Deployment", deploymentChild.stub(key), act, err)
		if err == nil {
			r.sendPush(ctx, gw, dep, hash, next)
			return dep, hash, nil
		}
	} else {
		note("Deployment", deploymentChild.stub(key), unchanged, err)
	}
	dep := r.currentDeployment(ctx, gw)
	r.sendPush(ctx, gw, dep, hash, next)
	return dep, hash, nil
}

// staleConfigMap reports whether the ConfigMap's apply met a newer
// ConfigMap than the cache had (applyConfigAndDeployment).
func staleConfigMap(failures []failure) bool {
	for _, f := range failures {
		if errors.Is(f.err, errStale) {
			return true
		}
	}
	return false
}

// applyServiceAndExposure applies the Service and the Ingress or
// HTTPRoutes, which send the gateway's hosts to the Service: while the
// Service's name is held by someone else, they are left as they are, or
// that object would get the gateway's traffic. An Ingress or HTTPRoute
// the gateway no longer has (it serves no route, or switched exposure,
// see Children) is deleted. It returns the HTTPRoutes as applied.
func (r *Reconciler) applyServiceAndExposure(ctx context.Context, gw *v1.APIGateway, want Desired, note func(string, client.Object, action, error)) ([]*gatewayv1.HTTPRoute, *failure) {
	key := client.ObjectKey{Namespace: gw.Namespace, Name: gw.Name}
	_, act, err := applyChild(ctx, r.clients, gw, serviceChild, key, want.Service)
	note("Service", serviceChild.stub(key), act, err)
	if isNameTaken(err) {
		return nil, notApplied(exposureKind(gw), gw.Name, "it would send the gateway's hosts to Service "+gw.Name)
	}
	if want.Ingress == nil {
		act, err = deleteChild(ctx, r.clients, gw, ingressChild, key)
	} else {
		_, act, err = applyChild(ctx, r.clients, gw, ingressChild, key, want.Ingress)
	}
	note("Ingress", ingressChild.stub(key), act, err)
	return r.applyHTTPRoutes(ctx, gw, want, note)
}

// applyHTTPRoutes applies want's HTTPRoutes and deletes the other
// HTTPRoutes gw controls: those of hosts it no longer routes, or all of
// them once it is exposed through an Ingress. Without Gateway API on the
// cluster there is nothing to delete, and a gateway that wants HTTPRoutes
// fails with GatewayAPIMissing.
func (r *Reconciler) applyHTTPRoutes(ctx context.Context, gw *v1.APIGateway, want Desired, note func(string, client.Object, action, error)) ([]*gatewayv1.HTTPRoute, *failure) {
	hr, err := r.httpRoutes(ctx)
	if err != nil {
		return nil, &failure{kind: "HTTPRoute", name: gw.Name + "-*", reason: ReasonApplyFailed, err: err}
	}
	if hr == nil {
		if !exposedByHTTPRoute(gw) {
			return nil, nil
		}
		r.recorder.Eventf(gw, nil, corev1.EventTypeWarning, v1.ReasonGatewayAPIMissing, "Apply", "%v", errGatewayAPIMissing)
		return nil, &failure{kind: "HTTPRoute", name: gw.Name + "-*", reason: v1.ReasonGatewayAPIMissing, err: errGatewayAPIMissing}
	}
	c := clients{cached: hr, live: r.clients.live}
	var routes []*gatewayv1.HTTPRoute
	keep := make(map[string]bool, len(want.HTTPRoutes))
	for _, d := range want.HTTPRoutes {
		key := client.ObjectKey{Namespace: gw.Namespace, Name: *d.Name}
		keep[key.Name] = true
		live, act, err := applyChild(ctx, c, gw, httpRouteChild, key, d)
		note("HTTPRoute", httpRouteChild.stub(key), act, err)
		if err == nil {
			routes = append(routes, live)
		}
	}
	// The cache holds only the operator's HTTPRoutes (cachedChildren), so
	// this lists the namespace's few labelled ones.
	var all gatewayv1.HTTPRouteList
	if err := hr.List(ctx, &all, client.InNamespace(gw.Namespace)); err != nil {
		return routes, &failure{kind: "HTTPRoute", name: gw.Name + "-*", reason: ReasonApplyFailed, err: fmt.Errorf("listing: %w", err)}
	}
	for i := range all.Items {
		old := &all.Items[i]
		if keep[old.Name] || checkControlled(old, gw) != nil {
			continue
		}
		key := client.ObjectKeyFromObject(old)
		act, err := deleteChild(ctx, c, gw, httpRouteChild, key)
		note("HTTPRoute", httpRouteChild.stub(key), act, err)
	}
	return routes, nil
}

// notApplied is the failure of a child left alone because a child it
// refers to, named in why, is taken.
func notApplied(kind, name, why string) *failure {
	return &failure{kind: kind, name: name, reason: ReasonChildNameTaken,
		err: fmt.Errorf("not applied: %s, whose name is taken", why)}
}

// currentDeployment is gw's Deployment from the cache, or nil, also when
// the object of its name is not gw's.
func (r *Reconciler) currentDeployment(ctx context.Context, gw *v1.APIGateway) *appsv1.Deployment {
	dep := &appsv1.Deployment{}
	if err := r.clients.cached.Get(ctx, client.ObjectKeyFromObject(gw), dep); err != nil {
		return nil
	}
	if checkControlled(dep, gw) != nil {
		return nil
	}
	return dep
}

// updateStatus writes gw's status through the status subresource, only
// when it differs from what gw already says, and only over the status gw
// was read with (errStale otherwise): a merge patch from a stale read
// would put back what that read said.
func (r *Reconciler) updateStatus(ctx context.Context, gw *v1.APIGateway, dep *appsv1.Deployment, failures []failure, d decision, exposed *metav1.Condition, live liveState, auth *metav1.Condition) error {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	want := computeStatus(gw, dep, failures, d.lost, exposed, live, now)
	setBasicAuthCondition(&want, gw, auth, now)
	want.Claims = d.claims
	if apiequality.Semantic.DeepEqual(gw.Status, want) {
		return nil
	}
	switch err := r.patchStatus(ctx, gw, func(s *v1.APIGatewayStatus) { *s = want }); {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case errors.Is(err, errStale):
		return err
	default:
		return fmt.Errorf("writing the status: %w", err)
	}
}

// patchStatus changes gw's status with set and writes it as a merge patch
// conditional on the resourceVersion gw was read with: a conflict (gw was
// read before its latest status) is errStale.
func (r *Reconciler) patchStatus(ctx context.Context, gw *v1.APIGateway, set func(*v1.APIGatewayStatus)) error {
	patch := client.MergeFromWithOptions(gw.DeepCopy(), client.MergeFromWithOptimisticLock{})
	set(&gw.Status)
	err := r.clients.cached.Status().Patch(ctx, gw, patch, client.FieldOwner(FieldOwner))
	if apierrors.IsConflict(err) {
		return errStale
	}
	return err
}

// errStale is a status write refused because the gateway was read before
// the status it would replace: the cache had not yet seen the last write.
var errStale = errors.New("the cached gateway is older than its status")

// staleRetry is how soon a pass that read a stale gateway runs again. The
// cache is one event behind, for milliseconds; and nothing else would
// queue the gateway, since status writes do not bump its generation.
const staleRetry = 50 * time.Millisecond

// retryStale is the result of a pass that stopped at err: a stale read is
// repeated soon and quietly; anything else is returned as it is.
func retryStale(err error) (ctrl.Result, error) {
	if errors.Is(err, errStale) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	return ctrl.Result{}, err
}

// recordClaims writes claims, gw's claims after this pass, before anything
// acts on them, when they stamp a claim gw's status does not hold yet.
// A stale gw (the cache had not yet seen the status written last) looks
// unclaimed: stamping its claims again would make them later than a
// competitor's and hand the competitor the route. So the write is
// conditional on gw's resourceVersion, and a stale gw's pass stops at
// errStale, before any child is touched.
func (r *Reconciler) recordClaims(ctx context.Context, gw *v1.APIGateway, claims *v1.Claims) error {
	if !stampsNew(gw.Status.Claims, claims) {
		return nil
	}
	err := r.patchStatus(ctx, gw, func(s *v1.APIGatewayStatus) { s.Claims = claims.DeepCopy() })
	switch {
	case errors.Is(err, errStale), apierrors.IsNotFound(err):
		// Read before its latest status, or deleted since: the next pass
		// reads which.
		return errStale
	case err != nil:
		return fmt.Errorf("recording the claims: %w", err)
	}
	return nil
}

// stampsNew reports whether next holds a claim time that old does not:
// what a stale read would stamp again. Lost flags are decisions, not
// claims; they go with the rest of the status.
func stampsNew(old, next *v1.Claims) bool {
	strip := func(c *v1.Claims) *v1.Claims {
		if c == nil {
			return &v1.Claims{}
		}
		c = c.DeepCopy()
		for i := range c.Routes {
			c.Routes[i].Lost = false
		}
		return c
	}
	return !apiequality.Semantic.DeepEqual(strip(old), strip(next))
}

var (
	configMapChild = child[*corev1.ConfigMap, *corev1ac.ConfigMapApplyConfiguration]{
		kind: "ConfigMap", newObj: func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, extract: corev1ac.ExtractConfigMap,
		slim: slimConfigMap,
	}
	deploymentChild = child[*appsv1.Deployment, *appsv1ac.DeploymentApplyConfiguration]{
		kind: "Deployment", newObj: func() *appsv1.Deployment { return &appsv1.Deployment{} }, extract: appsv1ac.ExtractDeployment,
		slim: slimDeployment,
	}
	serviceChild = child[*corev1.Service, *corev1ac.ServiceApplyConfiguration]{
		kind: "Service", newObj: func() *corev1.Service { return &corev1.Service{} }, extract: corev1ac.ExtractService,
		repair: repairServicePorts, slim: slimService,
	}
	ingressChild = child[*networkingv1.Ingress, *networkingv1ac.IngressApplyConfiguration]{
		kind: "Ingress", newObj: func() *networkingv1.Ingress { return &networkingv1.Ingress{} }, extract: networkingv1ac.ExtractIngress,
		slim: slimIngress,
	}
	networkPolicyChild = child[*networkingv1.NetworkPolicy, *networkingv1ac.NetworkPolicyApplyConfiguration]{
		kind: "NetworkPolicy", newObj: func() *networkingv1.NetworkPolicy { return &networkingv1.NetworkPolicy{} },
		extract: networkingv1ac.ExtractNetworkPolicy,
	}
	disruptionBudgetChild = child[*policyv1.PodDisruptionBudget, *policyv1ac.PodDisruptionBudgetApplyConfiguration]{
		kind: "PodDisruptionBudget", newObj: func() *policyv1.PodDisruptionBudget { return &policyv1.PodDisruptionBudget{} },
		extract: policyv1ac.ExtractPodDisruptionBudget, slim: slimDisruptionBudget,
	}
	httpRouteChild = child[*gatewayv1.HTTPRoute, *gatewayv1ac.HTTPRouteApplyConfiguration]{
		kind: "HTTPRoute", newObj: func() *gatewayv1.HTTPRoute { return &gatewayv1.HTTPRoute{} }, extract: gatewayv1ac.ExtractHTTPRoute,
		slim: slimHTTPRoute,
	}
)

// ingressClass is the IngressClass as the reconciler watches it: metadata
// only (routeindex.WatchClasses).
func ingressClass() *metav1.PartialObjectMetadata {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(networkingv1.SchemeGroupVersion.WithKind("IngressClass"))
	return obj
}

// gatewaysOfClass are the gateways exposed through an Ingress of the
// class obj, or of no class (the default may have changed).
func (r *Reconciler) gatewaysOfClass(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1.APIGatewayList
	if err := r.clients.cached.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		logf.FromContext(ctx).Error(err, "listing the gateways of an IngressClass", "ingressClass", obj.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		gw := &list.Items[i]
		if exposedByHTTPRoute(gw) || (gw.Spec.IngressClassName != nil && *gw.Spec.IngressClassName != obj.GetName()) {
			continue
		}
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(gw)})
	}
	return out
}

// currentHTTPRoutes are the HTTPRoutes gw controls, as the cache has them
// before this pass applies any: the parents that accepted them are where
// gw routes.
func (r *Reconciler) currentHTTPRoutes(ctx context.Context, gw *v1.APIGateway) []*gatewayv1.HTTPRoute {
	if !exposedByHTTPRoute(gw) {
		return nil
	}
	hr, err := r.httpRoutes(ctx)
	if err != nil || hr == nil {
		return nil
	}
	var all gatewayv1.HTTPRouteList
	if err := hr.List(ctx, &all, client.InNamespace(gw.Namespace)); err != nil {
		return nil
	}
	var out []*gatewayv1.HTTPRoute
	for i := range all.Items {
		if checkControlled(&all.Items[i], gw) == nil {
			out = append(out, &all.Items[i])
		}
	}
	return out
}
