package controller

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/reloader"
	"example.com/apigateway-operator/render"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list;watch

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

// liveStatus says what the gateway's pods serve, when there is a
// configuration to compare with and pods that can say (liveStatus), from
// their last reports (prober.reports): a reconcile never waits for a pod.
// A gateway with no pods to ask has the prober forget it. It adds the
// containers of its pods the kubelet cannot start (stuckContainers).
func (r *Reconciler) liveStatus(ctx context.Context, gw *v1.APIGateway, dep *appsv1.Deployment, failures []failure, hash string) liveState {
	var pods []corev1.Pod
	if dep != nil && render.Replicas(gw) > 0 {
		pods = r.gatewayPods(ctx, gw, dep)
	}
	var reports []podReport
	if hash != "" && dep != nil && hasReloader(dep) && render.Replicas(gw) > 0 {
		reports = r.prober.reports(client.ObjectKeyFromObject(gw), hash, podTargets(pods, maxPodReports(gw)))
	} else {
		r.prober.forget(client.ObjectKeyFromObject(gw))
	}
	st := liveStatus(gw, dep, failures, hash, reports)
	st.stuck = stuckContainers(pods)
	return st
}

const (
	// podReportsTimeout bounds one read of a gateway's pods' status, all
	// of them together: a reloader answers from memory in milliseconds,
	// so a pod that has not answered within it is reported unreachable,
	// and a gateway whose pods do not answer (a tenant's NetworkPolicy,
	// its own image) holds one of the prober's slots this long at most,
	// not once per pod.
	podReportsTimeout = time.Second
	// podReportsParallel is how many pods of one gateway are asked at once.
	podReportsParallel = 8
)

// gatewayPods are the gateway's own pods (ownPods), from the cache:
// the same two lists serve the pods' reports (podTargets) and the
// containers that cannot start (stuckContainers).
func (r *Reconciler) gatewayPods(ctx context.Context, gw *v1.APIGateway, dep *appsv1.Deployment) []corev1.Pod {
	var pods corev1.PodList
	// Of a ReplicaSet, ownPods reads the metadata: the cache holds
	// nothing else of them (a typed ReplicaSet is 1.3 KiB with an empty
	// spec, and a Deployment keeps ten old ones).
	sets := &metav1.PartialObjectMetadataList{}
	sets.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("ReplicaSetList"))
	in, labelled := client.InNamespace(gw.Namespace), client.MatchingLabels(selectorLabels(gw))
	if err := r.clients.cached.List(ctx, sets, in, labelled); err != nil {
		return nil
	}
	if err := r.clients.cached.List(ctx, &pods, in, labelled); err != nil {
		return nil
	}
	return ownPods(dep, sets.Items, pods.Items)
}

// podTarget is a pod to ask, at its IP.
type podTarget struct {
	podReport
	ip string
}

// ownPods are the pods of the Deployment dep: those a ReplicaSet that
// dep controls controls, not being deleted. The pods are the cache's,
// listed by the gateway's labels, which anyone who may create pods in the
// namespace can copy, and the EndpointSlices of the gateway's Service list
// whatever pods its selector matches, or what a tenant wrote there:
// neither is asked, nor reported. The owner references say which pods the
// Deployment made.
func ownPods(dep *appsv1.Deployment, sets []metav1.PartialObjectMetadata, pods []corev1.Pod) []corev1.Pod {
	ours := map[types.UID]bool{}
	for i := range sets {
		if c := metav1.GetControllerOf(&sets[i]); c != nil && c.UID == dep.UID {
			ours[sets[i].UID] = true
		}
	}
	var out []corev1.Pod
	for i := range pods {
		p := &pods[i]
		if c := metav1.GetControllerOf(p); c != nil && ours[c.UID] && p.DeletionTimestamp == nil {
			out = append(out, *p)
		}
	}
	return out
}

// podTargets are the pods to ask of the gateway's own pods: those with
// an IP that have not finished; the ready ones first, at most limit.
func podTargets(pods []corev1.Pod, limit int) []podTarget {
	var out []podTarget
	for i := range pods {
		p := &pods[i]
		if p.Status.PodIP == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		out = append(out, podTarget{podReport{name: p.Name, ready: podReady(p)}, p.Status.PodIP})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ready != out[j].ready {
			return out[i].ready
		}
		return out[i].name < out[j].name
	})
	return out[:min(len(out), limit)]
}

// maxPodReports is how many pods one reconcile asks: the replicas, and
// the surge of a rollout, which the Deployment's default rolling update
// (the operator sets no strategy) puts at a quarter of them, rounded up.
// More pods than that are a ReplicaSet someone else added under the
// Deployment, or pods still terminating, which the limit leaves out.
func maxPodReports(gw *v1.APIGateway) int {
	n := int(render.Replicas(gw))
	return n + (n+3)/4
}

// podReady reports whether p's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// dialFunc dials a pod's status port.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// newPodStatusClient reads the pods' status ports: never through a proxy
// from the environment, never kept waiting longer than the read's
// context allows (prober.read). dial, when set, replaces the
// dialer: the tests' pods share the loopback device, each status server
// on a port of its own.
func newPodStatusClient(dial dialFunc) *http.Client {
	if dial == nil {
		dial = (&net.Dialer{Timeout: time.Second}).DialContext
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         dial,
			MaxIdleConnsPerHost: 1,
			IdleConnTimeout:     30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// readPodStatus reads a pod's reloader status from its IP. The pod is not
// trusted: the answer is bounded, and a hash that is not one is ignored.
func readPodStatus(ctx context.Context, c *http.Client, ip string) (reloader.Status, error) {
	var st reloader.Status
	url := statusURL(ip, reloader.StatusPath)
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
	st, err = reloader.DecodeStatus(resp.Body)
	if err != nil {
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

// podGateway maps a gateway pod to its gateway: the pods carry the
// gateway's name as app.kubernetes.io/instance. A pod of the namespace
// that copies the label only has that gateway reconciled; ownPods decides
// whether it is asked.
var podGateway = handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[LabelInstance]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
})

// statusURL is path on the status port of the pod at ip, where the prober
// reads what it serves and the pusher delivers configurations.
func statusURL(ip, path string) string {
	return "http://" + net.JoinHostPort(ip, strconv.Itoa(StatusPort)) + path
}
