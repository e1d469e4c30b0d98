package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/webhooks"
)

const (
	mutatePath   = "/mutate-example-com-v1-apigateway"
	validatePath = "/validate-example-com-v1-apigateway"
	b2Clients    = 32
)

// benchB2 sends AdmissionReviews (a mutate then a validate of a 10-route
// create) from 32 keep-alive clients straight to the webhook server, then
// the same to an identical server whose handlers allow everything.
func benchB2(duration time.Duration) func(context.Context, *harness) ([]row, error) {
	return func(ctx context.Context, h *harness) ([]row, error) {
		if err := h.namespace(ctx, "b2"); err != nil {
			return nil, err
		}
		raw := benchGateway("b2", "gw", "/b2-", 10)
		raw.Spec.Image, raw.Spec.Replicas = "", nil // for the defaulter to fill in
		mutate, err := admissionReview(raw)
		if err != nil {
			return nil, err
		}
		defaulted := raw.DeepCopy()
		webhooks.Default(defaulted, webhooks.Defaults{Image: image, Replicas: 1})
		validate, err := admissionReview(defaulted)
		if err != nil {
			return nil, err
		}

		baseAddr, stopBase, err := startAllowAll(ctx, h)
		if err != nil {
			return nil, err
		}
		defer stopBase()

		// Warm both up (connections, caches), then measure each in turn.
		for _, addr := range []string{h.addr, baseAddr} {
			if _, err := load(ctx, h.https, addr, mutate, validate, time.Second); err != nil {
				return nil, err
			}
		}
		real, err := load(ctx, h.https, h.addr, mutate, validate, duration)
		if err != nil {
			return nil, err
		}
		base, err := load(ctx, h.https, baseAddr, mutate, validate, duration)
		if err != nil {
			return nil, err
		}
		ratio := real.rate / base.rate
		p99 := real.lat.percentile(0.99)
		return []row{{
			ID:   "B2",
			What: "mutate+validate of a 10-route create, 32 keep-alive TLS clients, straight to the webhook server",
			Figures: fmt.Sprintf("%.0f reviews/s (%s) vs allow-all %.0f reviews/s (%s): ratio %.2f",
				real.rate, real.lat, base.rate, base.lat, ratio),
			Target: "ratio ≥ 0.8; p99 ≤ 5 ms",
			Met:    met(ratio >= 0.8 && p99 <= 5*time.Millisecond),
		}}, nil
	}
}

// startAllowAll serves allow-all admission handlers on a second
// controller-runtime webhook server configured like the operator's.
func startAllowAll(ctx context.Context, h *harness) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	w := h.env.Webhooks
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: w.LocalServingCertDir,
		TLSOpts: []func(*tls.Config){http11}})
	allow := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })
	srv.Register(mutatePath, &admission.Webhook{Handler: allow})
	srv.Register(validatePath, &admission.Webhook{Handler: allow})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			logf("the allow-all server stopped with an error: %v", err)
		}
	}
	if err := waitServing(ctx, nil, srv); err != nil {
		stop()
		return "", nil, err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), stop, nil
}

// loadResult is what a load phase measured: reviews per second and each
// review's latency.
type loadResult struct {
	rate float64
	lat  latencies
}

// load runs b2Clients clients, each sending mutate then validate to addr
// in a loop, for d.
func load(ctx context.Context, c *http.Client, addr string, mutate, validate []byte, d time.Duration) (loadResult, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu    sync.Mutex
		all   latencies
		first error
		wg    sync.WaitGroup
	)
	t0 := time.Now()
	for range b2Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine latencies
			var err error
			for ctx.Err() == nil && err == nil {
				for _, req := range []struct {
					path string
					body []byte
				}{{mutatePath, mutate}, {validatePath, validate}} {
					start := time.Now()
					if err = review(c, "https://"+addr+req.path, req.body); err != nil {
						break
					}
					mine = append(mine, time.Since(start))
				}
			}
			mu.Lock()
			defer mu.Unlock()
			all = append(all, mine...)
			if first == nil && ctx.Err() == nil {
				first = err
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	return loadResult{rate: float64(len(all)) / elapsed.Seconds(), lat: all}, first
}

// review posts one AdmissionReview and checks it was allowed.
func review(c *http.Client, url string, body []byte) error {
	res, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"allowed":true`)) {
		return fmt.Errorf("%s: HTTP %d: %.300s", url, res.StatusCode, out)
	}
	return nil
}

// admissionReview is a create of gw as the API server sends it.
func admissionReview(gw *v1.APIGateway) ([]byte, error) {
	gw = gw.DeepCopy()
	gw.APIVersion, gw.Kind = v1.GroupVersion.String(), "APIGateway"
	raw, err := json.Marshal(gw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "b2",
			Kind:      metav1.GroupVersionKind{Group: v1.GroupVersion.Group, Version: "v1", Kind: "APIGateway"},
			Resource:  metav1.GroupVersionResource{Group: v1.GroupVersion.Group, Version: "v1", Resource: "apigateways"},
			Name:      gw.Name,
			Namespace: gw.Namespace,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		},
	})
}
