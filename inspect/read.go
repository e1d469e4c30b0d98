package inspect

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/reloader"
)

// podTimeout bounds each pod's answer through the API server's proxy.
const podTimeout = 5 * time.Second

// Read fetches what Build reports of gateway namespace/name, reading only
// that namespace and writing nothing. A kind the caller may not list, or
// that the cluster does not serve (HTTPRoute without Gateway API), is
// left out with a warning. Each pod's reloader is asked through the API
// server's pod proxy (pods/proxy, on the status port), which needs the
// caller's RBAC and an API server that reaches the pod network; a pod
// that cannot be asked says why.
func Read(ctx context.Context, cfg *rest.Config, namespace, name string) (Inputs, []string, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, gatewayv1.Install} {
		if err := add(scheme); err != nil {
			return Inputs{}, nil, err
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return Inputs{}, nil, fmt.Errorf("building a client: %w", err)
	}
	in := Inputs{Gateway: &v1.APIGateway{}}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, in.Gateway); err != nil {
		return Inputs{}, nil, err
	}
	opts := []client.ListOption{client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: controller.ChildSelector(in.Gateway)}}
	var warnings []string
	list := func(kind string, l client.ObjectList) {
		err := c.List(ctx, l, opts...)
		switch {
		case err == nil:
		case meta.IsNoMatchError(err):
			warnings = append(warnings, kind+": not served by this cluster")
		case apierrors.IsForbidden(err):
			warnings = append(warnings, kind+": not shown, you may not list them")
		default:
			warnings = append(warnings, fmt.Sprintf("%s: %v", kind, err))
		}
	}
	var (
		cms  corev1.ConfigMapList
		deps appsv1.DeploymentList
		svcs corev1.ServiceList
		ings networkingv1.IngressList
		hrs  gatewayv1.HTTPRouteList
		pdbs policyv1.PodDisruptionBudgetList
		nps  networkingv1.NetworkPolicyList
		pods corev1.PodList
	)
	list("ConfigMaps", &cms)
	list("Deployments", &deps)
	list("Services", &svcs)
	list("Ingresses", &ings)
	if validation.ExposedByHTTPRoute(&in.Gateway.Spec) {
		list("HTTPRoutes", &hrs)
	}
	list("PodDisruptionBudgets", &pdbs)
	list("NetworkPolicies", &nps)
	list("Pods", &pods)
	in.ConfigMaps, in.Deployments, in.Services, in.Ingresses = cms.Items, deps.Items, svcs.Items, ings.Items
	in.HTTPRoutes, in.Budgets, in.NetworkPolicies, in.Pods = hrs.Items, pdbs.Items, nps.Items, pods.Items
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Inputs{}, nil, err
	}
	in.Reports, in.ReportErrors = askPods(ctx, cs, pods.Items)
	return in, warnings, nil
}

// askPods asks each running pod's reloader for its Status, all at once.
func askPods(ctx context.Context, cs kubernetes.Interface, pods []corev1.Pod) (map[string]reloader.Status, map[string]string) {
	reports, errs := map[string]reloader.Status{}, map[string]string{}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			errs[p.Name] = "not running"
			continue
		}
		wg.Go(func() {
			st, err := askPod(ctx, cs, p)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[p.Name] = err.Error()
				return
			}
			reports[p.Name] = st
		})
	}
	wg.Wait()
	return reports, errs
}

// askPod reads p's reloader Status through the API server's proxy.
func askPod(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod) (reloader.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, podTimeout)
	defer cancel()
	body, err := cs.CoreV1().Pods(p.Namespace).ProxyGet("http", p.Name, strconv.Itoa(controller.StatusPort), reloader.StatusPath, nil).Stream(ctx)
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return reloader.Status{}, fmt.Errorf("the API server's proxy: %s", status.Status().Message)
		}
		return reloader.Status{}, err
	}
	defer body.Close()
	st, err := reloader.DecodeStatus(body)
	if err != nil {
		return reloader.Status{}, fmt.Errorf("reading the reloader's status: %w", err)
	}
	return st, nil
}
