package node

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/clusterdns"
	"example.com/apigateway-operator/test/controlplane"
	"example.com/apigateway-operator/test/operatortest"
	"example.com/apigateway-operator/test/testenv"
)

// A gateway's generated Deployment starts on the node (the init container
// copies the reloader from the operator's image, the reloader runs the
// gateway image's nginx as uid 101 on a read-only root), goes Live from
// the pod's own report, and a request through the pod reaches the echo
// backend of its route.
func TestGatewayPodServes(t *testing.T) {
	ctx := t.Context()
	startServiceDNS(t)
	ns := testenv.NewNamespace(t, env.Client, "gateway")
	backend := echoPod(ns, "user-service")
	require.NoError(t, env.Client.Create(ctx, backend))
	require.NoError(t, env.Client.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backend.Name},
		Spec: corev1.ServiceSpec{
			Selector: backend.Labels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}},
		},
	}))
	awaitReady(t, backend)

	mgr := operatortest.NewManager(t, env, operatortest.Options{UserAgent: "apigateway-operator-test", Controller: &controller.Options{
		DefaultImage: GatewayImage, ReloaderImage: OperatorImage, Resolvers: []string{controlplane.NodeIP},
	}})
	testenv.RunManager(t, mgr, waitFor)

	gw := &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: v1.APIGatewaySpec{Image: GatewayImage, Replicas: ptr.To[int32](1), Routes: []v1.Route{{
			Host: "shop.example.com", Path: "/users", PathType: v1.PathTypePrefix,
			BackendService: v1.BackendService{Name: v1.ServiceName(backend.Name), Port: 8080},
		}}},
	}
	created := time.Now()
	require.NoError(t, env.Client.Create(ctx, gw))
	res := env.Kubectl(ctx, nil, "wait", "--for=condition=Live", "agw/"+gw.Name, "-n", ns, "--timeout=2m")
	require.NoError(t, res.Err, "%s\n%s", res.Stderr, env.Kubectl(ctx, nil, "get", "agw,deploy,pods", "-n", ns, "-o", "yaml").Stdout)
	t.Logf("gateway Live %s after its creation", time.Since(created).Round(time.Millisecond))

	var pods corev1.PodList
	require.NoError(t, env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{controller.LabelInstance: gw.Name}))
	require.Len(t, pods.Items, 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pods.Items[0].Status.PodIP+":8080/users/42", http.NoBody)
	require.NoError(t, err)
	req.Host = "shop.example.com"
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var reply struct{ Service, Pod, RequestURI string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&reply))
	require.Equal(t, backend.Name, reply.Service)
	require.Equal(t, "/users/42", reply.RequestURI)
}

// startServiceDNS plays the cluster DNS at the node's address, where the
// kubelet points the pods (clusterDNS): a Service's name is its ready
// pods' addresses, as a headless Service's would be. There is no
// kube-proxy, so no ClusterIP would lead anywhere.
func startServiceDNS(t *testing.T) {
	t.Helper()
	_, stop, err := clusterdns.ServeLookup(net.JoinHostPort(controlplane.NodeIP, "53"), "cluster.local", readyPodIPs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = stop() })
}

// readyPodIPs are the ready pods' addresses of Service "name.namespace".
func readyPodIPs(name string) []net.IP {
	svcName, ns, ok := strings.Cut(name, ".")
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var svc corev1.Service
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: svcName}, &svc); err != nil {
		return nil
	}
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(svc.Spec.Selector)}); err != nil {
		return nil
	}
	var ips []net.IP
	for i := range pods.Items {
		if podReady(&pods.Items[i]) {
			ips = append(ips, net.ParseIP(pods.Items[i].Status.PodIP))
		}
	}
	return ips
}
