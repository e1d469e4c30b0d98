package gatewayapi

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/dataplane"
)

// pod plays a gateway's pods, which no kubelet runs here: Debian's nginx
// on the configuration the operator rendered into ConfigMap N-config,
// listening on an address of its own as a pod would on its IP, and an
// EndpointSlice that makes it the ready endpoint of Service N, as the
// EndpointSlice controller would for a ready pod.
type pod struct {
	gw     client.ObjectKey
	addr   net.IP
	nginx  *dataplane.Nginx
	config string
}

var (
	podsMu sync.Mutex
	// pods counts the pods started, for their addresses (podAddr).
	pods int
)

// startPod waits until the operator has rendered gw's configuration and
// runs its pod until the test ends.
func startPod(t *testing.T, gw client.ObjectKey) *pod {
	t.Helper()
	podsMu.Lock()
	require.Less(t, pods, maxPods, "more gateway pods than addresses on the loopback device")
	p := &pod{gw: gw, addr: podAddr(pods)}
	pods++
	podsMu.Unlock()
	p.config = p.renderedConfig(t)
	var err error
	p.nginx, err = dataplane.StartNginx(t, dataplane.NginxBinary(t), p.config,
		net.JoinHostPort(p.addr.String(), strconv.Itoa(controller.HealthPort)), controller.HealthPath)
	require.NoError(t, err)
	require.NoError(t, env.Client.Create(t.Context(), &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: gw.Namespace, Name: gw.Name + "-pod", Labels: map[string]string{
			discoveryv1.LabelServiceName: gw.Name,
			discoveryv1.LabelManagedBy:   "gatewayapi.test.example.com",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{p.addr.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](controller.HTTPPort), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}))
	return p
}

// sync loads the gateway's configuration as the operator renders it now
// (in a cluster, the pods roll to it), once the status says the current
// generation was reconciled.
func (p *pod) sync(t *testing.T) {
	t.Helper()
	config := p.renderedConfig(t)
	if config != p.config {
		p.nginx.Reload(t, config)
		p.config = config
	}
}

// listenDirective matches the rendered listen directives: a port alone,
// which a pod binds on its own IP.
var listenDirective = regexp.MustCompile(`(?m)^(\s*listen\s+)(\d+)((?: default_server)?;)$`)

// renderedConfig is the configuration of ConfigMap N-config, once gw's
// status describes its generation, with the listen directives bound to
// the pod's address: the pods of a cluster have an IP each, these share a
// network namespace.
func (p *pod) renderedConfig(t *testing.T) string {
	t.Helper()
	var config string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		gw := &v1.APIGateway{}
		require.NoError(c, env.Client.Get(context.Background(), p.gw, gw))
		require.Equal(c, gw.Generation, gw.Status.ObservedGeneration)
		cm := &corev1.ConfigMap{}
		require.NoError(c, env.Client.Get(context.Background(), client.ObjectKey{Namespace: p.gw.Namespace, Name: p.gw.Name + "-config"}, cm))
		require.Len(c, cm.Data, 1, "the ConfigMap holds one configuration template")
		for _, v := range cm.Data {
			config = v
		}
	}, waitFor, tick, "the rendered configuration of %s", p.gw)
	bound := listenDirective.ReplaceAllString(config, "${1}"+p.addr.String()+":${2}${3}")
	require.GreaterOrEqual(t, len(listenDirective.FindAllString(config, -1)), 2, "no listen directives to bind in:\n%s", config)
	return bound
}
