package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/inflight"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

const image = "nginx:1.27"

// harness is the control plane, a fast client and the operator's webhooks
// running in a manager on the host and port the installed webhook
// configurations point at.
type harness struct {
	env    *testenv.Env
	config *rest.Config
	client client.Client
	mgr    manager.Manager
	// addr is the webhook server's host:port; https is a keep-alive client
	// that trusts it.
	addr   string
	https  *http.Client
	cancel context.CancelFunc
	done   chan error
	// scale is -budget-scale: a slower machine's waits inside a row grow
	// with the row's budget.
	scale float64
}

// scaled is d on this machine: d times -budget-scale.
func (h *harness) scaled(d time.Duration) time.Duration { return scaledBy(d, h.scale) }

// scaledBy is d times scale: a row's budget, or a wait inside it, on a
// machine -budget-scale times slower.
func scaledBy(d time.Duration, scale float64) time.Duration {
	return time.Duration(float64(d) * scale)
}

// fastConfig raises the client-side rate limits so they do not dominate.
func fastConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 5000, 10000
	cfg.UserAgent = "apigateway-operator-bench"
	return cfg
}

// http11 is the TLS setting main uses by default: no HTTP/2.
func http11(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }

func newHarness(ctx context.Context, env *testenv.Env, scale float64) (*harness, error) {
	cfg := fastConfig(env.Config)
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		return nil, err
	}
	w := env.Webhooks
	opts := env.ManagerOptions()
	opts.WebhookServer = inflight.NewServer(webhook.Options{
		Host: w.LocalServingHost, Port: w.LocalServingPort, CertDir: w.LocalServingCertDir,
		TLSOpts: []func(*tls.Config){http11},
	}, inflight.Limits{})
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := webhooks.SetupWithManager(mgr, webhooks.Options{DefaultImage: image, DefaultReplicas: 1}); err != nil {
		return nil, err
	}
	h := &harness{env: env, config: cfg, client: c, mgr: mgr, scale: scale,
		addr:  net.JoinHostPort(w.LocalServingHost, strconv.Itoa(w.LocalServingPort)),
		https: httpsClient(w.LocalServingCAData)}
	mctx, cancel := context.WithCancel(ctx)
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- mgr.Start(mctx) }()
	if err := waitServing(ctx, mgr.GetCache().WaitForCacheSync, mgr.GetWebhookServer()); err != nil {
		h.stop()
		return nil, err
	}
	return h, nil
}

func (h *harness) stop() {
	h.cancel()
	if err := <-h.done; err != nil {
		logf("the webhook manager stopped with an error: %v", err)
	}
}

// waitServing waits for synced caches (when synced is set) and a server
// that completes TLS handshakes.
func waitServing(ctx context.Context, synced func(context.Context) bool, srv webhook.Server) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if synced != nil && !synced(ctx) {
		return errors.New("caches did not sync within a minute")
	}
	started := srv.StartedChecker()
	return wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		return started(nil) == nil, nil
	})
}

// httpsClient keeps up to 64 connections alive to a server whose
// certificate is ca.
func httpsClient(ca []byte) *http.Client {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS13},
		MaxIdleConns:        128,
		MaxIdleConnsPerHost: 64,
	}}
}

// namespace creates a namespace named name.
func (h *harness) namespace(ctx context.Context, name string) error {
	return h.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// benchGateway is a complete gateway with n routes under prefix, on
// api.<ns>.example.com: a host belongs to the namespace that claimed it
// first, so each namespace has its own.
func benchGateway(ns, name, prefix string, n int) *v1.APIGateway {
	gw := &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.APIGatewaySpec{Image: image, Replicas: ptr.To[int32](1)},
	}
	for i := range n {
		gw.Spec.Routes = append(gw.Spec.Routes, v1.Route{Host: v1.Hostname("api." + ns + ".example.com"), Path: v1.HTTPPath(fmt.Sprintf("%s%d/", prefix, i)),
			PathType: v1.PathTypePrefix, BackendService: v1.BackendService{Name: v1.ServiceName(fmt.Sprintf("svc-%d", i)), Port: 8080}})
	}
	return gw
}

// createMany creates count one-route gateways in ns with workers
// concurrent clients; gateway i serves /<ns>-<i>/.
func (h *harness) createMany(ctx context.Context, ns string, count, workers int) error {
	return h.createRange(ctx, ns, 0, count, workers)
}

// createRange creates gateways from to to-1 of ns as createMany names them.
func (h *harness) createRange(ctx context.Context, ns string, from, to, workers int) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				gw := benchGateway(ns, fmt.Sprintf("gw-%05d", i), fmt.Sprintf("/%s-%d-", ns, i), 1)
				if err := h.client.Create(ctx, gw); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := from; i < to; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	return first
}
