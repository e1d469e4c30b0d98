package node

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"example.com/apigateway-operator/test/controlplane"
	"example.com/apigateway-operator/test/testenv"
)

// env is the suite's control plane and its one node, which its tests
// share.
var env *testenv.Env

const (
	nodeName = "node"
	// waitFor bounds each wait for pods on the loaded 2-core machines.
	waitFor = 2 * time.Minute
	tick    = 100 * time.Millisecond
)

// TestMain runs the suite in the node's namespaces, with one node. A node
// that cannot start fails the run with what stopped it: never a skip.
func TestMain(m *testing.M) {
	code, done, err := controlplane.EnterNodeNamespaces()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/node:", err)
		os.Exit(1)
	}
	if done {
		os.Exit(code)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	var err error
	env, err = start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/node: the node did not start:", err)
		return 1
	}
	code := m.Run()
	made := env.ControlPlane().NodeMade()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "test/node: stopping:", err)
		code = max(code, 1)
	}
	if left := existing(made); len(left) > 0 {
		fmt.Fprintln(os.Stderr, "test/node: the node left these on the machine:", left)
		code = max(code, 1)
	}
	return code
}

// existing are those of paths that exist.
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// start writes the images and starts the control plane with the node,
// which imports them.
func start() (*testenv.Env, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	imageDir, err := os.MkdirTemp("", "node-images-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(imageDir)
	images, err := WriteImages(imageDir)
	if err != nil {
		return nil, err
	}
	return testenv.Start(testenv.Options{
		// The disruption controller computes the gateways' budgets'
		// status, which the Eviction API reads.
		Controllers: []string{"deployment-controller", "replicaset-controller", "disruption-controller"},
		Node: &controlplane.NodeOptions{
			BinDir:     bin,
			Name:       nodeName,
			Images:     images,
			PauseImage: PauseImage,
		},
	})
}
