package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/inflight"
	"example.com/apigateway-operator/test/ports"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

const (
	mutatePath   = webhooks.MutatePath
	validatePath = webhooks.ValidatePath
	b2Clients    = 32
	// b2Rounds is how many times each server is loaded, in turn.
	b2Rounds = 6
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
		mutate, err := testenv.AdmissionReview("b2", raw)
		if err != nil {
			return nil, err
		}
		defaulted, err := defaults.Defaulted(raw, defaults.Operator{Image: image, Replicas: 1}.Params(nil))
		if err != nil {
			return nil, err
		}
		validate, err := testenv.AdmissionReview("b2", defaulted)
		if err != nil {
			return nil, err
		}

		baseAddr, stopBase, err := startAllowAll(ctx, h)
		if err != nil {
			return nil, err
		}
		defer stopBase()

		l := b2Load{https: h.https, addrs: [2]string{h.addr, baseAddr}, mutate: mutate, validate: validate}
		// Warm both up (connections, caches), then measure.
		if _, err := l.alternate(ctx, 1, 2*time.Second, 0); err != nil {
			return nil, err
		}
		// Throughput: 32 clients, each sending as fast as it is answered.
		full, err := l.alternate(ctx, b2Rounds, duration, 0)
		if err != nil {
			return nil, err
		}
		real, base := full[0], full[1]
		ratio := real.rate() / base.rate()
		// Latency: at saturation it is 32 clients / throughput (queueing,
		// for the allow-all server too), so it is measured again with the
		// 32 clients offering half the allow-all server's throughput.
		offered := base.rate() / 2
		paced, err := l.alternate(ctx, b2Rounds/2, duration/2, offered)
		if err != nil {
			return nil, err
		}
		p99 := paced[0].lat.percentile(0.99)
		return []row{{
			ID:   "B2",
			What: "mutate+validate of a 10-route create, 32 keep-alive TLS clients, straight to the webhook server",
			Figures: fmt.Sprintf("saturated: %.0f reviews/s (%s) vs allow-all %.0f reviews/s (%s): ratio %.2f; "+
				"at %.0f reviews/s offered: %s vs allow-all %s",
				real.rate(), real.lat, base.rate(), base.lat, ratio, offered, paced[0].lat, paced[1].lat),
			Target: "ratio ≥ 0.8; p99 ≤ 5 ms (at the offered load)",
			Met:    met(ratio >= 0.8 && p99 <= 5*time.Millisecond),
		}}, nil
	}
}

// b2Load loads the operator's webhook server (addrs[0]) and the allow-all
// one (addrs[1]) with the same reviews.
type b2Load struct {
	https            *http.Client
	addrs            [2]string
	mutate, validate []byte
}

// alternate loads each server for d in all, in rounds that alternate which
// goes first, so that drift on a shared machine (another process, the GC
// of the one before) hits both; rate is the reviews per second offered
// (0: as many as the server answers). It returns what each server got.
func (l b2Load) alternate(ctx context.Context, rounds int, d time.Duration, rate float64) ([2]loadResult, error) {
	var out [2]loadResult
	for i := range rounds {
		for j := range 2 {
			server := (i + j) % 2
			got, err := load(ctx, l.https, l.addrs[server], l.mutate, l.validate, d/time.Duration(rounds), rate)
			if err != nil {
				return out, err
			}
			out[server].add(got)
		}
	}
	return out, nil
}

// startAllowAll serves allow-all admission handlers on a second webhook
// server configured like the operator's.
func startAllowAll(ctx context.Context, h *harness) (string, func(), error) {
	reserved, err := ports.Reserve()
	if err != nil {
		return "", nil, err
	}
	port := reserved.Number
	w := h.env.Webhooks
	srv := inflight.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: w.LocalServingCertDir,
		TLSOpts: []func(*tls.Config){http11}}, inflight.Limits{})
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
		_ = reserved.Release()
	}
	if err := waitServing(ctx, nil, srv); err != nil {
		stop()
		return "", nil, err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), stop, nil
}

// loadResult is what load phases measured: reviews, the time they took and
// each review's latency.
type loadResult struct {
	reviews int
	elapsed time.Duration
	lat     latencies
}

func (r *loadResult) rate() float64 { return float64(r.reviews) / r.elapsed.Seconds() }

func (r *loadResult) add(o loadResult) {
	r.reviews += o.reviews
	r.elapsed += o.elapsed
	r.lat = append(r.lat, o.lat...)
}

// load runs b2Clients clients, each sending mutate then validate to addr
// in a loop, for d. With rate > 0 the clients together send rate reviews
// per second on a fixed schedule (a client that falls behind sends at
// once). A review's latency counts from when it was sent: the clients share
// the process and its 2 CPUs with the server, and a timer's lateness there
// is the load generator's, not the server's.
func load(ctx context.Context, c *http.Client, addr string, mutate, validate []byte, d time.Duration, rate float64) (loadResult, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu    sync.Mutex
		all   latencies
		first error
		wg    sync.WaitGroup
	)
	t0 := time.Now()
	var interval time.Duration // between one client's reviews
	if rate > 0 {
		interval = time.Duration(float64(b2Clients) / rate * float64(time.Second))
	}
	for client := range b2Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine latencies
			var err error
			// Clients start spread over one interval.
			due := t0.Add(interval * time.Duration(client) / b2Clients)
			for ctx.Err() == nil && err == nil {
				for _, req := range []struct {
					path string
					body []byte
				}{{mutatePath, mutate}, {validatePath, validate}} {
					if interval > 0 {
						time.Sleep(time.Until(due))
						due = due.Add(interval)
					}
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
	return loadResult{reviews: len(all), elapsed: time.Since(t0), lat: all}, first
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
