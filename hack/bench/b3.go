package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/test/testenv"
)

const (
	b3Lists       = 5
	reviewObjects = 1000
)

// benchB3 lists the 10,000 gateways as v1alpha1, which the API server
// converts through the operator's conversion webhook, against listing them
// as v1 (stored, no conversion); and times one ConversionReview of 1,000.
func benchB3(ctx context.Context, h *harness) ([]row, error) {
	if err := h.ensureBig(ctx); err != nil {
		return nil, err
	}
	if err := h.enableConversionWebhook(ctx); err != nil {
		return nil, err
	}
	var alpha, hub latencies
	for range b3Lists {
		for _, c := range []struct {
			list client.ObjectList
			out  *latencies
		}{{&v1alpha1.APIGatewayList{}, &alpha}, {&v1.APIGatewayList{}, &hub}} {
			took, err := timedList(ctx, h.client, c.list, bigNamespace, 30*time.Second)
			if err != nil {
				return nil, err
			}
			*c.out = append(*c.out, took)
			if n := meta(c.list); n != bigCount {
				return nil, fmt.Errorf("listed %d gateways, want %d", n, bigCount)
			}
		}
	}
	perObject, err := h.conversionReviewCost(ctx)
	if err != nil {
		return nil, err
	}
	ratio := float64(alpha.percentile(0.5)) / float64(hub.percentile(0.5))
	return []row{{
		ID:   "B3",
		What: "LIST of 10,000 gateways as v1alpha1 (conversion webhook) vs as v1",
		Figures: fmt.Sprintf("v1alpha1 median %s, v1 median %s: ratio %.2f (%d lists each); one ConversionReview of 1,000: %.1f µs per object",
			ms(alpha.percentile(0.5)), ms(hub.percentile(0.5)), ratio, b3Lists, perObject),
		Target: "ratio ≤ 1.2",
		Met:    met(ratio <= 1.2),
	}}, nil
}

// timedList lists namespace ns and returns how long the successful list
// took. A CRD change makes the API server rebuild the resource's storage
// for a moment ("storage is (re)initializing"): such errors, and only
// those, are retried until timeout and not timed.
func timedList(ctx context.Context, c client.Client, list client.ObjectList, ns string, timeout time.Duration) (time.Duration, error) {
	var took time.Duration
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		t0 := time.Now()
		last = c.List(ctx, list, client.InNamespace(ns))
		took = time.Since(t0)
		if last != nil && !strings.Contains(last.Error(), "storage is (re)initializing") {
			return false, last
		}
		return last == nil, nil
	})
	if err != nil {
		return 0, fmt.Errorf("listing: %w (last error: %w)", err, last)
	}
	return took, nil
}

func meta(l client.ObjectList) int {
	switch l := l.(type) {
	case *v1alpha1.APIGatewayList:
		return len(l.Items)
	case *v1.APIGatewayList:
		return len(l.Items)
	}
	return -1
}

// enableConversionWebhook points the CRD's conversion at the operator's
// webhook server, as the kustomize patch does in a cluster, and waits
// until the API server converts through it.
func (h *harness) enableConversionWebhook(ctx context.Context) error {
	return h.pointConversion(ctx, h.addr, client.ObjectKey{Namespace: bigNamespace, Name: "gw-00000"})
}

// pointConversion points the CRD's conversion at the webhook server on
// addr and waits until the API server converts the one-route gateway
// probe through it.
func (h *harness) pointConversion(ctx context.Context, addr string, probe client.ObjectKey) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := h.client.Get(ctx, client.ObjectKey{Name: "apigateways.example.com"}, crd); err != nil {
		return err
	}
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{
				URL:      ptr.To("https://" + addr + "/convert"),
				CABundle: h.env.Webhooks.LocalServingCAData,
			},
		},
	}
	if err := h.client.Update(ctx, crd); err != nil {
		return err
	}
	// Without the webhook the API server only rewrites apiVersion, and a
	// v1alpha1 route has no prefix.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		gw := &v1alpha1.APIGateway{}
		if err := h.client.Get(ctx, probe, gw); err != nil {
			return false, nil
		}
		return len(gw.Spec.Routes) == 1 && gw.Spec.Routes[0].Prefix != "", nil
	})
}

// conversionReviewCost posts a ConversionReview of 1,000 v1 gateways to
// v1alpha1 straight to /convert a few times and returns the median cost
// per object in µs.
func (h *harness) conversionReviewCost(ctx context.Context) (float64, error) {
	list := &v1.APIGatewayList{}
	if err := h.client.List(ctx, list, client.InNamespace(bigNamespace), client.Limit(reviewObjects)); err != nil {
		return 0, err
	}
	objects := make([][]byte, len(list.Items))
	for i := range list.Items {
		gw := &list.Items[i]
		gw.APIVersion, gw.Kind = v1.GroupVersion.String(), "APIGateway"
		raw, err := json.Marshal(gw)
		if err != nil {
			return 0, err
		}
		objects[i] = raw
	}
	body, err := testenv.ConversionReview("b3", v1alpha1.GroupVersion.String(), objects...)
	if err != nil {
		return 0, err
	}
	var took latencies
	for range 5 {
		t0 := time.Now()
		res, err := h.https.Post("https://"+h.addr+"/convert", "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		out, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err != nil {
			return 0, err
		}
		took = append(took, time.Since(t0))
		if res.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"status":"Success"`)) {
			return 0, fmt.Errorf("conversion failed: HTTP %d: %.300s", res.StatusCode, out)
		}
	}
	return float64(took.percentile(0.5)) / 1e3 / float64(len(objects)), nil
}
