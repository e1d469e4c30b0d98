package controller

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/push"
	"example.com/apigateway-operator/reloader"
)

// pushedPod plays a gateway pod's reloader as far as the operator sees
// it: its volume is the ConfigMap as it was when the pod started, and
// never changes (a kubelet that has not synced it since), so whatever new
// configuration it serves came by a push. It opens a push as the reloader
// does (push.Open with the volume's public key, the volume's gateway, a
// serial above the served one) and reports on its status what it serves.
type pushedPod struct {
	volume push.Identity

	mu      sync.Mutex
	loaded  string // the hash served
	serial  uint64
	serials []uint64 // the serials of the pushes it loaded, in order
	refused int      // pushes refused (bad signature, another gateway, older)
}

func newPushedPod(t *testing.T, cm *corev1.ConfigMap) *pushedPod {
	t.Helper()
	id, err := push.ParseIdentity([]byte(cm.Data[push.IdentityKey]))
	require.NoError(t, err, "the ConfigMap holds no push identity")
	return &pushedPod{volume: id, loaded: configHash(cm.Data[configKey]), serial: id.Serial}
}

func (p *pushedPod) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == reloader.StatusPath:
		p.mu.Lock()
		st := reloader.Status{Loaded: p.loaded}
		p.mu.Unlock()
		_ = json.NewEncoder(w).Encode(st)
	case r.Method == http.MethodPost && r.URL.Path == reloader.PushPath:
		body, err := io.ReadAll(io.LimitReader(r.Body, push.MaxEnvelope+1))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(p.push(body))
	default:
		http.NotFound(w, r)
	}
}

func (p *pushedPod) push(envelope []byte) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	payload, err := push.Open(p.volume.PublicKey, envelope, push.MaxEnvelope)
	switch {
	case err != nil, !p.volume.Names(payload):
		p.refused++
		return http.StatusForbidden
	case payload.Serial <= p.serial:
		p.refused++
		return http.StatusConflict
	}
	p.loaded, p.serial = configHash(string(payload.Template)), payload.Serial
	p.serials = append(p.serials, payload.Serial)
	return http.StatusOK
}

func (p *pushedPod) state() (loaded string, serials []uint64, refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loaded, append([]uint64(nil), p.serials...), p.refused
}

// handle answers the status port of pod IP ip with h.
func (n *podNet) handle(t *testing.T, ip string, h http.Handler) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	n.mu.Lock()
	defer n.mu.Unlock()
	n.servers[ip] = ln.Addr().String()
}

// TestRouteChangesArePushed: with pushes on, the leader fills the empty
// key Secret, writes the gateway's identity beside its template, and
// after each route change pushes the new template to the gateway's ready
// pods, signed with that key, at the serial the ConfigMap carries, in
// increasing order; Live turns True from what the pods then report,
// though their volumes never change.
func TestRouteChangesArePushed(t *testing.T) {
	ctx := context.Background()
	pn := newPodNet(t)
	ns := newNamespace(t, "push")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: DefaultPushKeySecret}}
	require.NoError(t, env.Client.Create(ctx, secret))
	startOperator(t, func(o *Options) {
		o.dialStatus = pn.dial
		o.PushKeySecret = client.ObjectKeyFromObject(secret)
	})

	gw := gateway("shop", route("shop.push.example.com", "/v0", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw = createGateway(t, gw)
	_, ch := settled(t, gw)
	pod := newPushedPod(t, &ch.cm)
	assert.Equal(t, push.Identity{Namespace: ns, Name: gw.Name, UID: string(gw.UID), PublicKey: pod.volume.PublicKey, Serial: pod.volume.Serial}, pod.volume)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret))
	key, err := parsePushKey(secret.Data[PushKeyData])
	require.NoError(t, err, "the operator filled the Secret")
	assert.Equal(t, key.Public().(ed25519.PublicKey), ed25519.PublicKey(pod.volume.PublicKey), "the identity names the Secret's key")

	const ip = "203.0.113.21"
	pn.handle(t, ip, pod)
	setDeploymentStatus(t, gw, 1)
	playPods(t, gw, &ch.dep, ip)
	waitCondition(t, gw, v1.ConditionLive, metav1.ConditionTrue, v1.ReasonLive)

	var configSerials []uint64
	for _, path := range []string{"/v1", "/v2", "/v3"} {
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &v1.APIGateway{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(gw), cur); err != nil {
				return err
			}
			cur.Spec.Routes[0].Path = v1.HTTPPath(path)
			return env.Client.Update(ctx, cur)
		}))
		var cm corev1.ConfigMap
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			cur, err := getChildren(ctx, gw)
			require.NoError(c, err)
			cm = cur.cm
			require.Contains(c, cm.Data[configKey], path, "the ConfigMap does not route %s yet", path)
			loaded, _, _ := pod.state()
			assert.Equal(c, configHash(cm.Data[configKey]), loaded, "the pod was not pushed the ConfigMap's template")
		}, waitFor, 10*time.Millisecond)
		id, err := push.ParseIdentity([]byte(cm.Data[push.IdentityKey]))
		require.NoError(t, err)
		configSerials = append(configSerials, id.Serial)
		cur := waitCondition(t, gw, v1.ConditionLive, metav1.ConditionTrue, v1.ReasonLive)
		assert.Equal(t, int32(1), cur.Status.LiveReplicas)
	}
	_, serials, refused := pod.state()
	assert.Equal(t, configSerials, serials, "the pod loaded each ConfigMap's serial, once, in order")
	for i := 1; i < len(serials); i++ {
		assert.Greater(t, serials[i], serials[i-1])
	}
	assert.Greater(t, serials[0], pod.volume.Serial)
	assert.Zero(t, refused, "the operator sent a push the pod had to refuse")
}
