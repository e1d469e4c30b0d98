// Command bench runs the operator's benchmarks (`make bench`) against a
// local control plane started by test/testenv: every figure that is a
// goal is a ratio against a baseline measured in the same run. It prints a
// table and writes it as Markdown. Everything talks to 127.0.0.1 only and
// stops by itself.
//
//	go run ./hack/bench -out bin/bench.md [-rows B1,B2,B3,B4,B5,B6,B7]
package main

import (
	"context"
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
	rows := flag.String("rows", "B1,B2,B3,B4,B5,B6,B7", "the rows to run, comma-separated")
	profiles := flag.String("cpuprofile", "", "a directory to write each row's CPU profile to (<id>.pprof)")
	operator := flag.String("operator", filepath.Join("bin", "apigateway-operator"), "the operator binary B5, B6 and B7 run (make build)")
	duration := flag.Duration("duration", 6*time.Second, "how long B2 loads each server, in rounds")
	// The whole run must stay under make bench's 15 minutes.
	timeout := flag.Duration("timeout", 14*time.Minute, "how long the whole run may take")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	err := run(ctx, config{out: *out, profiles: *profiles, rows: strings.Split(*rows, ","), duration: *duration, operator: *operator})
	cancel()
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
	// The order keeps rows independent: the operators of B5, B6 and B7
	// run before the 10,000 gateways of B4 and B3 exist (an operator
	// reconciles every gateway of the cluster), and B1 runs before they
	// load the API server. B6 and B7 share one operator process and
	// B6's gateways, which B7 grows to 10,000.
	steps := []struct {
		ids []string
		run func(context.Context, *harness) ([]row, error)
	}{
		{[]string{"B2"}, benchB2(c.duration)}, {[]string{"B5"}, benchB5(c.operator)},
		{[]string{"B6", "B7"}, benchB6B7(c.operator, want["B6"], want["B7"])},
		{[]string{"B1"}, benchB1}, {[]string{"B4"}, benchB4}, {[]string{"B3"}, benchB3},
	}
	for _, s := range steps {
		if !slices.ContainsFunc(s.ids, func(id string) bool { return want[id] }) {
			continue
		}
		id := strings.Join(s.ids, "+")
		fmt.Fprintf(os.Stderr, "bench: running %s\n", id)
		t0 := time.Now()
		stopProfile, err := startProfile(c.profiles, id)
		if err != nil {
			return err
		}
		rs, err := s.run(ctx, h)
		stopProfile()
		if err != nil {
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
