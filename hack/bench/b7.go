package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

const (
	// managerManifest is the operator's Deployment, whose memory limit B7
	// measures against.
	managerManifest = "manifests/manager/deployment.yaml"
	b7Gateways      = 10000
	b7BigReviews    = 4
	b7ReviewBytes   = 32 << 20
	// b7Expanding is how many reviews of each webhook, of b7ExpandingBytes
	// of "{}" routes, the burst sends too: JSON that decodes into a hundred
	// times its size, which held about 1.4 GiB per 4 MiB conversion review
	// before the budget charged what a request decodes into.
	b7Expanding      = 2
	b7ExpandingBytes = 3 << 20
	// goMemLimitShare is the GOMEMLIMIT the bench gives the operator, as a
	// share of the manifest's memory limit, when the manifest sets none.
	goMemLimitShare = 0.9
	// b7ProbeEvery is how often each kind of small request is sent during
	// the burst.
	b7ProbeEvery = 50 * time.Millisecond
	b7Wait       = 3 * time.Minute
)

// manifestMemory is the memory the manifest gives the operator.
type manifestMemory struct {
	limit      int64  // the manager container's limits.memory, in bytes
	goMemLimit int64  // the GOMEMLIMIT the operator runs with under it
	note       string // where goMemLimit comes from, for the rows
}

// readManifestMemory reads the manager container's memory limit and
// GOMEMLIMIT from the Deployment at path: GOMEMLIMIT as the manifest sets
// it (a value, or limits.memory through a resourceFieldRef), else
// goMemLimitShare of the limit.
func readManifestMemory(path string) (manifestMemory, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return manifestMemory{}, err
	}
	dep := &appsv1.Deployment{}
	if err := yaml.Unmarshal(data, dep); err != nil {
		return manifestMemory{}, fmt.Errorf("%s: %w", path, err)
	}
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name != "manager" {
			continue
		}
		quantity := c.Resources.Limits.Memory()
		limit := quantity.Value()
		if limit <= 0 {
			return manifestMemory{}, fmt.Errorf("%s: the manager container has no memory limit", path)
		}
		mem := manifestMemory{limit: limit}
		for _, e := range c.Env {
			if e.Name != "GOMEMLIMIT" {
				continue
			}
			if ref := e.ValueFrom; ref != nil && ref.ResourceFieldRef != nil && ref.ResourceFieldRef.Resource == "limits.memory" {
				divisor := max(ref.ResourceFieldRef.Divisor.Value(), 1)
				mem.goMemLimit = (limit + divisor - 1) / divisor // as the kubelet rounds it
				mem.note = fmt.Sprintf("%s (the manifest's, from limits.memory)", mib(mem.goMemLimit))
				return mem, nil
			}
			if mem.goMemLimit, err = parseGoMemLimit(e.Value); err != nil {
				return manifestMemory{}, fmt.Errorf("%s: GOMEMLIMIT: %w", path, err)
			}
			mem.note = fmt.Sprintf("%s (the manifest's %q)", mib(mem.goMemLimit), e.Value)
			return mem, nil
		}
		mem.goMemLimit = int64(float64(limit) * goMemLimitShare)
		mem.note = fmt.Sprintf("%s: %.0f%% of the manifest's %s limit, which sets no GOMEMLIMIT", mib(mem.goMemLimit), goMemLimitShare*100, quantity)
		return mem, nil
	}
	return manifestMemory{}, fmt.Errorf("%s: no container named manager", path)
}

// parseGoMemLimit reads a GOMEMLIMIT as the Go runtime does: bytes, with
// an optional B, KiB, MiB, GiB or TiB suffix, or off.
func parseGoMemLimit(s string) (int64, error) {
	if s == "off" {
		return math.MaxInt64, nil
	}
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
	shift := uint(0)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, shift = rest, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("not a byte count: %q", s)
	}
	return n << shift, nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// benchB7 grows b6Namespace to b7Gateways, points the CRD's conversion at
// the operator, and then sends at once b7BigReviews ConversionReviews of
// b7ReviewBytes straight to its /convert and a LIST of every gateway as
// v1alpha1 through the API server, while small requests (a one-object
// ConversionReview, a small AdmissionReview) keep arriving. It reports the
// operator's peak RSS during the burst against the manifest's limit.
func (h *harness) benchB7(ctx context.Context, proc *operatorProcess, mem manifestMemory) (row, error) {
	// The burst is B7's subject, not reconciling: when the operator cannot
	// reconcile every gateway within b7Wait (an operator whose caches
	// outgrow GOMEMLIMIT spends its CPU collecting garbage), the burst
	// comes anyway and the row says how many were reconciled.
	idle, err := h.growTo(ctx, proc, b6Second, b7Gateways, h.scaled(b7Wait), true)
	if err != nil {
		return row{}, err
	}
	restore, err := h.saveConversion(ctx)
	if err != nil {
		return row{}, err
	}
	defer func() {
		if err := restore(context.WithoutCancel(ctx)); err != nil {
			logf("B7: restoring the CRD's conversion: %v", err)
		}
	}()
	if err := h.pointConversion(ctx, proc.webhook, client.ObjectKey{Namespace: b6Namespace, Name: "gw-00000"}); err != nil {
		return row{}, err
	}
	// The CRD change restarted the operator's watches: let what its
	// informers' relists allocated settle before the burst.
	if _, err := proc.settledRSS(ctx); err != nil {
		return row{}, err
	}
	bodies, err := h.b7Bodies(ctx)
	if err != nil {
		return row{}, err
	}

	resetHWM := proc.resetPeak() == nil
	out := h.burst(ctx, proc, bodies)
	peakKB := out.sampledPeakKB
	if resetHWM {
		if hwm, err := proc.MemoryKiB("VmHWM"); err == nil {
			peakKB = max(peakKB, hwm)
		}
	}
	alive := !proc.Exited()
	peak := peakKB << 10
	listed := fmt.Sprintf("%d gateways in %.1f s", out.listed, out.listTook.Seconds())
	if out.listErr != nil {
		listed = "failed: " + out.listErr.Error()
	}
	listed += fmt.Sprintf(" (a review of about %s)", mib(bodies.listReview))
	refusedExpanding := true
	for _, code := range out.expanding {
		refusedExpanding = refusedExpanding && (code == http.StatusRequestEntityTooLarge || code == http.StatusTooManyRequests)
	}
	ok := alive && peak < mem.limit && out.listErr == nil && out.listed == b7Gateways && refusedExpanding &&
		out.conversion.refused == 0 && out.admission.refused == 0 && out.conversion.answered > 0 && out.admission.answered > 0
	return row{
		ID: "B7",
		What: fmt.Sprintf("%d ConversionReviews of %d MiB straight to the operator's /convert, %d hostile reviews of %d MiB that decode "+
			"into a hundred times their size, and a LIST of %d gateways as v1alpha1 (converted by the operator) at once, small requests "+
			"meanwhile; GOMEMLIMIT %s, the default in-flight bound from it",
			b7BigReviews, b7ReviewBytes>>20, 2*b7Expanding, b7ExpandingBytes>>20, b7Gateways, mem.note),
		Figures: fmt.Sprintf("peak RSS %s of the manifest's %s limit (%.0f%%; before the burst, with %d gateways, %d of %d in %s reconciled: %s), operator %s; "+
			"the %d large reviews: %s; %d reviews of %d MiB of \"{}\" routes (half conversion, half admission): %s; the LIST: %s; small requests answered during the burst: conversion %d of %d, admission %d of %d",
			mib(peak), mib(mem.limit), 100*float64(peak)/float64(mem.limit), idle.gateways, idle.reconciled, b7Gateways, b6Namespace,
			mb(idle.rssKB), aliveText(alive),
			b7BigReviews, statusCounts(out.big), 2*b7Expanding, b7ExpandingBytes>>20, statusCounts(out.expanding), listed,
			out.conversion.answered, out.conversion.sent(), out.admission.answered, out.admission.sent()),
		Target: "peak RSS under the limit, not killed, the LIST succeeds, every small request answered, the hostile reviews refused",
		Met:    met(ok),
	}, nil
}

func aliveText(alive bool) string {
	if alive {
		return "alive"
	}
	return "**exited**"
}

// b7Payloads are the bodies B7 sends.
type b7Payloads struct {
	big, smallConversion, smallAdmission []byte
	// expandingConversion and expandingAdmission are reviews of a gateway
	// of b7ExpandingBytes of "{}" routes.
	expandingConversion, expandingAdmission []byte
	// listReview is about the size of the ConversionReview the API server
	// sends for the LIST: b7Gateways objects as big holds them.
	listReview int64
}

// b7Bodies builds a ConversionReview of b7ReviewBytes of gateways as the
// API server stores them (to v1alpha1), one of a single gateway, and an
// AdmissionReview of a one-route create.
func (h *harness) b7Bodies(ctx context.Context) (b7Payloads, error) {
	list := &v1.APIGatewayList{}
	if err := h.client.List(ctx, list, client.InNamespace(b6Namespace), client.Limit(reviewObjects)); err != nil {
		return b7Payloads{}, err
	}
	var objects [][]byte
	size := 0
	for i := 0; size < b7ReviewBytes; i++ {
		gw := &list.Items[i%len(list.Items)]
		gw.APIVersion, gw.Kind = v1.GroupVersion.String(), "APIGateway"
		raw, err := json.Marshal(gw)
		if err != nil {
			return b7Payloads{}, err
		}
		objects = append(objects, raw)
		size += len(raw) + 1
	}
	big, err := testenv.ConversionReview("b7-big", v1alpha1.GroupVersion.String(), objects...)
	if err != nil {
		return b7Payloads{}, err
	}
	small, err := testenv.ConversionReview("b7-small", v1alpha1.GroupVersion.String(), objects[0])
	if err != nil {
		return b7Payloads{}, err
	}
	admission, err := testenv.AdmissionReview("b7-admission", benchGateway(b6Namespace, "b7-probe", "/b7-probe-", 1))
	if err != nil {
		return b7Payloads{}, err
	}
	expanding := []byte(`{"apiVersion":"example.com/v1","kind":"APIGateway","metadata":{"name":"b7-expanding","namespace":"` + b6Namespace +
		`"},"spec":{"routes":[` + strings.TrimSuffix(strings.Repeat("{},", b7ExpandingBytes/3), ",") + `]}}`)
	expandingConversion, err := testenv.ConversionReview("b7-expanding", v1alpha1.GroupVersion.String(), expanding)
	if err != nil {
		return b7Payloads{}, err
	}
	expandingAdmission, err := json.Marshal(map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid": "b7-expanding", "operation": "CREATE", "name": "b7-expanding", "namespace": b6Namespace,
			"kind":     map[string]string{"group": v1.GroupVersion.Group, "version": v1.GroupVersion.Version, "kind": "APIGateway"},
			"resource": map[string]string{"group": v1.GroupVersion.Group, "version": v1.GroupVersion.Version, "resource": "apigateways"},
			"object":   json.RawMessage(expanding),
		},
	})
	return b7Payloads{big: big, smallConversion: small, smallAdmission: admission,
		expandingConversion: expandingConversion, expandingAdmission: expandingAdmission,
		listReview: int64(size) * b7Gateways / int64(len(objects))}, err
}

// b7Outcome is what the burst saw.
type b7Outcome struct {
	sampledPeakKB         int64
	big                   []int // the large reviews' HTTP statuses (0: no answer)
	expanding             []int // the expanding reviews' HTTP statuses
	listed                int
	listTook              time.Duration
	listErr               error
	conversion, admission probeCount
}

// statusCounts says how many of codes were each HTTP status.
func statusCounts(statuses []int) string {
	counts := map[int]int{}
	for _, code := range statuses {
		counts[code]++
	}
	codes := make([]int, 0, len(counts))
	for code := range counts {
		codes = append(codes, code)
	}
	sort.Ints(codes)
	var parts []string
	for _, code := range codes {
		name := http.StatusText(code)
		if code == 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%d × %d %s", counts[code], code, name))
	}
	return strings.Join(parts, ", ")
}

// probeCount counts the small requests of one kind.
type probeCount struct {
	answered, refused int
	firstRefusal      string
}

func (c probeCount) sent() int { return c.answered + c.refused }

// burst sends the large reviews and the LIST at once and, until they are
// all answered, the small requests every b7ProbeEvery, sampling the
// operator's RSS every 10 ms.
func (h *harness) burst(ctx context.Context, proc *operatorProcess, bodies b7Payloads) b7Outcome {
	var out b7Outcome
	url := "https://" + proc.webhook
	stopSampling := make(chan struct{})
	sampled := make(chan int64)
	go func() {
		peak := int64(0)
		for {
			if rss, err := proc.MemoryKiB("VmRSS"); err == nil {
				peak = max(peak, rss)
			}
			select {
			case <-stopSampling:
				sampled <- peak
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()

	probeCtx, stopProbes := context.WithCancel(ctx)
	var probes sync.WaitGroup
	probes.Go(func() {
		out.conversion = probe(probeCtx, h.https, url+webhooks.ConvertPath, bodies.smallConversion, `"status":"Success"`)
	})
	probes.Go(func() {
		out.admission = probe(probeCtx, h.https, url+webhooks.ValidatePath, bodies.smallAdmission, `"allowed":true`)
	})

	var wg sync.WaitGroup
	out.big = make([]int, b7BigReviews)
	for i := range out.big {
		wg.Go(func() { out.big[i] = postStatus(ctx, h.https, url+webhooks.ConvertPath, bodies.big) })
	}
	out.expanding = make([]int, 2*b7Expanding)
	for i := range b7Expanding {
		wg.Go(func() {
			out.expanding[2*i] = postStatus(ctx, h.https, url+webhooks.ConvertPath, bodies.expandingConversion)
		})
		wg.Go(func() {
			out.expanding[2*i+1] = postStatus(ctx, h.https, url+webhooks.ValidatePath, bodies.expandingAdmission)
		})
	}
	wg.Go(func() {
		list := &v1alpha1.APIGatewayList{}
		// Longer than the API server's 30 s for a conversion call: what
		// fails the LIST is then the API server's answer, not the bench's.
		out.listTook, out.listErr = timedList(ctx, h.client, list, b6Namespace, 2*time.Minute)
		out.listed = len(list.Items)
	})
	wg.Wait()
	stopProbes()
	probes.Wait()
	close(stopSampling)
	out.sampledPeakKB = <-sampled
	return out
}

// probe POSTs body to url every b7ProbeEvery until ctx ends and counts the
// answers that are 200 and contain want.
func probe(ctx context.Context, c *http.Client, url string, body []byte, want string) probeCount {
	var count probeCount
	tick := time.NewTicker(b7ProbeEvery)
	defer tick.Stop()
	for {
		code, answer, err := post(ctx, c, url, body)
		switch {
		case ctx.Err() != nil:
			return count // cut off by the end of the burst: not counted
		case err == nil && code == http.StatusOK && bytes.Contains(answer, []byte(want)):
			count.answered++
		default:
			count.refused++
			if count.firstRefusal == "" {
				count.firstRefusal = fmt.Sprintf("HTTP %d %v %.200s", code, err, answer)
				logf("B7: a small request to %s was refused: %s", url, count.firstRefusal)
			}
		}
		select {
		case <-ctx.Done():
			return count
		case <-tick.C:
		}
	}
}

// postStatus POSTs body to url and returns the answer's status, 0 when
// there was none.
func postStatus(ctx context.Context, c *http.Client, url string, body []byte) int {
	code, _, err := post(ctx, c, url, body)
	if err != nil {
		logf("B7: POST %s: %v", url, err)
	}
	return code
}

// post POSTs a JSON body to url and returns the answer.
func post(ctx context.Context, c *http.Client, url string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(res.Body)
	return res.StatusCode, answer, err
}

// resetPeak resets the process's VmHWM to its current RSS (Linux 4.0+).
func (p *operatorProcess) resetPeak() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.Pid()), []byte("5"), 0)
}

// saveConversion returns a function that puts the CRD's conversion back
// as it is now.
func (h *harness) saveConversion(ctx context.Context) (func(context.Context) error, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	key := client.ObjectKey{Name: "apigateways.example.com"}
	if err := h.client.Get(ctx, key, crd); err != nil {
		return nil, err
	}
	saved := crd.Spec.Conversion.DeepCopy()
	return func(ctx context.Context) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := h.client.Get(ctx, key, crd); err != nil {
				return err
			}
			crd.Spec.Conversion = saved
			return h.client.Update(ctx, crd)
		})
	}, nil
}
