package controller

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestGarbageCollectorDeletesTheChildren deletes a gateway with the real
// garbage collector running: the children go through their owner
// references, and so does what the real Deployment controller made of the
// Deployment.
func TestGarbageCollectorDeletesTheChildren(t *testing.T) {
	startOperator(t)
	startControllerManager(t)
	ctx := context.Background()
	ns := newNamespace(t, "gc")
	gw := gateway("collected", route("collected.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw = createGateway(t, gw)
	_, ch := settled(t, gw)

	var rs appsv1.ReplicaSet
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		list := &appsv1.ReplicaSetList{}
		require.NoError(c, env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(selectorLabels(gw))))
		require.Len(c, list.Items, 1, "the Deployment controller made no ReplicaSet")
		rs = list.Items[0]
		require.Equal(c, ch.dep.UID, metav1.GetControllerOf(&rs).UID)
	}, time.Minute, tick)

	require.NoError(t, env.Client.Delete(ctx, gw))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, obj := range []client.Object{&ch.cm, &ch.dep, &ch.svc, &ch.ing, &rs} {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			assert.True(c, apierrors.IsNotFound(err), "%T %s still exists (%v)", obj, obj.GetName(), err)
		}
	}, 2*time.Minute, 250*time.Millisecond)
}

// TestGarbageCollectorKeepsForeignObjects deletes, with the real garbage
// collector running, a gateway created in a namespace that already had a
// user's Service of its name: the gateway's own children go, the user's
// Service stays as it was.
func TestGarbageCollectorKeepsForeignObjects(t *testing.T) {
	startOperator(t, shortRetry)
	startControllerManager(t)
	ctx := context.Background()
	ns := newNamespace(t, "gc-foreign")
	before := createForeign(t, foreignService(ns, "kept", nil))
	gw := gateway("kept", route("kept.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw = createGateway(t, gw)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cur := &v1.APIGateway{}
		require.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), cur))
		require.Equal(c, cur.Generation, cur.Status.ObservedGeneration, "status not yet written")
	}, waitFor, tick)
	cm, dep := &corev1.ConfigMap{}, &appsv1.Deployment{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kept-config"}, cm))
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), dep))

	// Foreground: the gateway is gone only once the collector has deleted
	// everything that names it as owner, so what is left afterwards stays.
	require.NoError(t, env.Client.Delete(ctx, gw, client.PropagationPolicy(metav1.DeletePropagationForeground)))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, obj := range []client.Object{gw, cm, dep} {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			assert.True(c, apierrors.IsNotFound(err), "%T %s still exists (%v)", obj, obj.GetName(), err)
		}
	}, 2*time.Minute, 250*time.Millisecond)
	assertUntouched(t, before)
}

// startControllerManager runs the kube-controller-manager built beside the
// control plane (bin/k8s), with the garbage collector and the Deployment and
// ReplicaSet controllers only, until the test ends. Its log is printed when
// the test fails.
func startControllerManager(t *testing.T) {
	t.Helper()
	bin := filepath.Join(filepath.Dir(kubectlPath(t)), "kube-controller-manager")
	_, err := os.Stat(bin)
	require.NoError(t, err, "kube-controller-manager missing beside the control plane: run `make k8s`")
	cmd := exec.Command(bin,
		"--kubeconfig="+env.Kubeconfig,
		"--controllers=garbagecollector,deployment,replicaset",
		"--leader-elect=false",
		// The controllers use the kubeconfig's administrator; no service
		// accounts, tokens or signing keys are needed.
		"--use-service-account-credentials=false",
		// No serving: nothing probes it, and parallel test binaries would
		// fight over the port.
		"--secure-port=0",
		"--v=1",
	)
	var log lockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait() // it is stopped by a signal; the log says why it ended
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("kube-controller-manager log:\n%s", log.String())
		}
	})
	// Fail fast when it exits at start (a bad flag, an unreachable server).
	select {
	case err := <-done:
		done <- err
		t.Fatalf("kube-controller-manager exited at start: %v\n%s", err, log.String())
	case <-time.After(time.Second):
	}
}

// kubectlPath is the kubectl testenv runs, in the control plane's directory.
func kubectlPath(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(env.Root, "bin", "k8s")
	}
	return filepath.Join(dir, "kubectl")
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
