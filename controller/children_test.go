package controller

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/testenv"
)

// TestReconcilerWritesChildren holds the reconciler to Children: what a
// reconcile of a new gateway writes, by Create or by apply, is exactly
// what Children builds, for each golden gateway and for options that
// change the children; for refused routes, only the Service and the
// Ingress. The render command prints Children, so this is what keeps its
// preview true. The fake client only records the writes; applying itself
// is tested against the real API server.
func TestReconcilerWritesChildren(t *testing.T) {
	refused := gateway("refused", route("refused.example.com", "/a%20b", v1.PathTypePrefix, "web", 80))
	gateways := testGateways()
	gateways["refused"] = refused
	options := map[string]Options{
		"defaults": {DefaultImage: testImage, ReloaderImage: testReloaderImage},
		"resolvers and cluster domain": {
			DefaultImage: "registry.example.com/nginx:1", ReloaderImage: testReloaderImage, Resolvers: []string{"10.96.0.10", "[fd00::a]:5353"}, ClusterDomain: "corp.internal",
		},
		"status port policy": {DefaultImage: testImage, ReloaderImage: testReloaderImage, StatusFrom: "apigateway-system"},
	}
	for gwName, gw := range gateways {
		for optName, opts := range options {
			t.Run(gwName+"/"+optName, func(t *testing.T) {
				c, written := recordingClient(t, gw)
				r := &Reconciler{clients: clients{cached: c, live: c}, recorder: events.NewFakeRecorder(10), opts: opts, gateways: heldBy(), prober: newProber(newPodStatusClient(nil), 0),
					httpRoutes: routesThrough(c)}
				_, _ = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gw)})

				stored := &v1.APIGateway{}
				require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(gw), stored))
				want, err := Children(stored, opts.children())
				assert.Equal(t, gw == refused, err != nil, "renderer error: %v", err)
				wantObjs := map[string]client.Object{}
				for _, ac := range want.Objects() {
					obj := typedChild(t, ac)
					wantObjs[childKey(obj)] = obj
				}
				// The reconciler records the hosts the gateway owns
				// (HostClaims): records, not children.
				for k, obj := range written {
					if rec, ok := obj.(*v1.HostClaim); ok {
						assert.Equal(t, gw.Namespace, rec.Spec.Namespace, "a record of another namespace")
						delete(written, k)
					}
				}
				assert.Equal(t, wantObjs, written)
			})
		}
	}
}

// recordingClient is a fake client holding gw that records the last
// object written for each child, by Create or by Apply, keyed by childKey.
func recordingClient(t *testing.T, gw *v1.APIGateway) (client.Client, map[string]client.Object) {
	written := map[string]client.Object{}
	c := fake.NewClientBuilder().
		WithScheme(testenv.NewScheme()).
		WithObjects(gw.DeepCopy()).
		WithStatusSubresource(gw).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				copied := obj.DeepCopyObject().(client.Object)
				written[childKey(copied)] = copied
				return c.Create(ctx, obj, opts...)
			},
			Apply: func(ctx context.Context, c client.WithWatch, ac runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				obj := typedChild(t, ac)
				written[childKey(obj)] = obj
				return c.Apply(ctx, ac, opts...)
			},
		}).
		Build()
	return c, written
}

// typedChild is the object ac describes, so that a Create's object and an
// apply configuration compare field by field. An apply carries the live
// object's UID as a precondition (apply.go), which is no field of the
// child: it is dropped.
func typedChild(t *testing.T, ac runtime.ApplyConfiguration) client.Object {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, convertJSON(ac, &u.Object))
	u.SetUID("")
	var obj client.Object
	switch u.GetKind() {
	case "ConfigMap":
		obj = configMapChild.newObj()
	case "Deployment":
		obj = deploymentChild.newObj()
	case "Service":
		obj = serviceChild.newObj()
	case "Ingress":
		obj = ingressChild.newObj()
	case "HTTPRoute":
		obj = httpRouteChild.newObj()
	case "NetworkPolicy":
		obj = networkPolicyChild.newObj()
	case "PodDisruptionBudget":
		obj = disruptionBudgetChild.newObj()
	default:
		t.Fatalf("not a child: %T of kind %q", ac, u.GetKind())
	}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj))
	return obj
}

func childKey(obj client.Object) string {
	return fmt.Sprintf("%T %s/%s", obj, obj.GetNamespace(), obj.GetName())
}

func TestChildrenObjects(t *testing.T) {
	gw := testGateways()["full"]
	d, err := Children(gw, ChildOptions{DefaultImage: testImage})
	require.NoError(t, err)
	assert.Equal(t, []runtime.ApplyConfiguration{d.ConfigMap, d.Deployment, d.Service, d.Ingress, d.DisruptionBudget}, d.Objects())

	refused := gateway("refused", route("refused.example.com", "/a%20b", v1.PathTypePrefix, "web", 80))
	d, err = Children(refused, ChildOptions{DefaultImage: testImage})
	require.Error(t, err)
	assert.Nil(t, d.ConfigMap)
	assert.Nil(t, d.Deployment)
	assert.Equal(t, []runtime.ApplyConfiguration{d.Service, d.Ingress}, d.Objects(), "one replica: no budget")

	_, err = Children(gw, ChildOptions{DefaultImage: testImage, Resolvers: []string{"dns.example.com"}})
	assert.Error(t, err, "a resolver that is no IP address")

	// Other gateways won every route: the pods keep running, with no
	// route, and no Ingress is built (the API server refuses one without
	// rules).
	none := gw.DeepCopy()
	none.Spec.Routes, none.Spec.TLS = nil, nil
	d, err = Children(none, ChildOptions{DefaultImage: testImage})
	require.NoError(t, err)
	assert.Nil(t, d.Ingress)
	assert.Equal(t, []runtime.ApplyConfiguration{d.ConfigMap, d.Deployment, d.Service, d.DisruptionBudget}, d.Objects())
}
