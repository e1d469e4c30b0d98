package node

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/testenv"
)

// BenchmarkRouteChangeLive (B8n) is a route change on the real node, with
// the kubelet's default syncFrequency (1 min) and the default Reload
// strategy: from the patch that changes a route to the first 200 on the
// new route through every ready replica of a 2-replica gateway (the
// kubelet projects the ConfigMap, each pod's reloader reloads nginx),
// p50/p99/max over b.N changes; and the requests on an unchanged route
// that failed meanwhile, each pod asked every 50 ms. Each change takes
// about a minute:
//
//	go test -run '^$' -bench RouteChangeLive -benchtime 20x ./test/node
func BenchmarkRouteChangeLive(b *testing.B) {
	ctx := b.Context()
	startServiceDNS(b)
	ns := testenv.NewNamespace(b, env.Client, "b8n")
	backend := startBackend(b, ns)
	startOperator(b)
	gw := newGateway(ns, "bench", backend, 2)
	require.NoError(b, env.Client.Create(ctx, gw))
	awaitLive(b, gw)
	pods := gatewayPods(b, gw)
	require.Len(b, pods, 2)

	var sent, failed atomic.Int64
	load, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, pod := range pods {
		wg.Go(func() {
			for load.Err() == nil {
				code := statusThrough(load, pod.Status.PodIP, "/users/1")
				if load.Err() != nil {
					return
				}
				sent.Add(1)
				if code != http.StatusOK {
					failed.Add(1)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}

	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		path := fmt.Sprintf("/v%d", i)
		patch := client.MergeFrom(gw.DeepCopy())
		route := gw.Spec.Routes[0]
		route.Path = v1.HTTPPath(path)
		gw.Spec.Routes = append(gw.Spec.Routes[:1], route)
		changed := time.Now()
		require.NoError(b, env.Client.Patch(ctx, gw, patch))
		var each sync.WaitGroup
		for _, pod := range pods {
			each.Go(func() {
				deadline := time.Now().Add(routeChangeWait)
				for statusThrough(ctx, pod.Status.PodIP, path+"/1") != http.StatusOK {
					if time.Now().After(deadline) {
						b.Errorf("pod %s did not serve %s within %s", pod.Name, path, routeChangeWait)
						return
					}
					time.Sleep(tick)
				}
			})
		}
		each.Wait()
		took = append(took, time.Since(changed))
		b.Logf("change %d: every replica served %s %s after the patch", i, path, took[i].Round(time.Millisecond))
	}
	b.StopTimer()
	stopLoad()
	wg.Wait()
	slices.Sort(took)
	b.ReportMetric(percentile(took, 50).Seconds(), "p50-s")
	b.ReportMetric(percentile(took, 99).Seconds(), "p99-s")
	b.ReportMetric(took[len(took)-1].Seconds(), "max-s")
	b.ReportMetric(float64(failed.Load()), "failed-requests")
	b.ReportMetric(float64(sent.Load()), "requests")
}

// percentile is the p-th percentile of sorted, by the nearest rank.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}
