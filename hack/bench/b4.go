package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/routeindex"
	"example.com/apigateway-operator/webhooks"
)

const (
	// bigNamespace holds 10,000 gateways for B4 and B3.
	bigNamespace = "big"
	bigCount     = 10000
	smallCount   = 10
	b4Calls      = 200
	b4Rounds     = 10
)

// benchB4 times the validating webhook's check of a 10-route create, with
// the operator's real cache and host+path index, in a namespace of 10,000
// gateways against one of 10.
func benchB4(ctx context.Context, h *harness) ([]row, error) {
	if err := h.ensureBig(ctx); err != nil {
		return nil, err
	}
	if err := h.namespace(ctx, "small"); err != nil {
		return nil, err
	}
	if err := h.createMany(ctx, "small", smallCount, 4); err != nil {
		return nil, err
	}
	if err := h.waitCached(ctx, "small", smallCount); err != nil {
		return nil, err
	}
	gateways, err := routeindex.Index(ctx, h.mgr.GetCache())
	if err != nil {
		return nil, err
	}
	validator := &webhooks.Validator{Gateways: gateways}
	// Alternate the two in rounds, so drift on a shared machine hits both.
	var small, big latencies
	for range b4Rounds {
		for _, c := range []struct {
			ns  string
			out *latencies
		}{{"small", &small}, {bigNamespace, &big}} {
			gw := benchGateway(c.ns, "new", "/new-", 10)
			for range b4Calls {
				t0 := time.Now()
				if _, err := validator.ValidateCreate(ctx, gw); err != nil {
					return nil, fmt.Errorf("validating in %s: %w", c.ns, err)
				}
				*c.out = append(*c.out, time.Since(t0))
			}
		}
	}
	ratio := float64(big.percentile(0.5)) / float64(small.percentile(0.5))
	return []row{{
		ID:   "B4",
		What: "validation of a 10-route create (real cache and index), namespace of 10,000 gateways vs 10",
		Figures: fmt.Sprintf("10,000: %s; 10: %s; p50 ratio %.2f (%d calls each)",
			micro(big), micro(small), ratio, len(big)),
		Target: "ratio ≤ 1.2",
		Met:    met(ratio <= 1.2),
	}}, nil
}

func micro(l latencies) string {
	return fmt.Sprintf("p50 %.1f µs, p99 %.1f µs", float64(l.percentile(0.5))/1e3, float64(l.percentile(0.99))/1e3)
}

// ensureBig creates the 10,000 gateways of bigNamespace once, with the
// admission webhooks out of the way (they are B1's subject, not this).
func (h *harness) ensureBig(ctx context.Context) error {
	list := &v1.APIGatewayList{}
	if err := h.client.List(ctx, list, client.InNamespace(bigNamespace), client.Limit(1)); err != nil {
		return err
	}
	if len(list.Items) == 0 {
		if err := h.namespace(ctx, bigNamespace); err != nil {
			return err
		}
		restore, err := h.removeWebhooks(ctx)
		if err != nil {
			return err
		}
		t0 := time.Now()
		err = h.createMany(ctx, bigNamespace, bigCount, 16)
		if rerr := restore(ctx); err == nil {
			err = rerr
		}
		if err != nil {
			return err
		}
		logf("created %d gateways in %v", bigCount, time.Since(t0).Round(time.Second))
	}
	return h.waitCached(ctx, bigNamespace, bigCount)
}

// waitCached waits until the operator's cache holds count gateways in ns.
func (h *harness) waitCached(ctx context.Context, ns string, count int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list := &v1.APIGatewayList{}
		if err := h.mgr.GetClient().List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(list.Items) >= count, nil
	})
}
