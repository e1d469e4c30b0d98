package main

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

const b1Creates = 1000

// benchB1 creates 1,000 gateways one after another through the API server
// with both admission webhooks configured, and 1,000 with their
// configurations removed, in alternating rounds; each create's latency is what a user's kubectl
// apply waits. The defaults policy (manifests/policy) is installed on both
// sides, as the manifests install it. It runs twice: with complete objects,
// and with objects that leave spec.image and spec.replicas to be defaulted,
// which the policy does inside the API server, so the mutating webhook's
// matchConditions skip it and only the validating webhook is called (before
// the policy, B1d paid both webhooks' round trips).
func benchB1(ctx context.Context, h *harness) (_ []row, err error) {
	var on, off [2]latencies // by kind: complete, needing defaults
	// The operators of the rows after this one would reconcile these
	// gateways too.
	defer func() {
		if derr := h.deleteB1Gateways(context.WithoutCancel(ctx)); err == nil {
			err = derr
		}
	}()
	for round := range b1Rounds {
		// Alternate which goes first, so drift on a shared machine hits
		// both sides alike.
		for _, webhooks := range [][]bool{{false, true}, {true, false}}[round%2] {
			if err := h.b1Round(ctx, round, webhooks, &on, &off); err != nil {
				return nil, err
			}
		}
	}
	return []row{
		b1Row("B1", "complete objects (the mutating webhook's matchConditions skip it: one webhook call)", on[0], off[0]),
		b1Row("B1d", "objects without image and replicas (the defaults policy fills them; one webhook call)", on[1], off[1]),
	}, nil
}

// b1Rounds splits B1's creates into rounds, each with and without the
// webhooks.
const b1Rounds = 4

// b1Round times a round's creates of both kinds, with the webhook
// configurations in place or removed.
func (h *harness) b1Round(ctx context.Context, round int, webhooks bool, on, off *[2]latencies) (err error) {
	out, side := on, "on"
	if !webhooks {
		out, side = off, "off"
		restore, err := h.removeWebhooks(ctx)
		if err != nil {
			return err
		}
		defer func() {
			// Even when the row ran out of time: the next rows need them.
			if rerr := restore(context.WithoutCancel(ctx)); err == nil {
				err = rerr
			}
		}()
	}
	for kind, complete := range []bool{true, false} {
		ns := b1Namespace(side, kind, round)
		l, err := h.timedCreates(ctx, ns, complete, b1Creates/b1Rounds)
		if err != nil {
			return err
		}
		out[kind] = append(out[kind], l...)
	}
	return nil
}

func b1Row(id, what string, on, off latencies) row {
	ratio := float64(on.percentile(0.5)) / float64(off.percentile(0.5))
	return row{
		ID:      id,
		What:    "1,000 sequential creates through the API server with both admission webhooks configured vs none; " + what,
		Figures: fmt.Sprintf("with: %s; without: %s; p50 ratio %.2f", on, off, ratio),
		Target:  "p50 ratio ≤ 1.3",
		Met:     met(ratio <= 1.3),
	}
}

// timedCreates creates count two-route gateways in a new namespace ns,
// complete or for the mutating webhook to fill in, and returns each
// create's latency.
func (h *harness) timedCreates(ctx context.Context, ns string, complete bool, count int) (latencies, error) {
	if err := h.namespace(ctx, ns); err != nil {
		return nil, err
	}
	out := make(latencies, 0, count)
	for i := range count {
		gw := benchGateway(ns, fmt.Sprintf("gw-%04d", i), fmt.Sprintf("/%s-%d-", ns, i), 2)
		if !complete {
			gw.Spec.Image, gw.Spec.Replicas = "", nil
		}
		t0 := time.Now()
		if err := h.client.Create(ctx, gw); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

// b1Namespace holds the gateways of a round's creates of one kind, with
// the webhooks on or off (side).
func b1Namespace(side string, kind, round int) string {
	return fmt.Sprintf("b1-%s-%d-%d", side, kind, round)
}

// deleteB1Gateways deletes the gateways B1 created (nothing reconciles
// them, so nothing holds them back).
func (h *harness) deleteB1Gateways(ctx context.Context) error {
	for round := range b1Rounds {
		for _, side := range []string{"on", "off"} {
			for kind := range 2 {
				err := h.client.DeleteAllOf(ctx, &v1.APIGateway{}, client.InNamespace(b1Namespace(side, kind, round)))
				if err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
		}
	}
	return nil
}
