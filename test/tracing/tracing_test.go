// Package tracing tests the operator's traces against the real
// kube-apiserver, whose own tracing exports to a collector the test runs
// on loopback.
package tracing

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/operatortest"
	"example.com/apigateway-operator/test/testenv"
	optracing "example.com/apigateway-operator/tracing"
	"example.com/apigateway-operator/webhooks"
)

var (
	env       *testenv.Env
	collector = &spanCollector{}
)

// TestMain starts the collector, then a control plane whose API server
// sends it every trace (sampling rate one million per million).
func TestMain(m *testing.M) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, collector)
	go func() { _ = srv.Serve(lis) }()
	collector.addr = lis.Addr().String()
	testenv.Main(m, &env, testenv.Options{
		Webhooks: envtest.WebhookInstallOptions{Paths: []string{"../../manifests/webhook"}, IgnoreSchemeConvertible: true},
		APIServer: func(dir string) (map[string]string, error) {
			cfg := filepath.Join(dir, "tracing.yaml")
			return map[string]string{"tracing-config-file": cfg}, os.WriteFile(cfg, []byte(
				"apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n"+
					"endpoint: "+collector.addr+"\nsamplingRatePerMillion: 1000000\n"), 0o600)
		},
	})
}

// TestOneApplyOneTrace turns tracing on as --otlp-endpoint does, applies
// a gateway with kubectl, and finds one trace that holds the API server's
// spans and both webhooks' (each a child of an API server span), and the
// reconciler's span for the gateway with a child span per applied child;
// then a denial's and a conversion's spans and their attributes.
func TestOneApplyOneTrace(t *testing.T) {
	stop, err := optracing.Setup(t.Context(), "http://"+collector.addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = stop(context.Background()) })
	operatortest.Start(t, env, operatortest.Options{
		Webhooks:   &webhooks.Options{DefaultImage: "nginx:1.27", DefaultReplicas: 2, Tracing: true},
		Controller: &controller.Options{DefaultImage: "nginx:1.27", ReloaderImage: "apigateway-operator:test"},
	})

	res := env.Kubectl(t.Context(), strings.NewReader(`apiVersion: example.com/v1
kind: APIGateway
metadata: {name: traced, namespace: default}
spec:
  routes:
  - {host: Traced.Example.com, backendService: {name: svc, port: 80}}
`), "apply", "-f", "-")
	require.NoError(t, res.Err, res.Stderr)

	var trace []*span
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		trace = collector.traceWith("apigateway.mutate")
		require.NotNil(c, trace, "no trace with the mutating webhook's span yet")
		names := spanNames(trace)
		assert.Contains(c, names, "apiserver/Call mutating webhook")
		assert.Contains(c, names, "apiserver/Call validating webhook")
		assert.Contains(c, names, "apigateway-operator/apigateway.validate")
		assert.Contains(c, names, "apigateway-operator/apigateway.mutate")
	}, time.Minute, 200*time.Millisecond, "the apply's trace")
	// Each webhook span continues the API server's call to it (through the
	// API server's HTTP client span).
	for _, s := range trace {
		if s.service != optracing.ServiceName {
			continue
		}
		parent := findSpan(trace, s.parent)
		require.NotNil(t, parent, "%s has no parent in the trace", s.name)
		assert.Equal(t, "apiserver", parent.service, "%s continues the API server's span, not %s/%s", s.name, parent.service, parent.name)
	}
	t.Logf("the apply's trace: %d spans: %v", len(trace), spanNames(trace))
	assert.Equal(t, "v1", findNamed(trace, "apigateway.mutate").attrs["apigateway.request-version"])

	// A denial names its rules on the validating span; a read through
	// v1alpha1 gives a conversion span with the objects' count.
	res = env.Kubectl(t.Context(), strings.NewReader(`apiVersion: example.com/v1
kind: APIGateway
metadata: {name: intruder, namespace: kube-public}
spec:
  image: nginx:1.27
  replicas: 2
  routes:
  - {host: traced.example.com, backendService: {name: svc, port: 80}}
`), "apply", "-f", "-")
	require.Error(t, res.Err, "a host another namespace owns")
	res = env.Kubectl(t.Context(), nil, "get", "apigateways.v1alpha1.example.com", "traced", "-n", "default")
	require.NoError(t, res.Err, res.Stderr)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotNil(c, collector.spanWhere(func(s *span) bool {
			// The holder is the owner's gateway, or its namespace ("default/")
			// once the reconciler has recorded the host (a HostClaim).
			return s.name == "apigateway.validate" && s.attrs["apigateway.denied-rules"] == "hostOwned" &&
				(s.attrs["apigateway.conflict-holders"] == "default/traced" || s.attrs["apigateway.conflict-holders"] == "default/")
		}), "a validating span naming the denial's rule and holder")
		assert.NotNil(c, collector.spanWhere(func(s *span) bool {
			return s.name == "apigateway.convert" && s.attrs["apigateway.desired_api_version"] == "example.com/v1alpha1"
		}), "a conversion span")
	}, time.Minute, 200*time.Millisecond, "the denial's and the conversion's spans")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		reconcile := collector.spanWhere(func(s *span) bool {
			return s.name == "apigateway.reconcile" && s.attrs["apigateway.name"] == "traced"
		})
		require.NotNil(c, reconcile, "no reconcile span for the gateway yet")
		kinds := collector.childKinds(reconcile)
		assert.Subset(c, kinds, []string{"ConfigMap", "Deployment", "Service", "Ingress"})
	}, time.Minute, 200*time.Millisecond, "the reconcile's spans")
}

// span is what the test keeps of an exported span.
type span struct {
	service, name     string
	trace, id, parent string
	attrs             map[string]string
}

// spanCollector is an OTLP trace receiver that keeps every span.
type spanCollector struct {
	collectortrace.UnimplementedTraceServiceServer
	addr  string
	mu    sync.Mutex
	spans []*span
}

func (c *spanCollector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, newSpan(service, s))
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func newSpan(service string, s *tracepb.Span) *span {
	out := &span{service: service, name: s.GetName(), trace: hex.EncodeToString(s.GetTraceId()),
		id: hex.EncodeToString(s.GetSpanId()), parent: hex.EncodeToString(s.GetParentSpanId()), attrs: map[string]string{}}
	for _, a := range s.GetAttributes() {
		out.attrs[a.GetKey()] = a.GetValue().GetStringValue()
	}
	return out
}

// traceWith returns every span of the first trace that has a span named
// name, nil if none has.
func (c *spanCollector) traceWith(name string) []*span {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := ""
	for _, s := range c.spans {
		if s.name == name {
			id = s.trace
			break
		}
	}
	if id == "" {
		return nil
	}
	var out []*span
	for _, s := range c.spans {
		if s.trace == id {
			out = append(out, s)
		}
	}
	return out
}

func (c *spanCollector) spanWhere(match func(*span) bool) *span {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.spans {
		if match(s) {
			return s
		}
	}
	return nil
}

// childKinds are the child kinds of parent's apigateway.apply children.
func (c *spanCollector) childKinds(parent *span) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var kinds []string
	for _, s := range c.spans {
		if s.parent == parent.id && s.name == "apigateway.apply" {
			kinds = append(kinds, s.attrs["apigateway.child.kind"])
		}
	}
	return kinds
}

// spanNames are service/name of each span.
func spanNames(spans []*span) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.service + "/" + s.name
	}
	return out
}

func findSpan(spans []*span, id string) *span {
	for _, s := range spans {
		if s.id == id {
			return s
		}
	}
	return nil
}

func findNamed(spans []*span, name string) *span {
	for _, s := range spans {
		if s.name == name {
			return s
		}
	}
	return &span{attrs: map[string]string{}}
}
