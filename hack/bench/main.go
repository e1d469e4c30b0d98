// Command bench runs the operator's benchmarks (`make bench`) against a
// local control plane started by test/testenv: every figure that is a
// goal is a ratio against a baseline measured in the same run. It prints a
// table and writes it as Markdown. Everything talks to 127.0.0.1 only and
// stops by itself.
//
//	go run ./hack/bench -out bin/bench.md [-rows B1,B1t,B2,B3,B4,B5,B6,B7,B8,B9]
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
	rows := flag.String("rows", "B1,B1t,B2,B3,B4,B5,B6,B7,B8,B9", "the rows to run, comma-separated")
	profiles := flag.String("cpuprofile", "", "a directory to write each row's CPU profile to (<id>.pprof)")
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

	err := run(context.Background(), config{out: *out, profiles: *profiles, rows: strings.Split(*rows, ","), duration: *duration,
		operator: *operator, scale: *scale})
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// config is what the flags chose.
type config struct {
	out, profiles, operator string
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
	run    func(context.Context, *harness) ([]row, error)
}

// steps are the rows in the order they run: the cheap ratio rows first,
// so that a slow machine reports them whatever the long ones do. The order
// keeps rows independent too: the operators of B5, B6 and B7 run before
// the 10,000 gateways of B4 and B3 exist (an operator reconciles every
// gateway of the cluster), B1 deletes its gateways before they start,
// and B9 runs on a control plane of its own. B6 and B7 share one operator
// process and B6's gateways, which B7 grows to 10,000. The budgets are
// some twice what each took on the 2-core development machine.
func steps(c config, want map[string]bool) []step {
	return []step{
		{[]string{"B2"}, 2 * time.Minute, benchB2(c.duration)},
		{[]string{"B1"}, 4 * time.Minute, benchB1},
		{[]string{"B1t"}, 6 * time.Minute, benchB1t},
		{[]string{"B9"}, 4 * time.Minute, benchB9(c.operator)},
		{[]string{"B8"}, 4 * time.Minute, benchB8(c.operator)},
		{[]string{"B5"}, 4 * time.Minute, benchB5(c.operator)},
		{[]string{"B6", "B7"}, 14 * time.Minute, benchB6B7(c.operator, want["B6"], want["B7"])},
		{[]string{"B4"}, 3 * time.Minute, benchB4},
		{[]string{"B3"}, 3 * time.Minute, benchB3},
	}
}

func run(ctx context.Context, c config) error {
	start := time.Now()
	env, err := testenv.Start(testenv.Options{
		Webhooks:              envtest.WebhookInstallOptions{Paths: []string{filepath.Join("manifests", "webhook")}},
		ServiceClusterIPRange: "10.0.0.0/16",
		// As the manifests install it: the API server fills in defaults
		// itself, with or without the webhooks (B1d).
		Policies: defaults.Operator{Image: image, Replicas: 1}.PolicyData(),
	})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	h, err := newHarness(ctx, env)
	if err != nil {
		return err
	}
	defer h.stop()

	want := map[string]bool{}
	for _, r := range c.rows {
		want[strings.TrimSpace(r)] = true
	}
	var table []row
	for _, st := range steps(c, want) {
		if !slices.ContainsFunc(st.ids, func(id string) bool { return want[id] }) {
			continue
		}
		id := strings.Join(st.ids, "+")
		budget := time.Duration(float64(st.budget) * c.scale)
		fmt.Fprintf(os.Stderr, "bench: running %s (budget %v)\n", id, budget)
		t0 := time.Now()
		stopProfile, err := startProfile(c.profiles, id)
		if err != nil {
			return err
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
		table = append(table, rs...)
	}
	md := markdown(table, time.Since(start))
	fmt.Print(md)
	if err := os.MkdirAll(filepath.Dir(c.out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(c.out, []byte(md), 0o644)
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
