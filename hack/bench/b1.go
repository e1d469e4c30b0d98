package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation/validationtest"
)

// b1Creates is how many creates B1 and B1d time on each side, and
// b1tCreates B1t's: a 100-route gateway with every setting took the API
// server some 90 times as long to check and store as B1's (p50 0.4-0.5 s
// without the webhooks on the loaded development machine), so 1,000 would
// not fit the row's budget.
const b1Creates, b1tCreates = 1000, 200

// b1Kind is one kind of B1's creates: the row it reports, how many
// creates each side makes, and the gateway create i in namespace ns makes.
type b1Kind struct {
	id, what string
	creates  int
	gateway  func(ns string, i int) *v1.APIGateway
}

// b1Kinds are the rows of benchB1, and b1Traffic benchB1t's: complete
// two-route gateways; the same leaving spec.image and spec.replicas to be
// defaulted, which the defaults policy does inside the API server, so the
// mutating webhook's matchConditions skip it and only the validating
// webhook is called (before the policy, B1d paid both webhooks' round
// trips); and complete 100-route gateways with every traffic setting on
// every route, whose validation renders (or bounds) an nginx configuration
// of some 190 KB.
var (
	b1Kinds = []b1Kind{
		{"B1", "complete objects (the mutating webhook's matchConditions skip it: one webhook call)", b1Creates, func(ns string, i int) *v1.APIGateway {
			return benchGateway(ns, fmt.Sprintf("gw-%04d", i), fmt.Sprintf("/%s-%d-", ns, i), 2)
		}},
		{"B1d", "objects without image and replicas (the defaults policy fills them; one webhook call)", b1Creates, func(ns string, i int) *v1.APIGateway {
			gw := benchGateway(ns, fmt.Sprintf("gw-%04d", i), fmt.Sprintf("/%s-%d-", ns, i), 2)
			gw.Spec.Image, gw.Spec.Replicas = "", nil
			return gw
		}},
	}
	b1Traffic = []b1Kind{
		{"B1t", "complete 100-route objects, every route with every traffic setting (a weighted canary and a drained backend, timeouts, a rewrite, request and response headers set, added and removed, a body limit, a rate limit; about 67 KB of JSON each, some 200 KB of nginx configuration)",
			b1tCreates, func(ns string, i int) *v1.APIGateway {
				gw := benchGateway(ns, fmt.Sprintf("gw-%04d", i), fmt.Sprintf("/%s-%d-", ns, i), 100)
				for r := range gw.Spec.Routes {
					gw.Spec.Routes[r] = validationtest.EverySetting(gw.Spec.Routes[r])
				}
				return gw
			}},
	}
)

// benchB1 creates 1,000 gateways of each of b1Kinds one after another
// through the API server with both admission webhooks configured, and
// 1,000 with their configurations removed, in alternating rounds; each
// create's latency is what a user's kubectl apply waits. The defaults
// policy (manifests/policy) is installed on both sides, as the manifests
// install it.
func benchB1(ctx context.Context, h *harness) ([]row, error) { return h.b1Rows(ctx, b1Kinds) }

// benchB1t is B1 with b1Traffic's gateways, 200 creates a side.
func benchB1t(ctx context.Context, h *harness) ([]row, error) { return h.b1Rows(ctx, b1Traffic) }

// b1Rows times the creates of each kind with the webhooks and as many
// without, and reports a row per kind.
func (h *harness) b1Rows(ctx context.Context, kinds []b1Kind) (_ []row, err error) {
	on, off := make([]latencies, len(kinds)), make([]latencies, len(kinds))
	// The operators of the rows after this one would reconcile these
	// gateways too.
	defer func() {
		if derr := h.deleteB1Gateways(context.WithoutCancel(ctx), kinds); err == nil {
			err = derr
		}
	}()
	for round := range b1Rounds {
		// Alternate which goes first, so drift on a shared machine hits
		// both sides alike.
		for _, webhooks := range [][]bool{{false, true}, {true, false}}[round%2] {
			if err := h.b1Round(ctx, round, webhooks, kinds, on, off); err != nil {
				return nil, err
			}
		}
	}
	rows := make([]row, len(kinds))
	for k, kind := range kinds {
		rows[k] = b1Row(kind, on[k], off[k])
	}
	return rows, nil
}

// b1Rounds splits B1's creates into rounds, each with and without the
// webhooks.
const b1Rounds = 4

// b1Round times a round's creates of every kind, with the webhook
// configurations in place or removed.
func (h *harness) b1Round(ctx context.Context, round int, webhooks bool, kinds []b1Kind, on, off []latencies) (err error) {
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
	for k, kind := range kinds {
		l, err := h.timedCreates(ctx, b1Namespace(kind, side, round), kind.gateway, kind.creates/b1Rounds)
		if err != nil {
			return err
		}
		out[k] = append(out[k], l...)
	}
	return nil
}

func b1Row(kind b1Kind, on, off latencies) row {
	ratio := float64(on.percentile(0.5)) / float64(off.percentile(0.5))
	return row{
		ID:      kind.id,
		What:    fmt.Sprintf("%d sequential creates through the API server with both admission webhooks configured vs none; %s", kind.creates, kind.what),
		Figures: fmt.Sprintf("with: %s; without: %s; p50 ratio %.2f", on, off, ratio),
		Target:  "p50 ratio ≤ 1.3",
		Met:     met(ratio <= 1.3),
	}
}

// timedCreates creates count gateways in a new namespace ns, the i-th
// made by gateway(ns, i), and returns each create's latency.
func (h *harness) timedCreates(ctx context.Context, ns string, gateway func(ns string, i int) *v1.APIGateway, count int) (latencies, error) {
	if err := h.namespace(ctx, ns); err != nil {
		return nil, err
	}
	out := make(latencies, 0, count)
	for i := range count {
		gw := gateway(ns, i)
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
func b1Namespace(kind b1Kind, side string, round int) string {
	return fmt.Sprintf("%s-%s-%d", strings.ToLower(kind.id), side, round)
}

// deleteB1Gateways deletes the gateways b1Rows created of kinds (nothing
// reconciles them, so nothing holds them back).
func (h *harness) deleteB1Gateways(ctx context.Context, kinds []b1Kind) error {
	for round := range b1Rounds {
		for _, side := range []string{"on", "off"} {
			for _, kind := range kinds {
				err := h.client.DeleteAllOf(ctx, &v1.APIGateway{}, client.InNamespace(b1Namespace(kind, side, round)))
				if err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
		}
	}
	return nil
}
