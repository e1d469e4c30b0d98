package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/ownership"
	"example.com/apigateway-operator/routeindex"
)

// Gateways compete for hosts and routes (package ownership): a host
// belongs to the namespace that claimed it first, a route to the gateway
// that claimed it first. The validating webhook refuses a gateway that
// would lose, but it fails open, so while it does not answer a loser can
// be stored. The reconciler then decides with the same function
// (ownership.Resolve), from the claims it records in each gateway's
// status: a loser leaves the route out of every child and reports it in
// its Accepted condition, whatever its age.

// routeConflict is a route of the gateway that another gateway holds.
type routeConflict struct {
	ownership.Loss
	// of is the gateway that lost the route: its holder is named only when
	// it is of the same namespace (least disclosure: the status is read by
	// the gateway's namespace, which may not read the holder's).
	of *v1.APIGateway
}

// String names the route and, when it may, its holder, for the Accepted
// condition's message.
func (c routeConflict) String() string {
	route := fmt.Sprintf("spec.routes[%d] (%s %s %s)", c.Index, c.Route.Host, c.Route.PathType, c.Route.Path)
	switch c.Reason {
	case v1.ReasonHostOwned:
		return route + fmt.Sprintf(": host %s belongs to another namespace, which owns it or a host covering it and lends this one no such path", c.Route.Host)
	case v1.ReasonDomainBound:
		return route + fmt.Sprintf(": the cluster's admins bound domain %s to other namespaces (a DomainBinding)", c.Domain)
	}
	holder := "an APIGateway of another namespace"
	if c.Holder.Namespace == c.of.Namespace {
		holder = "APIGateway " + c.Holder.Name
	}
	return route + fmt.Sprintf(" is served by %s, which claimed it first (%s)", holder, c.Scope)
}

// conflicts are gw's lost routes as the status reports them.
func conflicts(gw *v1.APIGateway, losses []ownership.Loss) []routeConflict {
	out := make([]routeConflict, len(losses))
	for i, l := range losses {
		out[i] = routeConflict{Loss: l, of: gw}
	}
	return out
}

// maxConflictsShown bounds the Accepted condition's message: a gateway of
// 100 routes that all lose would otherwise list 100 holders.
const maxConflictsShown = 5

// conflictsMessage is the Accepted condition's message for lost routes.
func conflictsMessage(lost []routeConflict) string {
	return joinBounded(lost, maxConflictsShown) + ". A host and the names below it belong to the namespace that claimed it first " +
		"(a HostClaim records it), and a route to the APIGateway that claimed it first; remove or change the route here, " +
		"or ask the host's owner for a delegation (spec.delegations)"
}

// conflictsReason is the Accepted condition's reason for lost routes:
// DomainBound when some host is of a domain bound to other namespaces,
// else HostOwned when some host belongs to another namespace.
func conflictsReason(lost []routeConflict) string {
	reason := v1.ReasonRouteConflict
	for _, c := range lost {
		switch c.Reason {
		case v1.ReasonDomainBound:
			return c.Reason
		case v1.ReasonHostOwned:
			reason = c.Reason
		}
	}
	return reason
}

// decision is what the reconciler decided of gw's routes in one pass.
type decision struct {
	claims *v1.Claims
	kept   []v1.Route
	lost   []routeConflict
}

// decide claims gw's routes and scopes, and resolves them against the
// gateways it competes with. routes are gw's HTTPRoutes as the cache has
// them: a parent Gateway that refused them all, or that does not exist,
// is a scope gw does not route in.
//
// A gateway that routes in none of its parent Gateways keeps its lost
// routes in its children: its HTTPRoutes' refusals are the only record
// that it routes nowhere. Deleting one for a lost host would leave the
// same HTTPRoute, recreated, with no parent's answer yet, which counts as
// routing: the gateway would claim routing afresh and could take the host
// back from the gateway it lost it to. Kept, they stay refused.
func (r *Reconciler) decide(ctx context.Context, gw *v1.APIGateway, routes []*gatewayv1.HTTPRoute) (decision, error) {
	classes, err := routeindex.Classes(ctx, r.clients.cached)
	if err != nil {
		return decision{}, err
	}
	records, err := routeindex.Records(ctx, r.clients.cached)
	if err != nil {
		return decision{}, err
	}
	others, err := ownership.Candidates(ctx, r.gateways, gw, classes, records)
	if err != nil {
		return decision{}, err
	}
	answers := parentAnswers(routes)
	missing := r.missingParents(ctx, gw, answers)
	routing := func(s ownership.Scope) bool {
		if s.Ingress() {
			return s.IngressRoutes(classes)
		}
		return answers[s.Name] != metav1.ConditionFalse && !missing[s.Name]
	}
	claims := ownership.Stamp(gw, gw.Status.Claims, ownership.Scopes(gw, classes), routing, time.Now(), ownership.Floor(others))
	in := ownership.Input{Gateway: gw, Claims: claims, Others: others, Classes: classes, Policy: r.opts.Policy, Records: records}
	losses, err := r.resolveAndRecord(ctx, in)
	if err != nil {
		return decision{}, err
	}
	d := decision{claims: claims, lost: conflicts(gw, losses)}
	lostAt := make(map[int]bool, len(losses))
	for _, l := range losses {
		lostAt[l.Index] = true
	}
	ownership.MarkLost(claims, losses)
	keepAll := claims.RoutingSince == nil && validation.ExposedByHTTPRoute(&gw.Spec)
	for i, route := range gw.Spec.Routes {
		if !lostAt[i] || keepAll {
			d.kept = append(d.kept, route)
		}
	}
	return d, nil
}

// resolveAndRecord resolves in and records the hosts in.Gateway's
// namespace now owns that no record covers (ownership.Unrecorded): it
// creates each one's HostClaim. Creating is the one decision: when another
// namespace's create of the same name won (AlreadyExists), the winner is
// read and the routes are resolved again, obeying it.
func (r *Reconciler) resolveAndRecord(ctx context.Context, in ownership.Input) ([]ownership.Loss, error) {
	for attempt := 0; ; attempt++ {
		losses := ownership.Resolve(in)
		lostRace := false
		for _, host := range ownership.Unrecorded(in, losses) {
			won, err := r.recordHost(ctx, host, in.Gateway.Namespace)
			if err != nil {
				return nil, err
			}
			if won.Spec.Namespace != in.Gateway.Namespace {
				lostRace = true
			}
			in.Records.Claims = append(slices.Clip(in.Records.Claims), *won)
		}
		if !lostRace || attempt > 0 {
			return losses, nil
		}
	}
}

// recordHost creates host's HostClaim for namespace, and returns the
// record that exists: the one created, or the one another create made
// first.
func (r *Reconciler) recordHost(ctx context.Context, host, namespace string) (*v1.HostClaim, error) {
	rec := &v1.HostClaim{
		ObjectMeta: metav1.ObjectMeta{Name: v1.HostClaimName(host)},
		Spec:       v1.HostClaimSpec{Host: v1.Hostname(host), Namespace: namespace},
	}
	err := r.clients.cached.Create(ctx, rec)
	if apierrors.IsAlreadyExists(err) {
		rec = &v1.HostClaim{}
		err = r.clients.live.Get(ctx, client.ObjectKey{Name: v1.HostClaimName(host)}, rec)
	}
	if err != nil {
		return nil, fmt.Errorf("recording that namespace %s owns host %s: %w", namespace, host, err)
	}
	if rec.Spec.Namespace == namespace {
		logf.FromContext(ctx).V(1).Info("Host recorded", "host", host, "namespace", namespace)
	}
	return rec, nil
}

// missingParents are the scopes of gw's parent Gateways that have answered
// none of its HTTPRoutes and do not exist. Like an ingress class that does
// not exist, such a parent routes nothing, so a claim there holds nothing:
// otherwise any tenant could hold any host by naming a Gateway no one will
// create. Each is read from the API server, not a cache: the operator
// watches no Gateways, and only unanswered parents are read. A read that
// fails otherwise (RBAC in namespaced mode, say) leaves the parent
// counting as routing, as a slow parent does.
func (r *Reconciler) missingParents(ctx context.Context, gw *v1.APIGateway, answers map[string]metav1.ConditionStatus) map[string]bool {
	if !validation.ExposedByHTTPRoute(&gw.Spec) {
		return nil
	}
	missing := map[string]bool{}
	for _, scope := range validation.RouteScopes(gw) {
		parent, _ := validation.ScopeGateway(scope)
		if _, answered := answers[scope]; answered {
			continue
		}
		ns, name, _ := strings.Cut(parent, "/")
		err := r.clients.live.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &metav1.PartialObjectMetadata{TypeMeta: gatewayKind})
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			missing[scope] = true
		case err != nil:
			logf.FromContext(ctx).V(1).Info("Cannot tell whether a parent Gateway exists; it counts as routing", "gateway", parent, "reason", err.Error())
		}
	}
	return missing
}

// gatewayKind is Gateway API's Gateway, read as metadata only.
var gatewayKind = metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "Gateway"}

// parentAnswers are the verdicts of the parent Gateways, by scope ("gateway
// ns/name"), on routes: True when the parent accepted one of them, False
// when it refused every one it answered for (such as
// NotAllowedByListeners); a parent that answered none is absent. A
// refused parent routes nowhere, so the gateway's routes hold nothing
// there and block no one. A parent that has not answered yet still counts
// as routing: a Gateway whose controller is slow, or absent, must not let
// a second gateway in beside the first.
func parentAnswers(routes []*gatewayv1.HTTPRoute) map[string]metav1.ConditionStatus {
	answers := map[string]metav1.ConditionStatus{}
	for _, rt := range routes {
		for _, p := range rt.Status.Parents {
			if k := p.ParentRef.Kind; k != nil && *k != "Gateway" {
				continue
			}
			ns := rt.Namespace
			if p.ParentRef.Namespace != nil {
				ns = string(*p.ParentRef.Namespace)
			}
			scope := validation.GatewayScope(ns, string(p.ParentRef.Name))
			switch status := parentAccepted(&p); {
			case status == metav1.ConditionTrue:
				answers[scope] = status
			case status == metav1.ConditionFalse && answers[scope] != metav1.ConditionTrue:
				answers[scope] = status
			}
		}
	}
	return answers
}

// parentAccepted is a Gateway's status entry's Accepted status, at any
// generation (a Gateway keeps serving what it accepted while it catches
// up), or Unknown.
func parentAccepted(p *gatewayv1.RouteParentStatus) metav1.ConditionStatus {
	for _, c := range p.Conditions {
		if c.Type == string(gatewayv1.RouteConditionAccepted) {
			return c.Status
		}
	}
	return metav1.ConditionUnknown
}

// servedGateway is gw with only the routes it serves, kept, and only the
// TLS hosts of those routes (a certificate for a host it no longer routes
// would compete with the holder's): the gateway the children are built
// from. gw itself when it keeps every route.
func servedGateway(gw *v1.APIGateway, kept []v1.Route) *v1.APIGateway {
	if len(kept) == len(gw.Spec.Routes) {
		return gw
	}
	served := gw.DeepCopy()
	served.Spec.Routes = kept
	served.Spec.TLS = nil
	for _, t := range gw.Spec.TLS {
		var hosts []string
		for _, h := range t.Hosts {
			if slices.ContainsFunc(kept, func(r v1.Route) bool { return string(r.Host) == h }) {
				hosts = append(hosts, h)
			}
		}
		if len(hosts) > 0 {
			served.Spec.TLS = append(served.Spec.TLS, v1.GatewayTLS{Hosts: hosts, SecretName: t.SecretName})
		}
	}
	return served
}

// competitorHandler enqueues, for an event on an APIGateway, the other
// gateways that compete with it, before or after the event: the winner of
// a host or route may have changed for them (a claim appeared, was lost,
// or went), so a loser takes a route over as soon as its holder lets it
// go. The gateway's own reconcile comes from For, as before.
type competitorHandler struct {
	gateways routeindex.Finder
	classes  client.Reader
}

type requestQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Create implements handler.EventHandler: a new gateway can win a tie.
func (h competitorHandler) Create(ctx context.Context, e event.CreateEvent, q requestQueue) {
	h.enqueue(ctx, q, e.Object)
}

// Update implements handler.EventHandler. Only what decides a winner
// counts: the spec (its routes, scopes and delegations), deletion, and the
// claims. Status writes that change none of them (most of them) reconcile
// no one else.
func (h competitorHandler) Update(ctx context.Context, e event.UpdateEvent, q requestQueue) {
	old, okOld := e.ObjectOld.(*v1.APIGateway)
	gw, ok := e.ObjectNew.(*v1.APIGateway)
	if !okOld || !ok {
		return
	}
	if old.DeletionTimestamp.IsZero() == gw.DeletionTimestamp.IsZero() && sameContest(old, gw) &&
		apiequality.Semantic.DeepEqual(old.Status.Claims, gw.Status.Claims) {
		return
	}
	h.enqueue(ctx, q, old, gw)
}

// Delete implements handler.EventHandler.
func (h competitorHandler) Delete(ctx context.Context, e event.DeleteEvent, q requestQueue) {
	h.enqueue(ctx, q, e.Object)
}

// Generic implements handler.EventHandler; no source sends any.
func (competitorHandler) Generic(context.Context, event.GenericEvent, requestQueue) {}

// enqueue adds the gateways other than objs' own that compete with one of
// objs (ownership.Candidates): the holders of its routes, and the other
// namespaces' gateways on its hosts. Its own namespace's gateways on a
// host keep their claims whatever it does, so they are left alone unless
// they hold one of its routes: with thousands of gateways on one host,
// an event costs a few lookups, not thousands of reconciles.
func (h competitorHandler) enqueue(ctx context.Context, q requestQueue, objs ...client.Object) {
	classes, err := routeindex.Classes(ctx, h.classes)
	if err != nil {
		logf.FromContext(ctx).Error(err, "reading the IngressClasses")
		return
	}
	records, err := routeindex.Records(ctx, h.classes)
	if err != nil {
		logf.FromContext(ctx).Error(err, "reading the host records")
		return
	}
	seen := map[reconcile.Request]bool{}
	for _, obj := range objs {
		gw, ok := obj.(*v1.APIGateway)
		if !ok {
			continue
		}
		others, err := ownership.Candidates(ctx, h.gateways, gw, classes, records)
		if err != nil {
			logf.FromContext(ctx).Error(err, "finding the gateways that compete with one", "gateway", client.ObjectKeyFromObject(gw))
			continue
		}
		for _, o := range others {
			req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.Namespace, Name: o.Name}}
			if isGateway(o, gw.Namespace, gw.Name) || seen[req] {
				continue
			}
			seen[req] = true
			q.Add(req)
		}
	}
}

// sameContest reports whether a and b compete alike: the same route keys
// (hosts, paths, scopes) and delegations. The spec changes only with the
// generation, so most updates (status writes) compute no key.
func sameContest(a, b *v1.APIGateway) bool {
	return a.Generation == b.Generation ||
		(slices.Equal(validation.RouteKeys(a), validation.RouteKeys(b)) && apiequality.Semantic.DeepEqual(a.Spec.Delegations, b.Spec.Delegations))
}

func isGateway(gw *v1.APIGateway, namespace, name string) bool {
	return gw.Namespace == namespace && gw.Name == name
}
