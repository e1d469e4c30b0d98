package main

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"
)

// row is one line of the results table.
type row struct {
	ID, What, Figures, Target, Met string
}

// met renders whether a target was met.
func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func markdown(rows []row, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# apigateway-operator benchmarks\n\n%s, %d CPUs, %s; whole run %v.\n\n",
		runtime.Version(), runtime.NumCPU(), time.Now().UTC().Format(time.RFC3339), took.Round(time.Second))
	b.WriteString("| id | what | figures | target | met |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.ID, r.What, r.Figures, r.Target, r.Met)
	}
	return b.String()
}

// latencies summarizes request durations.
type latencies []time.Duration

func (l latencies) percentile(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := append(latencies(nil), l...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p * float64(len(s)-1))
	return s[i]
}

func (l latencies) String() string {
	return fmt.Sprintf("p50 %s, p99 %s", ms(l.percentile(0.5)), ms(l.percentile(0.99)))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
