package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
)

const (
	// b5Gateways Services need as many ClusterIPs: main starts the
	// control plane with a /16 Service range for them.
	b5Gateways = 1000
	b5Idle     = 30 * time.Second
)

// benchB5 creates b5Gateways gateways at once and times the reconciler (in a
// manager of its own, as main builds it) until every one has its four
// children and a status for its current generation; then counts the
// operator's writes in a 30 s idle window.
func benchB5(ctx context.Context, h *harness) ([]row, error) {
	var writes atomic.Int64
	cfg := rest.CopyConfig(h.config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return writeCounter{rt, &writes} }
	opts := h.env.ManagerOptions()
	opts.WebhookServer = webhook.NewServer(webhook.Options{Port: -1})
	opts.Cache = controller.CacheOptions()
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := controller.SetupWithManager(mgr, controller.Options{DefaultImage: image, MaxConcurrentReconciles: 4}); err != nil {
		return nil, err
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			logf("the operator stopped with an error: %v", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("operator caches did not sync")
	}
	if err := h.namespace(ctx, "b5"); err != nil {
		return nil, err
	}
	rssBefore := procStatus("VmRSS")

	t0 := time.Now()
	if err := h.createMany(ctx, "b5", b5Gateways, 16); err != nil {
		return nil, err
	}
	if err := h.waitAllReconciled(ctx, "b5", b5Gateways); err != nil {
		return nil, err
	}
	took := time.Since(t0)

	idleFrom := writes.Load()
	idle := time.NewTimer(b5Idle)
	select {
	case <-idle.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	idleWrites := writes.Load() - idleFrom
	return []row{{
		ID:   "B5",
		What: fmt.Sprintf("%d gateways created at once until all have four children and a current observedGeneration", b5Gateways),
		Figures: fmt.Sprintf("%.1f s (%.0f gateways/s); %d writes in a 30 s idle window; bench process RSS %s before, peak %s (operator in-process beside the webhooks and the load generator)",
			took.Seconds(), b5Gateways/took.Seconds(), idleWrites, rssBefore, procStatus("VmHWM")),
		Target: "wall time reported; 0 idle writes; peak RSS reported",
		Met:    met(idleWrites == 0),
	}}, nil
}

// waitAllReconciled waits (up to 5 minutes) until ns holds count of each
// child and every gateway's status describes its generation. On timeout
// the error says how far it got.
func (h *harness) waitAllReconciled(ctx context.Context, ns string, count int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	last, lastLog := "nothing listed", time.Now()
	progress := func(s string) {
		last = s
		if time.Since(lastLog) > 10*time.Second {
			logf("B5: %s", s)
			lastLog = time.Now()
		}
	}
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		in := client.InNamespace(ns)
		for _, l := range []client.ObjectList{&corev1.ConfigMapList{}, &appsv1.DeploymentList{}, &corev1.ServiceList{}, &networkingv1.IngressList{}} {
			if err := h.client.List(ctx, l, in); err != nil {
				return false, err
			}
			if n := meta2(l); n < count {
				progress(fmt.Sprintf("%d of %d %T", n, count, l))
				return false, nil
			}
		}
		gws := &v1.APIGatewayList{}
		if err := h.client.List(ctx, gws, in); err != nil {
			return false, err
		}
		current := 0
		for _, gw := range gws.Items {
			if gw.Status.ObservedGeneration == gw.Generation {
				current++
			}
		}
		progress(fmt.Sprintf("%d of %d statuses current", current, count))
		return current >= count, nil
	})
	if err != nil {
		return fmt.Errorf("not all reconciled within 5 minutes: %s: %w", last, err)
	}
	return nil
}

func meta2(l client.ObjectList) int {
	switch l := l.(type) {
	case *corev1.ConfigMapList:
		n := 0
		for _, cm := range l.Items {
			if strings.HasSuffix(cm.Name, "-config") {
				n++
			}
		}
		return n
	case *appsv1.DeploymentList:
		return len(l.Items)
	case *corev1.ServiceList:
		return len(l.Items)
	case *networkingv1.IngressList:
		return len(l.Items)
	}
	return -1
}

// writeCounter counts the requests that are not reads.
type writeCounter struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (w writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		w.n.Add(1)
	}
	return w.next.RoundTrip(req)
}

// procStatus is a field of /proc/self/status (VmRSS, VmHWM).
func procStatus(field string) string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
