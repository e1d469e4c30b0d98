package controller

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/push"
	"example.com/apigateway-operator/reloader"
)

// pushStateKey holds, in a cached ConfigMap, what the serial's rule reads
// of the push identity and the template the cache drops (slimConfigMap):
// pushState.String.
const pushStateKey = "#push-state"

// configState is what the serial's rule reads of a gateway's ConfigMap as
// the operator last saw it: whether it exists, at which resourceVersion,
// the hash of its template and the serial beside it (hasSerial false
// without a usable identity of this gateway's).
type configState struct {
	exists          bool
	resourceVersion string
	hash            string
	serial          uint64
	hasSerial       bool
}

// configStateOf reads cm, whole (a live read) or slimmed by the cache, for
// the gateway of UID uid; nil is a ConfigMap that does not exist.
func configStateOf(cm *corev1.ConfigMap, uid string) configState {
	if cm == nil {
		return configState{}
	}
	p, ok := pushStateOf(cm)
	st := configState{exists: true, resourceVersion: cm.ResourceVersion, hash: p.hash}
	if ok && p.uid == uid {
		st.serial, st.hasSerial = p.serial, true
	}
	return st
}

// pushState is what the serial's rule reads of a ConfigMap's push
// identity and template: the identity's serial and UID and the template's
// hash.
type pushState struct {
	serial    uint64
	uid, hash string
}

// String is the state as the cache keeps it: "<serial> <UID> <hash>",
// about 120 bytes where the identity alone is some 200.
func (p pushState) String() string {
	return strconv.FormatUint(p.serial, 10) + " " + p.uid + " " + p.hash
}

// pushStateOf reads cm, whole or slimmed by the cache; false without a
// usable identity (the hash is then that of a whole ConfigMap's template).
func pushStateOf(cm *corev1.ConfigMap) (pushState, bool) {
	if s, ok := cm.Data[pushStateKey]; ok {
		f := strings.Fields(s)
		if len(f) != 3 {
			return pushState{}, false
		}
		serial, err := strconv.ParseUint(f[0], 10, 64)
		return pushState{serial: serial, uid: f[1], hash: f[2]}, err == nil
	}
	var p pushState
	if t, ok := cm.Data[configKey]; ok {
		p.hash = configHash(t)
	}
	id, err := push.ParseIdentity([]byte(cm.Data[push.IdentityKey]))
	if err != nil {
		return p, false
	}
	p.serial, p.uid = id.Serial, id.UID
	return p, true
}

// nextIdentity is the push.Identity to write beside the template of hash
// in gw's ConfigMap, given that ConfigMap as last seen (prev), and whether
// its serial is a new one (then the write must carry prev's
// resourceVersion, and the template is pushed).
//
// The serial must only grow for a gateway UID, or pods refuse the pushes
// (409) and ignore the volume that lags them. The rule: the previous
// serial while the template is the same; otherwise the previous serial
// plus one, or the time in milliseconds when that is larger. Two things
// make it safe:
//   - prev is the latest: the ConfigMap is applied with prev's
//     resourceVersion as a precondition, so a pass that read a stale cache
//     (its own last write not seen yet, or a new leader's cache behind the
//     old leader's write) conflicts and is retried instead of handing out
//     a serial twice;
//   - a ConfigMap deleted by hand (or an identity lost while the push key
//     was gone) has no previous serial, but the pods still serve one: the
//     time, in milliseconds, is above every serial handed out before as
//     long as the gateway changed less than once per millisecond on
//     average, and the clocks of the replicas agree to within the time
//     since. In the usual case the time alone grows, and +1 keeps a burst
//     within one millisecond, or a leader whose clock is behind, strictly
//     increasing.
func nextIdentity(gw *v1.APIGateway, pub ed25519.PublicKey, prev configState, hash string, now time.Time) (push.Identity, bool) {
	id := push.Identity{Namespace: gw.Namespace, Name: gw.Name, UID: string(gw.UID), PublicKey: pub}
	if prev.hasSerial && prev.hash == hash {
		id.Serial = prev.serial
		return id, false
	}
	id.Serial = max(prev.serial+1, uint64(max(now.UnixMilli(), 0)))
	return id, true
}

// identityJSON is id as the ConfigMap holds it.
func identityJSON(id push.Identity) string {
	data, _ := json.Marshal(id) // strings, bytes and a number: cannot fail
	return string(data)
}

const (
	// pushTimeout bounds one push to one pod, answer included: the
	// reloader answers once nginx -t has passed and the new workers
	// serve, a fraction of a second; a pod slower than this is caught up
	// by its volume, or by the next attempt.
	pushTimeout = 5 * time.Second
	// pushAttempts bounds the tries of one pod for one serial: a pod
	// that restarts, is gone, or is busy with another push (429) is tried
	// again after pushBackoff, doubled each time (0.2, 0.4, 0.8 s), and
	// then left to its volume.
	pushAttempts = 4
	pushBackoff  = 200 * time.Millisecond
	// pushesInFlight bounds the pushes in flight, all gateways together,
	// and pushesPerGateway one gateway's share of them: a tenant whose
	// pods hang holds at most that many.
	pushesInFlight   = 32
	pushesPerGateway = 8
	// maxPushAnswer bounds what the operator reads of a pod's answer.
	maxPushAnswer = 16 << 10
)

// The results of pushing one serial to one pod, the pushes metric's
// label; each is final.
const (
	// pushLoaded: 200, the pod serves it.
	pushLoaded = "loaded"
	// pushRefused: 422, the image's nginx -t refused it; the pod serves
	// its previous configuration and reports the refusal on its status,
	// which the Live condition shows.
	pushRefused = "refused"
	// pushSuperseded: 409, the pod serves a newer serial already.
	pushSuperseded = "superseded"
	// pushNotAccepted: 403 or 404, the pod takes no push of this key for
	// this gateway (a volume without the identity yet, a key rotated
	// since, or a pod from before pushes): its volume catches up.
	pushNotAccepted = "not_accepted"
	// pushMalformed: 400, 413 or an answer no reloader gives: a bug,
	// left to the volume.
	pushMalformed = "malformed"
	// pushFailed: no answer, or only 429 or 5xx, in pushAttempts tries.
	pushFailed = "failed"
	// pushCanceled: a newer serial of the gateway, or the end of the
	// leadership, came first.
	pushCanceled = "canceled"
)

// classifyPush classifies one push attempt by the pod's status code (or
// the error that left none): the result, or retry.
func classifyPush(code int, err error) (result string, retry bool) {
	switch {
	case err != nil:
		return pushFailed, true
	case code == http.StatusOK:
		return pushLoaded, false
	case code == http.StatusUnprocessableEntity:
		return pushRefused, false
	case code == http.StatusConflict:
		return pushSuperseded, false
	case code == http.StatusForbidden, code == http.StatusNotFound:
		return pushNotAccepted, false
	case code == http.StatusTooManyRequests, code >= 500 && code <= 599:
		return pushFailed, true
	}
	return pushMalformed, false
}

// pusher sends signed templates to the gateways' pods off the reconcile
// workers: a reconcile hands it a serial's envelope and the ready pods,
// and returns. One job per gateway; a newer serial cancels the older
// job, whose pods would refuse it anyway.
type pusher struct {
	client *http.Client
	slots  chan struct{}
	base   context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
	log    logr.Logger
	// served is called for a gateway when one of its pods answered a
	// push with what it now serves or refused (the prober reads it).
	served func(client.ObjectKey)

	mu   sync.Mutex
	jobs map[client.ObjectKey]*pushJob
}

type pushJob struct {
	serial uint64
	cancel context.CancelFunc
}

func newPusher(c *http.Client, log logr.Logger, served func(client.ObjectKey)) *pusher {
	base, stop := context.WithCancel(context.Background())
	return &pusher{client: c, slots: make(chan struct{}, pushesInFlight), base: base, stop: stop, log: log,
		served: served, jobs: map[client.ObjectKey]*pushJob{}}
}

// Start runs until ctx ends, then cancels the pushes in flight and waits
// for them: a runnable of the leader-election group, as the reconciler.
func (p *pusher) Start(ctx context.Context) error {
	<-ctx.Done()
	p.stop()
	p.wg.Wait()
	return nil
}

// push sends envelope, of the given serial, to the pods at ips of gateway
// key, in the background.
func (p *pusher) push(key client.ObjectKey, serial uint64, envelope []byte, ips []string) {
	if len(ips) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.jobs[key]; old != nil {
		if old.serial >= serial {
			return
		}
		old.cancel()
	}
	ctx, cancel := context.WithCancel(p.base)
	job := &pushJob{serial: serial, cancel: cancel}
	p.jobs[key] = job
	p.wg.Go(func() {
		defer cancel()
		sem := make(chan struct{}, pushesPerGateway)
		var wg sync.WaitGroup
		for _, ip := range ips {
			wg.Go(func() {
				select {
				case sem <- struct{}{}:
					defer func() { <-sem }()
				case <-ctx.Done():
					pushes.WithLabelValues(pushCanceled).Inc()
					return
				}
				started := time.Now()
				result := p.pushPod(ctx, ip, envelope)
				pushes.WithLabelValues(result).Inc()
				p.log.V(1).Info("pushed", "gateway", key.String(), "serial", serial, "pod", ip, "result", result, "took", time.Since(started))
				if result == pushLoaded || result == pushRefused {
					p.served(key)
				}
			})
		}
		wg.Wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.jobs[key] == job {
			delete(p.jobs, key)
		}
	})
}

// pushPod pushes envelope to the pod at ip until a final answer, at most
// pushAttempts times.
func (p *pusher) pushPod(ctx context.Context, ip string, envelope []byte) string {
	wait := pushBackoff
	for attempt := 1; ; attempt++ {
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return pushCanceled
		}
		code, err := postPush(ctx, p.client, ip, envelope)
		<-p.slots
		if ctx.Err() != nil {
			return pushCanceled
		}
		result, retry := classifyPush(code, err)
		if !retry || attempt == pushAttempts {
			return result
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return pushCanceled
		}
		wait *= 2
	}
}

// postPush sends envelope to the reloader of the pod at ip and returns
// its status code; the answer itself is read (bounded) and dropped: what
// a pod serves reaches the status through the prober only.
func postPush(ctx context.Context, c *http.Client, ip string, envelope []byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	url := statusURL(ip, reloader.PushPath)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(envelope))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Read to the end (bounded) so the connection can be kept.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxPushAnswer))
	return resp.StatusCode, nil
}

// pendingPush is a new serial's envelope, to push once the ConfigMap
// that carries the serial is written.
type pendingPush struct {
	serial   uint64
	envelope []byte
}

// stampIdentity adds gw's push identity to cm, the desired ConfigMap
// named key, while pushes are on and the leader holds a key. With a new
// serial (nextIdentity) it makes the apply conditional on the
// resourceVersion the serial was computed from, and returns the push to
// send once the apply succeeds. Without a key cm carries no identity, and
// the apply removes the one the ConfigMap had: pods then refuse pushes
// and follow their volume.
func (r *Reconciler) stampIdentity(ctx context.Context, gw *v1.APIGateway, key client.ObjectKey, cm *corev1ac.ConfigMapApplyConfiguration) (*pendingPush, error) {
	if r.keys == nil {
		return nil, nil
	}
	priv := r.keys.current(ctx)
	if priv == nil {
		return nil, nil
	}
	prev, err := r.previousConfigMap(ctx, key)
	if err != nil {
		return nil, err
	}
	if prev != nil && checkControlled(prev, gw) != nil {
		// Someone else's: applyChild reports the name taken.
		return nil, nil
	}
	template := cm.Data[configKey]
	id, fresh := nextIdentity(gw, priv.Public().(ed25519.PublicKey), configStateOf(prev, string(gw.UID)), configHash(template), time.Now())
	cm.WithData(map[string]string{push.IdentityKey: identityJSON(id)})
	if !fresh {
		return nil, nil
	}
	if prev != nil {
		cm.WithResourceVersion(prev.ResourceVersion)
	}
	envelope, err := push.Sign(priv, push.Payload{Namespace: gw.Namespace, Name: gw.Name, UID: string(gw.UID), Serial: id.Serial, Template: []byte(template)})
	if err != nil {
		return nil, err
	}
	return &pendingPush{serial: id.Serial, envelope: envelope}, nil
}

// previousConfigMap is the ConfigMap named key as the cache has it (its
// data slimmed), or, when the cache has none, as the API server has it:
// a ConfigMap out of the cache (just created by the pass before, or its
// labels removed) still holds the serial to follow. Nil when none exists.
func (r *Reconciler) previousConfigMap(ctx context.Context, key client.ObjectKey) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := r.clients.cached.Get(ctx, key, cm)
	if apierrors.IsNotFound(err) {
		err = r.clients.live.Get(ctx, key, cm)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading ConfigMap %s: %w", key.Name, err)
	}
	return cm, nil
}

// sendPush hands a new serial's envelope to the pusher for the gateway's
// ready pods, when they run the reloader with the Reload strategy (with
// Rollout new pods start from the new ConfigMap instead).
func (r *Reconciler) sendPush(ctx context.Context, gw *v1.APIGateway, dep *appsv1.Deployment, hash string, next *pendingPush) {
	if next == nil || hash == "" || dep == nil || !hasReloader(dep) || strategy(gw) != v1.ConfigUpdateReload {
		return
	}
	var ips []string
	for _, t := range podTargets(r.gatewayPods(ctx, gw, dep), maxPodReports(gw)) {
		if t.ready {
			ips = append(ips, t.ip)
		}
	}
	r.pusher.push(client.ObjectKeyFromObject(gw), next.serial, next.envelope, ips)
}

// requeueAll reconciles every gateway again: their identities name the
// push key, which changed.
func (r *Reconciler) requeueAll(ctx context.Context) {
	var list v1.APIGatewayList
	if err := r.clients.cached.List(ctx, &list); err != nil {
		logf.FromContext(ctx).Error(err, "listing the gateways to write the new push key into")
		return
	}
	for i := range list.Items {
		if !requeueGateway(ctx, r.requeue, client.ObjectKeyFromObject(&list.Items[i])) {
			return
		}
	}
}

// requeueGateway hands the gateway named key to the reconciler through
// requeue (a channel source); false when ctx ended first.
func requeueGateway(ctx context.Context, requeue chan<- event.GenericEvent, key client.ObjectKey) bool {
	select {
	case requeue <- event.GenericEvent{Object: &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}:
		return true
	case <-ctx.Done():
		return false
	}
}
