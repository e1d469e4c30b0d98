package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/testenv"
)

func isTerminal(err error) bool { return errors.Is(err, reconcile.TerminalError(nil)) }

func TestJoinRetryable(t *testing.T) {
	transient := errors.New("etcd timed out")
	terminal := reconcile.TerminalError(errors.New("bad route"))
	tests := map[string]struct {
		errs         []error
		want         []error // wrapped by the result
		wantTerminal bool
	}{
		"none":                      {errs: []error{nil, nil}},
		"one transient":             {errs: []error{nil, transient}, want: []error{transient}},
		"only terminal":             {errs: []error{terminal, nil}, want: []error{terminal}, wantTerminal: true},
		"terminal beside transient": {errs: []error{terminal, transient}, want: []error{transient}},
		"transient beside terminal": {errs: []error{transient, nil, terminal}, want: []error{transient}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := joinRetryable(tc.errs...)
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.Equal(t, tc.wantTerminal, isTerminal(err), "terminal: %v", err)
			for _, w := range tc.want {
				assert.ErrorIs(t, err, w)
			}
		})
	}
}

func TestReconcileResult(t *testing.T) {
	const retry = 42 * time.Second
	applyFailed := failure{kind: "Service", name: "gw", reason: ReasonApplyFailed, err: errors.New("etcd timed out")}
	invalid := failure{kind: "ConfigMap", name: "gw-config", reason: ReasonInvalidRoutes, err: errors.New("bad path")}
	taken := failure{kind: "Service", name: "gw", reason: ReasonChildNameTaken, err: &nameTakenError{}}
	tests := map[string]struct {
		failures     []failure
		statusErr    error
		wantErr      string // a substring; empty means no error
		wantTerminal bool
		wantRequeue  time.Duration
	}{
		"all applied":                         {},
		"a transient failure":                 {failures: []failure{applyFailed}, wantErr: "Service gw: etcd timed out"},
		"invalid routes":                      {failures: []failure{invalid}, wantErr: "ConfigMap gw-config: bad path", wantTerminal: true},
		"invalid routes and a transient one":  {failures: []failure{invalid, applyFailed}, wantErr: "Service gw: etcd timed out"},
		"invalid routes and the status write": {failures: []failure{invalid}, statusErr: errors.New("writing the status: conflict"), wantErr: "writing the status"},
		"a taken name":                        {failures: []failure{taken}, wantRequeue: retry},
		"a taken name and a transient one":    {failures: []failure{taken, applyFailed}, wantErr: "Service gw: etcd timed out"},
		"a taken name and invalid routes":     {failures: []failure{invalid, taken}, wantRequeue: retry},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res, err := reconcileResult(tc.failures, tc.statusErr, retry)
			assert.Equal(t, ctrl.Result{RequeueAfter: tc.wantRequeue}, res)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.Equal(t, tc.wantTerminal, isTerminal(err), "terminal: %v", err)
		})
	}
}

func TestCheckControlled(t *testing.T) {
	gw := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
	ref := func(apiVersion, kind, name string, uid types.UID, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(controller)}
	}
	tests := map[string]struct {
		owners  []metav1.OwnerReference
		taken   bool
		earlier bool
	}{
		"controlled by the gateway":  {owners: []metav1.OwnerReference{ref("example.com/v1", "APIGateway", "gw", gw.UID, true)}},
		"no owner":                   {taken: true},
		"owned, not controlled":      {owners: []metav1.OwnerReference{ref("example.com/v1", "APIGateway", "gw", gw.UID, false)}, taken: true},
		"controlled by another kind": {owners: []metav1.OwnerReference{ref("apps/v1", "Deployment", "gw", "other", true)}, taken: true},
		"controlled by an earlier gateway of the name": {
			owners: []metav1.OwnerReference{ref("example.com/v1alpha1", "APIGateway", "gw", "earlier", true)}, taken: true, earlier: true},
		"controlled by another gateway": {
			owners: []metav1.OwnerReference{ref("example.com/v1", "APIGateway", "other", "other", true)}, taken: true},
		"controlled by a look-alike of another group": {
			owners: []metav1.OwnerReference{ref("example.org/v1", "APIGateway", "gw", "other", true)}, taken: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "gw", OwnerReferences: tc.owners}}
			err := checkControlled(obj, gw)
			if !tc.taken {
				assert.NoError(t, err)
				return
			}
			var taken *nameTakenError
			require.ErrorAs(t, err, &taken)
			assert.Equal(t, tc.earlier, taken.earlierGateway)
		})
	}
}

// TestTransientFailureRetriedBesideInvalidRoutes reconciles a gateway whose
// routes the renderer refuses (terminal) while creating its Service fails
// transiently: the Service must still be retried, so Reconcile's error must
// not be a terminal one. The fake client only injects the failure; the
// ownership paths are tested against the real API server.
func TestTransientFailureRetriedBesideInvalidRoutes(t *testing.T) {
	gw := gateway("spaced", route("spaced.example.com", "/a%20b", v1.PathTypePrefix, "web", 80))
	unavailable := apierrors.NewServiceUnavailable("etcd leader changed")
	c := fake.NewClientBuilder().
		WithScheme(testenv.NewScheme()).
		WithObjects(gw).
		WithStatusSubresource(gw).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if _, ok := obj.(*corev1.Service); ok {
					return unavailable
				}
				return c.Create(ctx, obj, opts...)
			},
			// Whichever way the Service is written.
			Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				if _, ok := obj.(*corev1ac.ServiceApplyConfiguration); ok {
					return unavailable
				}
				return c.Apply(ctx, obj, opts...)
			},
		}).
		Build()
	r := &Reconciler{clients: clients{cached: c, live: c}, recorder: events.NewFakeRecorder(10), opts: Options{DefaultImage: testImage}, gateways: heldBy(), prober: newProber(newPodStatusClient(nil), 0),
		httpRoutes: routesThrough(nil)}

	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gw)})
	require.Error(t, err)
	assert.False(t, isTerminal(err), "controller-runtime would not retry: %v", err)
	assert.ErrorIs(t, err, unavailable)

	cur := &v1.APIGateway{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(gw), cur))
	assertCondition(t, cur.Status.Conditions, v1.ConditionDegraded, "True", ReasonInvalidRoutes)
	// No configuration is written for refused routes; the children that
	// do not depend on it still are.
	err = c.Get(context.Background(), client.ObjectKey{Namespace: gw.Namespace, Name: configMapName(gw)}, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "a ConfigMap was written for refused routes: %v", err)
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(gw), &networkingv1.Ingress{}))
}

// TestCreateDoesNotTakeAnObjectCreatedMeanwhile plays the race the plain
// Create guards against: both reads say the Service is absent, but a
// user's Service of that name appears before the write. The Create fails
// with AlreadyExists and the user's Service stays as it was; an apply
// would have taken it over. The fake client only stages the race.
func TestCreateDoesNotTakeAnObjectCreatedMeanwhile(t *testing.T) {
	gw := gateway("payments", route("payments.example.com", "/", v1.PathTypePrefix, "web", 80))
	users := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: gw.Namespace},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "payments-backend"}},
	}
	base := fake.NewClientBuilder().WithScheme(testenv.NewScheme()).WithObjects(users).Build()
	key := client.ObjectKeyFromObject(users)
	c := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if k == key {
				return apierrors.NewNotFound(corev1.Resource("services"), k.Name) // not there yet
			}
			return c.Get(ctx, k, obj, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			t.Errorf("applied %T", obj)
			return c.Apply(ctx, obj, opts...)
		},
	})

	_, _, err := applyChild(context.Background(), clients{cached: c, live: c}, gw, serviceChild, key, desiredService(gw))
	assert.True(t, apierrors.IsAlreadyExists(err), "not AlreadyExists: %v", err)
	got := &corev1.Service{}
	require.NoError(t, base.Get(context.Background(), key, got))
	assert.Equal(t, users.Spec.Selector, got.Spec.Selector)
	assert.Empty(t, got.OwnerReferences)
	assert.Empty(t, got.Labels)
}
