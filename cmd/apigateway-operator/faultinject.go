//go:build faultinject

package main

import (
	"fmt"
	"os"
	"time"

	"k8s.io/utils/clock"
)

// Built only with -tags faultinject, for test/faults: a static Go binary
// reads the time through the vDSO, so neither LD_PRELOAD (faketime) nor a
// time namespace (which offsets only the monotonic clocks) can move its
// wall clock, and moving the machine's would move the API server's too.
// APIGATEWAY_FAULT_CLOCK_OFFSET (a Go duration, negative for behind) sets
// the clock the certificates are issued and rotated by, which the real API
// server then verifies by its own.
func init() {
	faultClock = func() (clock.WithTicker, error) {
		v := os.Getenv("APIGATEWAY_FAULT_CLOCK_OFFSET")
		if v == "" {
			return nil, nil
		}
		offset, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("APIGATEWAY_FAULT_CLOCK_OFFSET: %w", err)
		}
		return offsetClock{offset: offset}, nil
	}
}

// offsetClock is the real clock moved by offset; durations and timers are
// unchanged.
type offsetClock struct {
	clock.RealClock
	offset time.Duration
}

func (c offsetClock) Now() time.Time                  { return time.Now().Add(c.offset) }
func (c offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
