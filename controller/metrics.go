package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// childrenApplied counts what applying each child did, served with
// controller-runtime's reconcile metrics on the metrics endpoint. kind is
// one of the four child kinds; no label carries a gateway's name.
var childrenApplied = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "apigateway_children_applied_total",
	Help: "Children of APIGateways applied, by kind (ConfigMap, Deployment, Service, Ingress) and result (created, updated, deleted, unchanged, name_taken, error).",
}, []string{"kind", "result"})

// pushes counts the pushes of a new configuration to one gateway pod, by
// their final result (push.go: loaded, refused, superseded, not_accepted,
// malformed, failed, canceled); no label carries a gateway's or a pod's
// name.
var pushes = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "apigateway_config_pushes_total",
	Help: "Configurations pushed to gateway pods, one per pod and serial, by final result: loaded, refused (nginx -t), superseded (the pod serves a newer one), not_accepted (403/404: left to the ConfigMap volume), malformed, failed (no answer, or 429/5xx, after the retries), canceled.",
}, []string{"result"})

func init() {
	metrics.Registry.MustRegister(childrenApplied, pushes)
}

// recordApplied counts one applyChild outcome.
func recordApplied(kind string, act action, err error) {
	childrenApplied.WithLabelValues(kind, appliedResult(act, err)).Inc()
}

// appliedResult is the result label of an applyChild outcome. A name held
// by an object the gateway does not control is name_taken, not error: the
// operator is right to leave that object alone, and only the user can
// free the name.
func appliedResult(act action, err error) string {
	switch {
	case isNameTaken(err):
		return "name_taken"
	case err != nil:
		return "error"
	case act == created:
		return "created"
	case act == updated:
		return "updated"
	case act == deleted:
		return "deleted"
	}
	return "unchanged"
}
