package controller

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "example.com/apigateway-operator/api/v1"
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
	client  client.Client
	release time.Duration
	now     func() time.Time
}

// hostClaimNamespace is the cache's index of HostClaims by the namespace
// that owns the host.
const hostClaimNamespace = "spec.namespace"

// setupHostClaims registers the HostClaim controller with mgr.
func setupHostClaims(mgr ctrl.Manager, release time.Duration) error {
	r := &hostClaimReconciler{client: mgr.GetClient(), release: release, now: time.Now}
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1.HostClaim{}, hostClaimNamespace, func(obj client.Object) []string {
		if rec, ok := obj.(*v1.HostClaim); ok {
			return []string{rec.Spec.Namespace}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("indexing HostClaims by namespace: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(HostClaimControllerName).
		For(&v1.HostClaim{}).
		// A gateway of the owner's namespace that adds or drops a route.
		Watches(&v1.APIGateway{}, handler.EnqueueRequestsFromMapFunc(r.claimsOfNamespace)).
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
// a name it covers.
func (r *hostClaimReconciler) routed(ctx context.Context, rec *v1.HostClaim) (bool, error) {
	var gateways v1.APIGatewayList
	if err := r.client.List(ctx, &gateways, client.InNamespace(rec.Spec.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("listing namespace %s's APIGateways: %w", rec.Spec.Namespace, err)
	}
	records, err := routeindex.Records(ctx, r.client)
	if err != nil {
		return false, err
	}
	gws := make([]*v1.APIGateway, len(gateways.Items))
	for i := range gateways.Items {
		gws[i] = &gateways.Items[i]
	}
	return records.Routes(rec, gws), nil
}

// claimsOfNamespace maps a gateway to the records of its namespace (the
// hostClaimNamespace index: few, whatever the number of records), since a
// gateway that dropped a route no longer names its host.
func (r *hostClaimReconciler) claimsOfNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	var claims v1.HostClaimList
	if err := r.client.List(ctx, &claims, client.MatchingFields{hostClaimNamespace: obj.GetNamespace()}, client.UnsafeDisableDeepCopy); err != nil {
		logf.FromContext(ctx).Error(err, "listing HostClaims")
		return nil
	}
	out := make([]reconcile.Request, 0, len(claims.Items))
	for _, c := range claims.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: c.Name}})
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
