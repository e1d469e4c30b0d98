package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/apigateway-operator/test/flood"
	"example.com/apigateway-operator/test/testenv"
)

const (
	// b9Rounds alternate the flood on and off; each times b9PerRound
	// admissions.
	b9Rounds   = 4
	b9PerRound = 50
	// b9Target is the most p99 may grow under the flood.
	b9Target = 2.0
)

// benchB9 runs the operator binary against a control plane of its own
// whose API server presents a client certificate to the admission
// webhooks (as the README tells cluster admins to set up), and times
// ordinary admission through the API server, in rounds with and without
// the flood of test/flood (issue 23's attack, from 127.0.0.2): half the
// creates conflict with a route another gateway serves and must be
// refused, the other half must be admitted. A conflicting create that is
// admitted was not validated (the webhook failed, and the API server
// failed open): it counts as lost, as does any other error.
func benchB9(operator string) func(context.Context, *harness) ([]row, error) {
	return func(ctx context.Context, _ *harness) ([]row, error) {
		var clientCA string
		opts, err := flood.EnvOptions(&clientCA)
		if err != nil {
			return nil, err
		}
		env, err := testenv.Start(opts)
		if err != nil {
			return nil, err
		}
		defer func() { _ = env.Stop() }()
		logFile, err := filepath.Abs(filepath.Join("bin", "bench-b9-operator.log"))
		if err != nil {
			return nil, err
		}
		op, addr, err := flood.StartOperatorFor(ctx, env, operator, clientCA, logFile)
		if err != nil {
			return nil, err
		}
		defer func() { _ = op.Stop() }()
		c, err := client.New(fastConfig(env.Config), client.Options{Scheme: env.Scheme})
		if err != nil {
			return nil, err
		}
		b := &b9{ctx: ctx, c: c, addr: addr}
		if err := b.setUp(); err != nil {
			return nil, err
		}
		for round := range b9Rounds {
			for _, flooded := range [][]bool{{false, true}, {true, false}}[round%2] {
				if err := b.round(round, flooded); err != nil {
					return nil, fmt.Errorf("%w (operator log: %s)", err, op.Log)
				}
			}
		}
		hwm, _ := op.MemoryKiB("VmHWM")
		return []row{b.row(hwm, op.Exited())}, nil
	}
}

// b9 is B9's state.
type b9 struct {
	ctx  context.Context
	c    client.Client
	addr string
	ns   string

	with, without latencies
	lost          int
	lostWhy       error
	attack        flood.Stats
}

// setUp creates the namespace and the gateway whose route the
// conflicting creates repeat, and waits for the webhook to answer.
func (b *b9) setUp() error {
	b.ns = "b9"
	if err := b.c.Create(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b.ns}}); err != nil {
		return err
	}
	if err := b.c.Create(b.ctx, flood.Gateway(b.ns, "holder", "/held/")); err != nil {
		return err
	}
	return flood.WaitWebhooksAnswer(b.ctx, b.c, b.ns, "/held/")
}

// round times b9PerRound admissions, with the flood on when flooded.
func (b *b9) round(round int, flooded bool) error {
	out := &b.without
	if flooded {
		out = &b.with
		attack, err := startAttacker(b.ctx, b.addr)
		if err != nil {
			return err
		}
		defer func() {
			s, err := attack.stop()
			if err != nil {
				logf("B9: the attacker: %v", err)
			}
			b.attack.Opened += s.Opened
			b.attack.Closed += s.Closed
			b.attack.BodiesStarted += s.BodiesStarted
		}()
	}
	for i := range b9PerRound {
		name := fmt.Sprintf("r%d-%t-%d", round, flooded, i)
		conflict := i%2 == 0
		path := "/" + name + "/"
		if conflict {
			path = "/held/"
		}
		t0 := time.Now()
		err := b.c.Create(b.ctx, flood.Gateway(b.ns, name, path))
		*out = append(*out, time.Since(t0))
		if answered := (conflict && apierrors.IsInvalid(err)) || (!conflict && err == nil); !answered {
			b.lost++
			if err == nil {
				err = errors.New("a create whose route another gateway serves was admitted: the validating webhook was skipped")
			}
			b.lostWhy = err
		}
		if b.ctx.Err() != nil {
			return b.ctx.Err()
		}
	}
	return nil
}

// attacker is B9's attacker: this program run again with -flood-target,
// at the lowest CPU priority (nice 19), so that on a machine of two cores
// it does not simply take the CPU the API server and the operator need:
// in a cluster it runs on another node. What it costs the operator (TLS
// handshakes, reading what it sends) stays in the measurement.
type attacker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Scanner
}

// startAttacker starts the attacker against addr and waits (up to a
// minute) until it floods: every connection opened once, every slow
// body begun.
func startAttacker(ctx context.Context, addr string) (*attacker, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("nice", "-n", "19", self, "-flood-target", addr)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	a := &attacker{cmd: cmd, stdin: stdin, stdout: bufio.NewScanner(stdout)}
	ready := make(chan bool, 1)
	go func() { ready <- a.stdout.Scan() && a.stdout.Text() == attackerFlooding }()
	select {
	case ok := <-ready:
		if ok {
			return a, nil
		}
		err = errors.New("the attacker stopped before it flooded")
	case <-time.After(time.Minute):
		err = errors.New("the attacker did not flood within a minute")
	case <-ctx.Done():
		err = ctx.Err()
	}
	_, _ = a.stop()
	return nil, err
}

// stop ends the attack and returns what it did.
func (a *attacker) stop() (flood.Stats, error) {
	_ = a.stdin.Close()
	var s flood.Stats
	var err error
	if a.stdout.Scan() {
		err = json.Unmarshal(a.stdout.Bytes(), &s)
	}
	return s, errors.Join(err, a.cmd.Wait())
}

// attackerFlooding is what the attacker prints once it floods.
const attackerFlooding = "flooding"

// runAttacker is the attacker's process: test/flood's IssuePlan against
// addr from 127.0.0.2; it prints attackerFlooding once every connection
// has been opened and every slow body begun, and its stats as JSON when
// stdin closes, then ends the attack.
func runAttacker(addr string, stdin io.Reader, stdout io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	attack, err := flood.Start(ctx, flood.Target{Addr: addr, Source: "127.0.0.2"}, flood.IssuePlan)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(done)
	}()
	p := flood.IssuePlan
	for s := attack.Stats(); s.Opened < int64(p.Headers+p.Idle) || s.BodiesStarted < int64(p.LargeBodies+p.SmallBodies); s = attack.Stats() {
		select {
		case <-done:
			attack.Stop()
			return errors.New("stopped before it flooded")
		case <-time.After(100 * time.Millisecond):
		}
	}
	fmt.Fprintln(stdout, attackerFlooding)
	<-done
	attack.Stop()
	return json.NewEncoder(stdout).Encode(attack.Stats())
}

func (b *b9) row(hwmKiB int64, exited bool) row {
	ratio := float64(b.with.percentile(0.99)) / float64(b.without.percentile(0.99))
	figures := fmt.Sprintf("during the flood: %s; without: %s; p99 ratio %.2f; %d of %d lost; the attack opened %d connections, "+
		"the server closed %d; operator peak RSS %s",
		b.with, b.without, ratio, b.lost, len(b.with)+len(b.without), b.attack.Opened, b.attack.Closed, mb(hwmKiB))
	if b.lostWhy != nil {
		figures += fmt.Sprintf(" (last lost: %v)", b.lostWhy)
	}
	if exited {
		figures += "; the operator **exited**"
	}
	return row{
		ID: "B9",
		What: fmt.Sprintf("%d creates through the API server (half of them conflicting, which the validating webhook must refuse) "+
			"with and without issue 23's flood of the webhook port from another address (%d unfinished 1 MiB headers, %d idle "+
			"connections, %d slow /convert bodies; the attacker at nice 19, as if on another node), in alternating rounds; the "+
			"operator binary with client authentication and the manifest's memory limit", 2*b9Rounds*b9PerRound, flood.IssuePlan.Headers, flood.IssuePlan.Idle,
			flood.IssuePlan.LargeBodies+flood.IssuePlan.SmallBodies),
		Figures: figures,
		Target:  fmt.Sprintf("p99 ratio ≤ %.0f; 0 lost", b9Target),
		Met:     met(ratio <= b9Target && b.lost == 0 && !exited),
	}
}
