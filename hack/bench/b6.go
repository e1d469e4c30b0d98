package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

const (
	// b6Namespace holds the gateways of B6 and B7.
	b6Namespace = "b6"
	b6First     = 1000
	b6Second    = 5000
	// b6Target is the RSS slope B6 must stay under, in KiB per gateway:
	// 10,000 gateways in 250 MiB, so that they fit a limit of the
	// manifest's order with the webhook's in-flight bound on top.
	b6Target = 25.0
	// The settle before each RSS reading: until RSS has not fallen for
	// settleQuiet, at most settleCap.
	settleQuiet = 3 * time.Second
	settleCap   = 20 * time.Second
	// b6Wait bounds the wait for each batch to be reconciled: on a quiet
	// 2-core machine the operator reconciles some 50 gateways a second.
	b6Wait = 10 * time.Minute
)

// benchB6B7 runs the operator binary, with GOMEMLIMIT as the manifest
// sets it, and measures its RSS with b6First and b6Second gateways
// reconciled (B6, reported with withB6), writing its heap profile at each
// into heapProfiles when set; with withB7, it then grows the namespace to
// b7Gateways and sends B7's burst at the same process.
func benchB6B7(operator, heapProfiles string, withB6, withB7 bool) func(context.Context, *harness) ([]row, error) {
	return func(ctx context.Context, h *harness) ([]row, error) {
		mem, err := readManifestMemory(managerManifest)
		if err != nil {
			return nil, err
		}
		if err := h.namespace(ctx, b6Namespace); err != nil {
			return nil, err
		}
		proc, err := startOperator(ctx, h, operator, "GOMEMLIMIT="+strconv.FormatInt(mem.goMemLimit, 10))
		if err != nil {
			return nil, err
		}
		defer proc.stop()

		first, err := h.growTo(ctx, proc, 0, b6First, h.scaled(b6Wait), false)
		if err != nil {
			return nil, err
		}
		if err := proc.writeHeapProfile(ctx, heapProfiles, b6First); err != nil {
			return nil, err
		}
		second, err := h.growTo(ctx, proc, b6First, b6Second, h.scaled(b6Wait), false)
		if err != nil {
			return nil, err
		}
		if err := proc.writeHeapProfile(ctx, heapProfiles, b6Second); err != nil {
			return nil, err
		}
		var rows []row
		if withB6 {
			rows = append(rows, b6Row(first, second, mem))
		}
		if !withB7 {
			return rows, nil
		}
		b7, err := h.benchB7(ctx, proc, mem)
		if err != nil {
			return append(rows, row{ID: "B7", What: "error", Figures: err.Error(), Met: "error"}), nil
		}
		return append(rows, b7), nil
	}
}

// b6Row is B6's row: the RSS slope between two footprints.
func b6Row(first, second footprint, mem manifestMemory) row {
	added := float64(second.gateways - first.gateways)
	slope := float64(second.rssKB-first.rssKB) / added
	heapSlope := float64(second.heapBytes-first.heapBytes) / 1024 / added
	return row{
		ID: "B6",
		What: fmt.Sprintf("the operator's RSS per gateway: (RSS with %d gateways reconciled − RSS with %d) ÷ %d, idle and settled; "+
			"the operator binary in its own process, GOMEMLIMIT %s", second.gateways, first.gateways, second.gateways-first.gateways, mem.note),
		Figures: fmt.Sprintf("%.1f KiB per gateway; RSS %s with %d gateways (reconciled in %.0f s), %s with %d (%.0f s); peak RSS (VmHWM) %s; "+
			"live heap %.1f KiB per gateway (%s → %s, after a collection: load does not move it)",
			slope, mb(first.rssKB), first.gateways, first.took.Seconds(), mb(second.rssKB), second.gateways, second.took.Seconds(), mb(second.hwmKB),
			heapSlope, mb(first.heapBytes/1024), mb(second.heapBytes/1024)),
		Target: fmt.Sprintf("≤ %.0f KiB per gateway", b6Target),
		Met:    met(slope <= b6Target),
	}
}

// footprint is the operator's memory once a number of gateways exist, all
// reconciled.
type footprint struct {
	gateways     int           // in the cluster, any namespace
	reconciled   int           // of those in b6Namespace
	took         time.Duration // creating and reconciling the new ones
	rssKB, hwmKB int64
	heapBytes    int64 // live, after a collection
}

// growTo creates gateways from to to-1 in b6Namespace, waits up to wait
// until every one is reconciled, and reads the operator's settled RSS.
// With partial, running out of wait is no error: the footprint says how
// many were reconciled.
func (h *harness) growTo(ctx context.Context, proc *operatorProcess, from, to int, wait time.Duration, partial bool) (footprint, error) {
	t0 := time.Now()
	if err := h.createRange(ctx, b6Namespace, from, to, 16); err != nil {
		return footprint{}, err
	}
	reconciled, err := h.waitReconciled(ctx, b6Namespace, to, wait)
	if err != nil && (!partial || ctx.Err() != nil) {
		return footprint{}, fmt.Errorf("%w (operator log: %s)", err, proc.Log)
	}
	took := time.Since(t0)
	rss, err := proc.settledRSS(ctx)
	if err != nil {
		return footprint{}, err
	}
	// After RSS: the collection it forces frees what RSS was read with.
	heap, err := proc.liveHeap(ctx)
	if err != nil {
		return footprint{}, err
	}
	all := &v1.APIGatewayList{}
	if err := h.mgr.GetClient().List(ctx, all); err != nil {
		return footprint{}, err
	}
	hwm, err := proc.MemoryKiB("VmHWM")
	return footprint{gateways: len(all.Items), reconciled: reconciled, took: took, rssKB: rss, hwmKB: hwm, heapBytes: heap}, err
}

// writeHeapProfile writes the operator's heap profile, taken after a
// collection, to dir/B6-<gateways>.pprof; nothing without dir.
func (p *operatorProcess) writeHeapProfile(ctx context.Context, dir string, gateways int) error {
	if dir == "" {
		return nil
	}
	body, err := p.heapProfile(ctx, "")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("B6-%d.pprof", gateways)), body, 0o644)
}

// heapProfile is the operator's heap profile after a collection, with
// the query's extra parameters ("&debug=1" for text).
func (p *operatorProcess) heapProfile(ctx context.Context, extra string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.pprof+"/debug/pprof/heap?gc=1"+extra, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the operator's heap profile: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the operator's heap profile: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the operator's heap profile: %s", resp.Status)
	}
	return body, nil
}

// heapAlloc is the heap profile's line of runtime.MemStats.HeapAlloc.
var heapAlloc = regexp.MustCompile(`(?m)^# HeapAlloc = (\d+)$`)

// liveHeap is the operator's live heap in bytes: HeapAlloc just after a
// collection, which the heap profile's gc=1 runs first. Unlike RSS it
// does not depend on when the collector last ran or what the scavenger
// has returned, so it compares across machines and loads.
func (p *operatorProcess) liveHeap(ctx context.Context) (int64, error) {
	body, err := p.heapProfile(ctx, "&debug=1")
	if err != nil {
		return 0, err
	}
	m := heapAlloc.FindSubmatch(body)
	if m == nil {
		return 0, errors.New("the operator's heap profile has no HeapAlloc")
	}
	return strconv.ParseInt(string(m[1]), 10, 64)
}

// waitReconciled waits up to timeout until every one of count gateways in
// ns has a status for its generation, then until ns holds count of each
// child, and returns how many statuses are current. Unlike B5's
// waitAllReconciled it reads the statuses from the harness's cache and
// the children as metadata, every 2 s: listing thousands of whole objects
// every second would load the API server the operator is measured
// against.
func (h *harness) waitReconciled(ctx context.Context, ns string, count int, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	current, last, lastLog := 0, "nothing listed", time.Now()
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		done, n, progress, err := h.reconciled(ctx, ns, count)
		current, last = n, progress
		if time.Since(lastLog) > 15*time.Second {
			logf("%s: %s", ns, progress)
			lastLog = time.Now()
		}
		return done, err
	})
	if err != nil {
		return current, fmt.Errorf("not all reconciled within %v: %s: %w", timeout, last, err)
	}
	return current, nil
}

// reconciled reports whether count gateways of ns are reconciled, and how
// far they are.
func (h *harness) reconciled(ctx context.Context, ns string, count int) (bool, int, string, error) {
	gws := &v1.APIGatewayList{}
	if err := h.mgr.GetClient().List(ctx, gws, client.InNamespace(ns)); err != nil {
		return false, 0, "", err
	}
	current := 0
	for _, gw := range gws.Items {
		if gw.Status.ObservedGeneration == gw.Generation {
			current++
		}
	}
	if current < count {
		return false, current, fmt.Sprintf("%d of %d statuses current", current, count), nil
	}
	for _, kind := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMapList"}, {Group: "apps", Version: "v1", Kind: "DeploymentList"},
		{Version: "v1", Kind: "ServiceList"}, {Group: "networking.k8s.io", Version: "v1", Kind: "IngressList"},
	} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(kind)
		if err := h.client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, current, "", err
		}
		n := 0
		for _, item := range list.Items {
			if kind.Kind != "ConfigMapList" || strings.HasSuffix(item.Name, "-config") {
				n++
			}
		}
		if n < count {
			return false, current, fmt.Sprintf("%d of %d %s", n, count, kind.Kind), nil
		}
	}
	return true, current, "all reconciled", nil
}

// settledRSS waits until the process's RSS has not fallen for settleQuiet
// (the garbage collector and the scavenger return what reconciling left),
// at most settleCap, and returns it in kB.
func (p *operatorProcess) settledRSS(ctx context.Context) (int64, error) {
	lowest, err := p.MemoryKiB("VmRSS")
	if err != nil {
		return 0, err
	}
	start, fell := time.Now(), time.Now()
	for time.Since(fell) < settleQuiet && time.Since(start) < settleCap {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-p.Done():
			return 0, fmt.Errorf("the operator exited: %w (log: %s)", p.Err(), p.Log)
		case <-time.After(250 * time.Millisecond):
		}
		rss, err := p.MemoryKiB("VmRSS")
		if err != nil {
			return 0, err
		}
		if rss < lowest {
			lowest, fell = rss, time.Now()
		}
	}
	return lowest, nil
}

// mb renders kB (1024 bytes, as /proc counts) as MiB.
func mb(kB int64) string { return fmt.Sprintf("%.1f MiB", float64(kB)/1024) }
