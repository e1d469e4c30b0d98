package routeindex

import (
	"context"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/apigateway-operator/ownership"
)

// ingressClassKind is the IngressClass as metadata: its name and the
// default-class annotation are all ownership needs of it.
var ingressClassKind = networkingv1.SchemeGroupVersion.WithKind("IngressClassList")

// WatchClasses starts the cache's informer of IngressClass metadata with
// the cache, so Classes reads a synced list from the first request.
func WatchClasses(ctx context.Context, c cache.Cache) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(networkingv1.SchemeGroupVersion.WithKind("IngressClass"))
	if _, err := c.GetInformer(ctx, obj); err != nil {
		return fmt.Errorf("watching IngressClass metadata: %w", err)
	}
	return nil
}

// Classes are the cluster's IngressClasses as reader (the manager's cache,
// after WatchClasses) has them: which exist, and which is the default.
func Classes(ctx context.Context, reader client.Reader) (ownership.Classes, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(ingressClassKind)
	if err := reader.List(ctx, list); err != nil {
		return ownership.Classes{}, fmt.Errorf("listing IngressClasses: %w", err)
	}
	return ownership.ClassesOf(list.Items), nil
}
