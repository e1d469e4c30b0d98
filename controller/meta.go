package controller

import (
	"k8s.io/apimachinery/pkg/labels"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
)

const (
	// FieldOwner is the server-side apply field manager of every child the
	// operator writes: one owner, so its applied configuration is the whole
	// of what the operator wants.
	FieldOwner = "apigateway-operator"

	// Labels the children carry; the manager's cache selects on them.
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"

	// nameValue is the app.kubernetes.io/name of every child.
	nameValue = "apigateway"

	// ConfigHashAnnotation, on the gateway pods' template with the Rollout
	// strategy only, holds the hash of the rendered configuration
	// (configHash), so that a route change rolls the pods; with Reload
	// they reload it in place. Templates from before the reloader carry it
	// too (keepRunningTemplate).
	ConfigHashAnnotation = "example.com/config-hash"
)

// selectorLabels select a gateway's pods. They are the Deployment's
// immutable selector, so they hold only what never changes for a gateway.
func selectorLabels(gw *v1.APIGateway) map[string]string {
	return map[string]string{LabelName: nameValue, LabelInstance: gw.Name}
}

// childLabels are the labels of every child and of the gateway pods.
func childLabels(gw *v1.APIGateway) map[string]string {
	l := selectorLabels(gw)
	l[LabelManagedBy] = FieldOwner
	return l
}

// managedSelector selects every child the operator manages, in any
// namespace; it restricts the manager's cache.
func managedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{LabelName: nameValue, LabelManagedBy: FieldOwner})
}

// ownerReference makes gw the controller of a child, so the garbage
// collector deletes the child with the gateway and Owns() maps its events
// back to the gateway.
func ownerReference(gw *v1.APIGateway) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(v1.GroupVersion.String()).
		WithKind("APIGateway").
		WithName(gw.Name).
		WithUID(gw.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// configMapName is the name of the ConfigMap holding gw's configuration.
func configMapName(gw *v1.APIGateway) string { return gw.Name + "-config" }

// ChildSelector selects gw's children and its pods: what `kubectl
// apigateway status` lists (package inspect). A child is gw's only when
// gw also controls it (its owner reference), which the selector cannot
// say.
func ChildSelector(gw *v1.APIGateway) labels.Selector {
	return labels.SelectorFromSet(ChildSelectorLabels(gw))
}

// ChildSelectorLabels are ChildSelector's labels, which each child and
// pod of gw carries.
func ChildSelectorLabels(gw *v1.APIGateway) map[string]string { return childLabels(gw) }
