package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/reloader"
)

// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch

// podTemplate is the Deployment to apply: want's, or want's with the pod
// template the Deployment runs when that one already gives the gateway
// what it asks of its pods (keepRunningTemplate). Only then does it read
// the Deployment whole from the API server, for the template the operator
// applied (the cache keeps no managed fields).
func (r *Reconciler) podTemplate(ctx context.Context, gw *v1.APIGateway, want Desired) (*appsv1ac.DeploymentApplyConfiguration, error) {
	cached := r.currentDeployment(ctx, gw)
	if cached == nil {
		return want.Deployment, nil
	}
	running := cached.Spec.Template.Annotations
	digest, ok := running[PodInputsAnnotation]
	if ok && digest != want.Deployment.Spec.Template.Annotations[PodInputsAnnotation] ||
		!ok && running[ConfigHashAnnotation] != want.ConfigHash {
		return want.Deployment, nil
	}
	if same, err := appliedEqual(cached, want.Deployment, deploymentChild.extract); err == nil && same {
		return want.Deployment, nil
	}
	live := &appsv1.Deployment{}
	if err := r.clients.live.Get(ctx, client.ObjectKeyFromObject(gw), live); err != nil {
		return nil, fmt.Errorf("reading Deployment %s: %w", gw.Name, err)
	}
	if checkControlled(live, gw) != nil {
		return want.Deployment, nil
	}
	return keepRunningTemplate(want.Deployment, live, want.ConfigHash)
}

// liveStatus asks the gateway's pods what they serve, when there is a
// configuration to compare with and pods that can say (liveStatus).
func (r *Reconciler) liveStatus(ctx context.Context, gw *v1.APIGateway, dep *appsv1.Deployment, failures []failure, hash string) liveState {
	var reports []podReport
	if hash != "" && dep != nil && hasReloader(dep) && replicas(gw) > 0 {
		reports = r.podReports(ctx, gw)
	}
	return liveStatus(gw, dep, failures, hash, reports)
}

// podReports reads the reloader status of each pod behind the gateway's
// Service, as its EndpointSlices list them: every pod with an address, ready
// or not (a pod whose nginx refused its first configuration is not ready
// and says why), terminating ones left out.
func (r *Reconciler) podReports(ctx context.Context, gw *v1.APIGateway) []podReport {
	var slices discoveryv1.EndpointSliceList
	if err := r.clients.cached.List(ctx, &slices, client.InNamespace(gw.Namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: gw.Name}); err != nil {
		return nil
	}
	type target struct {
		podReport
		addr string
	}
	seen := map[string]bool{}
	var targets []target
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef == nil || e.TargetRef.Kind != "Pod" || len(e.Addresses) == 0 || seen[e.TargetRef.Name] ||
				(e.Conditions.Terminating != nil && *e.Conditions.Terminating) {
				continue
			}
			seen[e.TargetRef.Name] = true
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready
			targets = append(targets, target{podReport{name: e.TargetRef.Name, ready: ready}, e.Addresses[0]})
		}
	}
	reports := make([]podReport, len(targets))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, t := range targets {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			t.status, t.err = readPodStatus(ctx, r.statusClient, t.addr)
			reports[i] = t.podReport
		})
	}
	wg.Wait()
	return reports
}

// dialFunc dials a pod's status port.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// newPodStatusClient reads the pods' status ports: never through a proxy
// from the environment, never kept waiting. dial, when set, replaces the
// dialer: the tests' pods share the loopback device, each status server
// on a port of its own.
func newPodStatusClient(dial dialFunc) *http.Client {
	if dial == nil {
		dial = (&net.Dialer{Timeout: time.Second}).DialContext
	}
	return &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         dial,
			MaxIdleConnsPerHost: 1,
			IdleConnTimeout:     30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// maxStatusBytes bounds what the operator reads of a pod's answer; a
// reloader's is a few hundred bytes.
const maxStatusBytes = 16 << 10

// readPodStatus reads a pod's reloader status from its IP. The pod is not
// trusted: the answer is bounded, and a hash that is not one is ignored.
func readPodStatus(ctx context.Context, c *http.Client, ip string) (reloader.Status, error) {
	var st reloader.Status
	url := "http://" + net.JoinHostPort(ip, strconv.Itoa(StatusPort)) + reloader.StatusPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return st, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s answered %s", url, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxStatusBytes)).Decode(&st); err != nil {
		return st, fmt.Errorf("reading %s: %w", url, err)
	}
	return st, nil
}

// noteRefusal records a Warning event when a pod starts refusing the
// configuration: once, as the Live condition turns to
// ConfigurationRefused, which keeps the current list.
func (r *Reconciler) noteRefusal(gw *v1.APIGateway, live liveState) {
	if live.condition.Reason != v1.ReasonConfigurationRefused {
		return
	}
	if c := meta.FindStatusCondition(gw.Status.Conditions, v1.ConditionLive); c != nil && c.Reason == v1.ReasonConfigurationRefused {
		return
	}
	r.recorder.Eventf(gw, nil, corev1.EventTypeWarning, v1.ReasonConfigurationRefused, "Reload", "%s", live.condition.Message)
}

// pollPods adds to a reconcile's result the next poll of the pods while
// their reports are pending; an error is retried anyway.
func pollPods(res ctrl.Result, err error, gw *v1.APIGateway, live liveState, now time.Time) ctrl.Result {
	if !live.pending || err != nil {
		return res
	}
	var waiting time.Duration
	if c := meta.FindStatusCondition(gw.Status.Conditions, v1.ConditionLive); c != nil {
		waiting = now.Sub(c.LastTransitionTime.Time)
	}
	if after := pollAfter(waiting); res.RequeueAfter == 0 || after < res.RequeueAfter {
		res.RequeueAfter = after
	}
	return res
}

// endpointSliceGateway maps an EndpointSlice of a gateway's Service to the
// gateway: the Service has the gateway's name.
var endpointSliceGateway = handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
})
