package main

import (
	"context"
	"fmt"
	"time"
)

const b1Creates = 1000

// benchB1 creates 1,000 gateways one after another through the API server
// with both admission webhooks, and the same with their configurations
// removed; each create's latency is what a user's kubectl apply waits.
func benchB1(ctx context.Context, h *harness) ([]row, error) {
	restore, err := h.removeWebhooks(ctx)
	if err != nil {
		return nil, err
	}
	off, err := h.timedCreates(ctx, "b1-off")
	if rerr := restore(ctx); err == nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	on, err := h.timedCreates(ctx, "b1-on")
	if err != nil {
		return nil, err
	}
	ratio := float64(on.percentile(0.5)) / float64(off.percentile(0.5))
	return []row{{
		ID:      "B1",
		What:    "1,000 sequential creates through the API server, with both admission webhooks vs without",
		Figures: fmt.Sprintf("with: %s; without: %s; p50 ratio %.2f", on, off, ratio),
		Target:  "p50 ratio ≤ 1.3",
		Met:     met(ratio <= 1.3),
	}}, nil
}

// timedCreates creates b1Creates two-route gateways in a new namespace ns
// and returns each create's latency.
func (h *harness) timedCreates(ctx context.Context, ns string) (latencies, error) {
	if err := h.namespace(ctx, ns); err != nil {
		return nil, err
	}
	out := make(latencies, 0, b1Creates)
	for i := range b1Creates {
		gw := benchGateway(ns, fmt.Sprintf("gw-%04d", i), fmt.Sprintf("/%s-%d-", ns, i), 2)
		t0 := time.Now()
		if err := h.client.Create(ctx, gw); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}
