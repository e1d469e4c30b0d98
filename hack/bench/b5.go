package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/flood"
	"example.com/apigateway-operator/test/ports"
)

const (
	// b5Gateways Services need as many ClusterIPs: main starts the
	// control plane with a /16 Service range for them.
	b5Gateways = 1000
	b5Idle     = 30 * time.Second
)

// benchB5 runs the operator binary as its own process, as a cluster runs
// it, creates b5Gateways gateways at once and times it until every one has
// its four children and a status for its current generation. Then it counts,
// at the API server, the writes to the kinds the operator writes during a
// 30 s idle window, and reads the operator's peak RSS and CPU time.
func benchB5(operator string) func(context.Context, *harness) ([]row, error) {
	return func(ctx context.Context, h *harness) ([]row, error) {
		if err := h.namespace(ctx, "b5"); err != nil {
			return nil, err
		}
		proc, err := startOperator(ctx, h, operator)
		if err != nil {
			return nil, err
		}
		defer proc.stop()
		rssBefore := proc.status("VmRSS")

		t0 := time.Now()
		if err := h.createMany(ctx, "b5", b5Gateways, 16); err != nil {
			return nil, err
		}
		if err := h.waitAllReconciled(ctx, "b5", b5Gateways); err != nil {
			return nil, fmt.Errorf("%w (operator log: %s)", err, proc.Log)
		}
		took := time.Since(t0)
		cpu := proc.cpu()

		idleFrom, err := h.writes(ctx)
		if err != nil {
			return nil, err
		}
		select {
		case <-time.After(b5Idle):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		idleTo, err := h.writes(ctx)
		if err != nil {
			return nil, err
		}
		idleWrites := idleTo - idleFrom
		if err := h.checkWriteCount(ctx, idleTo); err != nil {
			return nil, err
		}
		return []row{{
			ID:   "B5",
			What: fmt.Sprintf("%d gateways created at once until all have four children and a current observedGeneration (the operator binary in its own process)", b5Gateways),
			Figures: fmt.Sprintf("%.1f s (%.0f gateways/s), operator CPU %.1f s; %.0f writes to APIGateways and their children's kinds in a 30 s idle window (counted by the API server); operator RSS %s when ready, peak %s",
				took.Seconds(), b5Gateways/took.Seconds(), cpu.Seconds(), idleWrites, rssBefore, proc.status("VmHWM")),
			Target: "wall time reported; 0 idle writes; peak RSS reported",
			Met:    met(idleWrites == 0),
		}}, nil
	}
}

// operatorProcess is the operator binary running under the bench, with
// the host:port of its webhook server and of its Go profiles (pprof).
type operatorProcess struct {
	*flood.Operator
	webhook, pprof string
}

// startOperator starts the operator with the certificate of the envtest
// webhook configurations (files mode: nothing injected, no bundle checks),
// no leader election, no metrics endpoint, its Go profiles on loopback,
// and env (NAME=value) added to the bench's environment, and waits until
// it is ready. Its log goes to bin/bench-operator.log.
func startOperator(ctx context.Context, h *harness, binary string, env ...string) (*operatorProcess, error) {
	// Reserved (test/ports) until the operator exits, so that no other
	// process takes them before it binds them.
	reserved, err := reserve(3)
	if err != nil {
		return nil, err
	}
	webhookPort, probePort, pprofPort := reserved[0], reserved[1], reserved[2]
	release := func() error {
		return errors.Join(webhookPort.Release(), probePort.Release(), pprofPort.Release())
	}
	probe := probePort.Addr()
	logPath, err := filepath.Abs(filepath.Join("bin", "bench-operator.log"))
	if err != nil {
		return nil, err
	}
	op, err := flood.StartOperator(ctx, binary, []string{
		"--kubeconfig=" + h.env.Kubeconfig,
		"--cert-mode=files", "--cert-dir=" + h.env.Webhooks.LocalServingCertDir,
		"--cert-mutating-webhook-configuration=", "--cert-validating-webhook-configuration=", "--cert-crd=",
		"--webhook-port=" + strconv.Itoa(webhookPort.Number), "--metrics-bind-address=0", "--health-probe-bind-address=" + probe,
		"--leader-elect=false", "--default-gateway-image=" + image, "--max-concurrent-reconciles=4",
		"--pprof-bind-address=" + pprofPort.Addr(),
	}, env, logPath, "http://"+probe+"/readyz")
	if err != nil {
		return nil, errors.Join(err, release())
	}
	go func() {
		<-op.Done()
		_ = release()
	}()
	return &operatorProcess{Operator: op, pprof: pprofPort.Addr(),
		webhook: net.JoinHostPort(h.env.Webhooks.LocalServingHost, strconv.Itoa(webhookPort.Number))}, nil
}

// stop stops the operator, and says so when it did not stop cleanly.
func (p *operatorProcess) stop() {
	if err := p.Stop(); err != nil {
		logf("the operator did not stop cleanly: %v (log: %s)", err, p.Log)
	}
}

// status is a field of the process's /proc status in kB, as text.
func (p *operatorProcess) status(field string) string {
	kB, err := p.MemoryKiB(field)
	if err != nil {
		return "unknown"
	}
	return mb(kB)
}

// cpu is the user and system CPU time the process has used so far.
func (p *operatorProcess) cpu() time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.Atoi(fields[11])
	stime, _ := strconv.Atoi(fields[12])
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}

// reserve reserves n ports, or none.
func reserve(n int) ([]*ports.Port, error) {
	var held []*ports.Port
	for range n {
		p, err := ports.Reserve()
		if err != nil {
			for _, h := range held {
				err = errors.Join(err, h.Release())
			}
			return nil, err
		}
		held = append(held, p)
	}
	return held, nil
}

// writtenResources are the kinds the operator writes: gateways' status,
// their four children and events.
var writtenResources = map[string]bool{
	"apigateways": true, "configmaps": true, "deployments": true, "services": true, "ingresses": true, "events": true,
}

// writes is the API server's count of requests that change objects of the
// kinds the operator writes, from anyone: while the bench is idle, only
// the operator could make them.
func (h *harness) writes(ctx context.Context) (float64, error) {
	cs, err := kubernetes.NewForConfig(h.config)
	if err != nil {
		return 0, err
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	var total float64
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		sample, isRequests := strings.CutPrefix(sc.Text(), "apiserver_request_total{")
		labels, value, ok := strings.Cut(sample, "} ")
		if !isRequests || !ok || !writtenResources[label(labels, "resource")] {
			continue
		}
		switch label(labels, "verb") {
		case "GET", "LIST", "WATCH":
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, err
		}
		total += n
	}
	if total == 0 {
		return 0, errors.New("the API server's metrics count no write to the operator's kinds: the metric changed?")
	}
	return total, sc.Err()
}

// checkWriteCount makes one write of a counted kind and fails unless the
// count, last read as before, sees it: a count of 0 must mean no write.
func (h *harness) checkWriteCount(ctx context.Context, before float64) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b5", Name: "write-count-check"}}
	if err := h.client.Create(ctx, cm); err != nil {
		return err
	}
	after, err := h.writes(ctx)
	if err != nil {
		return err
	}
	if after < before+1 {
		return fmt.Errorf("the API server's write count missed a ConfigMap create (%.0f before, %.0f after)", before, after)
	}
	return nil
}

// label is the value of name in a Prometheus label set a="x",b="y".
func label(labels, name string) string {
	_, rest, ok := strings.Cut(","+labels, ","+name+`="`)
	if !ok {
		return ""
	}
	value, _, _ := strings.Cut(rest, `"`)
	return value
}

// waitAllReconciled waits (up to 5 minutes) until ns holds count of each
// child and every gateway's status describes its generation. On timeout
// the error says how far it got.
func (h *harness) waitAllReconciled(ctx context.Context, ns string, count int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	last, lastLog := "nothing listed", time.Now()
	progress := func(s string) {
		last = s
		if time.Since(lastLog) > 10*time.Second {
			logf("B5: %s", s)
			lastLog = time.Now()
		}
	}
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		in := client.InNamespace(ns)
		for _, l := range []client.ObjectList{&corev1.ConfigMapList{}, &appsv1.DeploymentList{}, &corev1.ServiceList{}, &networkingv1.IngressList{}} {
			if err := h.client.List(ctx, l, in); err != nil {
				return false, err
			}
			if n := children(l); n < count {
				progress(fmt.Sprintf("%d of %d %T", n, count, l))
				return false, nil
			}
		}
		gws := &v1.APIGatewayList{}
		if err := h.client.List(ctx, gws, in); err != nil {
			return false, err
		}
		current := 0
		for _, gw := range gws.Items {
			if gw.Status.ObservedGeneration == gw.Generation {
				current++
			}
		}
		progress(fmt.Sprintf("%d of %d statuses current", current, count))
		return current >= count, nil
	})
	if err != nil {
		return fmt.Errorf("not all reconciled within 5 minutes: %s: %w", last, err)
	}
	return nil
}

// children counts the gateways' children in a list: every item, except
// ConfigMaps other than the gateways' (kube-root-ca.crt).
func children(l client.ObjectList) int {
	switch l := l.(type) {
	case *corev1.ConfigMapList:
		n := 0
		for _, cm := range l.Items {
			if strings.HasSuffix(cm.Name, "-config") {
				n++
			}
		}
		return n
	case *appsv1.DeploymentList:
		return len(l.Items)
	case *corev1.ServiceList:
		return len(l.Items)
	case *networkingv1.IngressList:
		return len(l.Items)
	}
	return -1
}
