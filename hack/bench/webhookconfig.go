package main

import (
	"context"
	"fmt"
	"os"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }

// removeWebhooks deletes the admission webhook configurations, waits until
// the API server stops calling them, and returns a function that puts them
// back and waits until it calls them again.
func (h *harness) removeWebhooks(ctx context.Context) (func(context.Context) error, error) {
	var (
		mutating   admissionregistrationv1.MutatingWebhookConfigurationList
		validating admissionregistrationv1.ValidatingWebhookConfigurationList
	)
	if err := h.client.List(ctx, &mutating); err != nil {
		return nil, err
	}
	if err := h.client.List(ctx, &validating); err != nil {
		return nil, err
	}
	var saved []client.Object
	for i := range mutating.Items {
		saved = append(saved, &mutating.Items[i])
	}
	for i := range validating.Items {
		saved = append(saved, &validating.Items[i])
	}
	for _, o := range saved {
		if err := h.client.Delete(ctx, o); err != nil {
			return nil, err
		}
	}
	if err := h.waitWebhooks(ctx, false); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		for _, o := range saved {
			o.SetResourceVersion("")
			o.SetUID("")
			if err := h.client.Create(ctx, o); err != nil {
				return err
			}
		}
		return h.waitWebhooks(ctx, true)
	}, nil
}

const probeNamespace = "probe"

// waitWebhooks waits until the API server calls the admission webhooks
// (active) or not. It probes with a dry-run create of a route another
// gateway serves, which only the validating webhook refuses. The mutating
// webhook needs no probe: the defaults policy, installed throughout, fills
// in every default first, so its matchConditions skip it either way.
func (h *harness) waitWebhooks(ctx context.Context, active bool) error {
	if err := h.namespace(ctx, probeNamespace); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	holder := benchGateway(probeNamespace, "holder", "/probe-", 1)
	if err := h.client.Create(ctx, holder); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := h.waitCached(ctx, probeNamespace, 1); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		conflict := benchGateway(probeNamespace, "conflict", "/probe-", 1)
		err := h.client.Create(ctx, conflict, client.DryRunAll)
		validated := apierrors.IsInvalid(err)
		if err != nil && !validated {
			return false, err
		}
		return validated == active, nil
	})
}
