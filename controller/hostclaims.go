package controller

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/ownership"
	"example.com/apigateway-operator/routeindex"
)

// A HostClaim records which namespace owns a host (see
// ownership.Records). The APIGateway reconciler creates it; this one
// ends it: once the owner's namespace has routed the host, and every name
// it covers, nowhere for Options.HostReleaseAfter. The owner's re-create,
// rename, edit or a brief routing gap therefore hands the host to no one.

// DefaultHostReleaseAfter is how long an owner may route a host nowhere
// before its record ends, when Options.HostReleaseAfter is 0.
const DefaultHostReleaseAfter = 24 * time.Hour

// HostClaimControllerName names the HostClaim controller.
const HostClaimControllerName = "hostclaim"

// +kubebuilder:rbac:groups=example.com,resources=hostclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=example.com,resources=hostclaims/status,verbs=update
// +kubebuilder:rbac:groups=example.com,resources=domainbindings,verbs=get;list;watch

// hostClaimReconciler keeps a HostClaim's status.unroutedSince and
// deletes the record after the grace period.
type hostClaimReconciler struct {
	client   client.Client
	gateways routeindex.Finder
	release  time.Duration
	now      func() time.Time
}

// setupHostClaims registers the HostClaim controller with mgr.
func setupHostClaims(mgr ctrl.Manager, gateways routeindex.Finder, release time.Duration) error {
	r := &hostClaimReconciler{client: mgr.GetClient(), gateways: gateways, release: release, now: time.Now}
	return ctrl.NewControllerManagedBy(mgr).
		Named(HostClaimControllerName).
		For(&v1.HostClaim{}).
		// A gateway that adds or drops a route on a host a record covers.
		Watches(&v1.APIGateway{}, claimsCovering{}).
		Complete(r)
}

// Reconcile sets or clears the record's unroutedSince, and deletes the
// record once it has been set for the grace period.
func (r *hostClaimReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rec := &v1.HostClaim{}
	if err := r.client.Get(ctx, req.NamespacedName, rec); err != nil || !rec.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	routed, err := r.routed(ctx, rec)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := r.now()
	switch {
	case routed && rec.Status.UnroutedSince == nil:
		return ctrl.Result{}, nil
	case routed:
		rec.Status.UnroutedSince = nil
		return ctrl.Result{}, r.client.Status().Update(ctx, rec)
	case rec.Status.UnroutedSince == nil:
		rec.Status.UnroutedSince = &metav1.Time{Time: now}
		return ctrl.Result{RequeueAfter: r.release}, r.client.Status().Update(ctx, rec)
	}
	if left := rec.Status.UnroutedSince.Add(r.release).Sub(now); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	// The preconditions keep a record that changed since it was read
	// (its owner routes again) from being deleted.
	uid, version := rec.UID, rec.ResourceVersion
	err = r.client.Delete(ctx, rec, client.Preconditions{UID: &uid, ResourceVersion: &version})
	if err == nil {
		logf.FromContext(ctx).Info("Host released: its owner routed it nowhere for the grace period",
			"host", rec.Spec.Host, "namespace", rec.Spec.Namespace, "after", r.release)
	}
	return ctrl.Result{}, client.IgnoreNotFound(err)
}

// routed reports whether a gateway of rec's namespace routes rec's host or
// a name it covers. The namespace's gateways on the host itself come
// first (one map read, and the usual answer); then those whose hosts
// overlap it (routeindex's Overlapping, a few map reads), not a list of
// the namespace's gateways on each pass.
func (r *hostClaimReconciler) routed(ctx context.Context, rec *v1.HostClaim) (bool, error) {
	records, err := routeindex.Records(ctx, r.client)
	if err != nil {
		return false, err
	}
	host := string(rec.Spec.Host)
	for _, find := range []func() ([]*v1.APIGateway, error){
		func() ([]*v1.APIGateway, error) { return r.gateways.OnHost(ctx, rec.Spec.Namespace, host) },
		func() ([]*v1.APIGateway, error) { return r.gateways.Overlapping(host) },
	} {
		gateways, err := find()
		if err != nil {
			return false, fmt.Errorf("finding the APIGateways on host %s: %w", host, err)
		}
		if records.Routes(rec, gateways) {
			return true, nil
		}
	}
	return false, nil
}

// claimsCovering maps a gateway's event to the records that may cover one
// of its hosts, before and after the change (a gateway that dropped a
// route no longer names its host): for each host, the records of its
// ownership.Ancestors, by name (v1.HostClaimName). A name without a
// record costs a cache miss.
type claimsCovering struct{}

var _ handler.EventHandler = claimsCovering{}

func (claimsCovering) Create(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueueCovering(q, e.Object)
}

func (claimsCovering) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueueCovering(q, e.ObjectOld, e.ObjectNew)
}

func (claimsCovering) Delete(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueueCovering(q, e.Object)
}

func (claimsCovering) Generic(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueueCovering(q, e.Object)
}

// enqueueCovering adds the records covering the hosts of objs' routes.
func enqueueCovering(q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
	for _, name := range coveringClaims(objs...) {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
}

// coveringClaims are the distinct names of the records that may cover a
// host of the gateways' routes.
func coveringClaims(objs ...client.Object) []string {
	seen := map[string]bool{}
	var out []string
	for _, obj := range objs {
		gw, ok := obj.(*v1.APIGateway)
		if !ok {
			continue
		}
		for _, route := range gw.Spec.Routes {
			for _, host := range ownership.Ancestors(string(route.Host)) {
				if name := v1.HostClaimName(host); !seen[name] {
					seen[name] = true
					out = append(out, name)
				}
			}
		}
	}
	return out
}

// gatewaysOverlapping maps a HostClaim or a DomainBinding to the gateways,
// of any namespace, with a route on a host that overlaps its host or
// domain (routeindex's Overlapping: a few map reads, not a scan of every
// gateway): a record that appears or goes, or a binding that changes, may
// change who owns their hosts (a gateway waiting on a released host takes
// it over).
func (r *Reconciler) gatewaysOverlapping(ctx context.Context, obj client.Object) []reconcile.Request {
	var host string
	switch o := obj.(type) {
	case *v1.HostClaim:
		host = string(o.Spec.Host)
	case *v1.DomainBinding:
		host = string(o.Spec.Domain)
	default:
		return nil
	}
	gateways, err := r.gateways.Overlapping(host)
	if err != nil {
		logf.FromContext(ctx).Error(err, "finding the APIGateways on a host", "host", host)
		return nil
	}
	out := make([]reconcile.Request, 0, len(gateways))
	for _, gw := range gateways {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(gw)})
	}
	return out
}
