package reload

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/apigateway-operator/test/gatewaypod"
)

// hostIP is the test's own address in its network namespace: the gateway
// pods' DNS server and backends listen there, and their packets to the
// operator come back to it.
const hostIP = "10.200.255.1"

// nodeName is the one Node the stand-in kubelet runs pods on.
const nodeName = "node-1"

// kubelet plays the kubelet for the gateway pods of one namespace: it binds
// each new Pod to the node, runs it (gatewaypod, in a network namespace of
// its own with the next pod IP), writes the Pod's status (its IP, and
// Ready from the readiness probe) and projects the ConfigMaps the pod
// mounts into it whenever they change, which a kubelet does within its sync
// period and this one within a tenth of a second.
type kubelet struct {
	t   *testing.T
	c   client.Client
	ns  string
	dir string
	// resolvConf returns a pod's /etc/resolv.conf by its index (in order
	// of start).
	resolvConf func(i int) string

	mu   sync.Mutex
	pods map[string]*runningPod // by Pod name
}

type runningPod struct {
	pod   *gatewaypod.Pod
	ip    string
	cmRV  string
	ready bool
}

func startKubelet(t *testing.T, c client.Client, ns string, resolvConf func(int) string) *kubelet {
	t.Helper()
	k := &kubelet{t: t, c: c, ns: ns, dir: gatewaypod.TempDir(t, "rl"), resolvConf: resolvConf, pods: map[string]*runningPod{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := k.sync(ctx); err != nil && ctx.Err() == nil {
				t.Logf("kubelet: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		k.mu.Lock()
		defer k.mu.Unlock()
		for _, p := range k.pods {
			_ = p.pod.Stop(30 * time.Second)
		}
	})
	return k
}

func (k *kubelet) sync(ctx context.Context) error {
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods, client.InNamespace(k.ns)); err != nil {
		return err
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp != nil {
			continue
		}
		if err := k.syncPod(ctx, pod); err != nil {
			return fmt.Errorf("pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

func (k *kubelet) syncPod(ctx context.Context, pod *corev1.Pod) error {
	k.mu.Lock()
	p := k.pods[pod.Name]
	k.mu.Unlock()
	cm, err := k.configMap(ctx, pod)
	if err != nil {
		return err
	}
	if p == nil {
		if p, err = k.run(ctx, pod, cm); err != nil {
			return err
		}
	}
	if cm.ResourceVersion != p.cmRV {
		if err := p.pod.Project(cm.Data); err != nil {
			return err
		}
		p.cmRV = cm.ResourceVersion
	}
	ready := p.pod.Ready(ctx)
	if ready == p.ready && pod.Status.PodIP != "" {
		return nil
	}
	p.ready = ready
	return k.writeStatus(ctx, pod, p)
}

// configMap is the ConfigMap the pod mounts.
func (k *kubelet) configMap(ctx context.Context, pod *corev1.Pod) (*corev1.ConfigMap, error) {
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil {
			cm := &corev1.ConfigMap{}
			return cm, k.c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: v.ConfigMap.Name}, cm)
		}
	}
	return nil, fmt.Errorf("mounts no ConfigMap")
}

// run binds the pod to the node and starts its containers.
func (k *kubelet) run(ctx context.Context, pod *corev1.Pod, cm *corev1.ConfigMap) (*runningPod, error) {
	if pod.Spec.NodeName == "" {
		binding := &corev1.Binding{Target: corev1.ObjectReference{Kind: "Node", Name: nodeName}}
		if err := k.c.SubResource("binding").Create(ctx, pod, binding); err != nil {
			return nil, err
		}
	}
	k.mu.Lock()
	i := len(k.pods)
	k.mu.Unlock()
	ip := fmt.Sprintf("10.200.0.%d", i+1)
	dir, err := os.MkdirTemp(k.dir, "p")
	if err != nil {
		return nil, err
	}
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx = "/usr/sbin/nginx"
	}
	gp, err := gatewaypod.Start(dir, pod.Spec, cm.Data, gatewaypod.Options{
		Binary: os.Args[0], TestBinary: true, Nginx: nginx, ResolvConf: k.resolvConf(i),
		IP: ip, HostIP: hostIP, Link: fmt.Sprintf("gw%d", i), Output: &podLog{t: k.t, name: pod.Name},
	})
	if err != nil {
		return nil, err
	}
	p := &runningPod{pod: gp, ip: ip, cmRV: cm.ResourceVersion}
	k.mu.Lock()
	k.pods[pod.Name] = p
	k.mu.Unlock()
	return p, nil
}

func (k *kubelet) writeStatus(ctx context.Context, pod *corev1.Pod, p *runningPod) error {
	// The binding changed the Pod since it was listed.
	if err := k.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		return err
	}
	now := metav1.Now()
	ready := corev1.ConditionFalse
	if p.ready {
		ready = corev1.ConditionTrue
	}
	pod.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		PodIP:     p.ip,
		PodIPs:    []corev1.PodIP{{IP: p.ip}},
		HostIP:    hostIP,
		StartTime: &now,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: ready, LastTransitionTime: now},
		},
	}
	return k.c.Status().Update(ctx, pod)
}

// podLog passes a pod's output to the test log.
type podLog struct {
	t    *testing.T
	name string
}

func (l *podLog) Write(p []byte) (int, error) {
	if testing.Verbose() {
		l.t.Logf("%s: %s", l.name, p)
	}
	return len(p), nil
}

// node is the Node the pods run on: the EndpointSlice controller leaves
// out the pods of a Node it cannot find.
func createNode(t *testing.T, c client.Client) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
	require.NoError(t, client.IgnoreAlreadyExists(c.Create(context.Background(), node)))
}
