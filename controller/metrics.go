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

func init() {
	metrics.Registry.MustRegister(childrenApplied)
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
