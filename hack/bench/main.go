// Command bench runs the operator's benchmarks (`make bench`) against a
// local control plane started by test/testenv: every figure that is a
// goal is a ratio against a baseline measured in the same run. It prints a
// table and writes it as Markdown. Everything talks to 127.0.0.1 only and
// stops by itself.
//
//	go run ./hack/bench -out bin/bench.md [-rows B1,B1t,B2,B3,B4,B5,B6,B7,B8,B9,B10,B11]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/test/testenv"
)

func main() {
	out := flag.String("out", filepath.Join("bin", "bench.md"), "where to write the table as Markdown")
	rows := flag.String("rows", "B1,B1t,B2,B3,B4,B5,B6,B7,B8,B9,B10,B11", "the rows to run, comma-separated")
	profiles := flag.String("cpuprofile", "", "a directory to write each row's CPU profile to (<id>.pprof)")
	heapProfiles := flag.String("heapprofile", "", "a directory to write the operator's heap profile to at each of B6's readings (B6-<gateways>.pprof, after a collection; go tool pprof -base compares two)")
	operator := flag.String("operator", filepath.Join("bin", "apigateway-operator"), "the operator binary B5, B6, B7, B8 and B9 run (make build)")
	duration := flag.Duration("duration", 6*time.Second, "how long B2 loads each server, in rounds")
	scale := flag.Float64("budget-scale", 1, "multiplies each row's time budget (a slower machine)")
	floodTarget := flag.String("flood-target", "", "run B9's attacker (test/flood) against this host:port until stdin closes, and nothing else")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	if *floodTarget != "" {
		if err := runAttacker(*floodTarget, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "bench: attacker: %v\n", err)
			os.Exit(1)
		}
		return
	}

	err := run(context.Background(), config{out: *out, profiles: *profiles, heapProfiles: *heapProfiles, rows: strings.Split(*rows, ","),
		duration: *duration, operator: *operator, scale: *scale})
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// config is what the flags chose.
type config struct {
	out, profiles, operator string
	heapProfiles            string // -heapprofile
	rows                    []string
	duration                time.Duration
	scale                   float64 // of each row's budget
}

// step runs rows that share their setup, within a time budget of their
// own: a row that runs out of it reports the error, and the next row
// still gets all of its own.
type step struct {
	ids    []string
	budget time.Duration
	// alone is a step that starts the control plane it needs itself (B9),
	// or needs none (B10):
	// it gets no harness.
	alone bool
	run   func(context.Context, *harness) ([]row, error)
}

// steps are the rows in the order they run: the cheap ratio rows first,
// so that a slow machine reports them whatever the long ones do. Each step
// runs on a control plane of its own, started before its budget and
// stopped after it, so no row meets what an earlier one left behind (B6
// and B7's 20,000 gateways and the API server still busy with them once
// took B3 over its budget, though alone it needs a sixth of it). Rows of
// one step share their setup on purpose: B6 and B7 one operator process
// and B6's gateways, which B7 grows to 10,000. The budgets are some twice
// what each took on the 2-core development machine.
func steps(c config, want map[string]bool) []step {
	return []step{
		{ids: []string{"B2"}, budget: 2 * time.Minute, run: benchB2(c.duration)},
		{ids: []string{"B1"}, budget: 4 * time.Minute, run: benchB1},
		{ids: []string{"B1t"}, budget: 6 * time.Minute, run: benchB1t},
		{ids: []string{"B9"}, budget: 4 * time.Minute, alone: true, run: benchB9(c.operator)},
		{ids: []string{"B8"}, budget: 4 * time.Minute, run: benchB8(c.operator)},
		{ids: []string{"B10"}, budget: 4 * time.Minute, alone: true, run: benchB10(c.scale)},
		{ids: []string{"B11"}, budget: 2 * time.Minute, alone: true, run: benchB11(c.scale)},
		{ids: []string{"B5"}, budget: 4 * time.Minute, run: benchB5(c.operator)},
		{ids: []string{"B6", "B7"}, budget: 14 * time.Minute, run: benchB6B7(c.operator, c.heapProfiles, want["B6"], want["B7"])},
		{ids: []string{"B4"}, budget: 3 * time.Minute, run: benchB4},
		{ids: []string{"B3"}, budget: 3 * time.Minute, run: benchB3},
	}
}

func run(ctx context.Context, c config) error {
	start := time.Now()
	want := map[string]bool{}
	for _, r := range c.rows {
		want[strings.TrimSpace(r)] = true
	}
	var table []row
	for _, st := range steps(c, want) {
		if !slices.ContainsFunc(st.ids, func(id string) bool { return want[id] }) {
			continue
		}
		rs, err := runStep(ctx, c, st)
		if err != nil {
			return err
		}
		table = append(table, rs...)
	}
	md := markdown(table, time.Since(start))
	fmt.Print(md)
	if err := os.MkdirAll(filepath.Dir(c.out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(c.out, []byte(md), 0o644)
}

// runStep runs st on a fresh control plane (unless it starts its own)
// within its budget, and stops the control plane after it. A row that
// fails is an error row; the error returned is the harness's.
func runStep(ctx context.Context, c config, st step) ([]row, error) {
	id := strings.Join(st.ids, "+")
	var h *harness
	if !st.alone {
		var stop func()
		var err error
		if h, stop, err = startHarness(ctx, c.scale); err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		defer stop()
	}
	budget := scaledBy(st.budget, c.scale)
	fmt.Fprintf(os.Stderr, "bench: running %s (budget %v)\n", id, budget)
	t0 := time.Now()
	stopProfile, err := startProfile(c.profiles, id)
	if err != nil {
		return nil, err
	}
	stepCtx, cancel := context.WithTimeout(ctx, budget)
	rs, err := st.run(stepCtx, h)
	cancel()
	stopProfile()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: the row's budget of %v ran out (-budget-scale gives a slower machine more)", err, budget)
		}
		rs = append(rs, row{ID: id, What: "error", Figures: err.Error(), Met: "error"})
	}
	fmt.Fprintf(os.Stderr, "bench: %s took %v\n", id, time.Since(t0).Round(time.Second))
	return rs, nil
}

// startHarness starts a control plane with the webhook configurations and
// the admission policies the manifests install, and the harness on it;
// stop stops both.
func startHarness(ctx context.Context, scale float64) (h *harness, stop func(), err error) {
	env, err := testenv.Start(testenv.Options{
		Webhooks:              envtest.WebhookInstallOptions{Paths: []string{filepath.Join("manifests", "webhook")}},
		ServiceClusterIPRange: "10.0.0.0/16",
		// As the manifests install it: the API server fills in defaults
		// itself, with or without the webhooks (B1d).
		Policies: defaults.Operator{Image: image, Replicas: 1}.PolicyData(),
	})
	if err != nil {
		return nil, nil, err
	}
	if h, err = newHarness(ctx, env, scale); err != nil {
		return nil, nil, errors.Join(err, env.Stop())
	}
	return h, func() {
		h.stop()
		if err := env.Stop(); err != nil {
			logf("stopping the control plane: %v", err)
		}
	}, nil
}

// startProfile writes a CPU profile of the whole process (operator,
// webhooks and load generator alike) to dir/id.pprof until the returned
// function is called; it does nothing when dir is empty.
func startProfile(dir, id string) (func(), error) {
	if dir == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, id+".pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
