package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"example.com/apigateway-operator/test/clusterdns"
	"example.com/apigateway-operator/test/controlplane"
	nodeimages "example.com/apigateway-operator/test/node"
)

// enterNode runs the rest of the program in the node's network, mount and
// PID namespaces (controlplane.EnterNodeNamespaces): the first call, in
// the machine's namespaces, re-runs the program there and returns its exit
// code with done set; in the re-run it returns done unset.
//
// The machine's kubectl and curl stay in the machine's network namespace,
// the API server runs in the node's. Before anything else, the launcher
// listens on the machine's 127.0.0.1 at APISERVER_PORT (0: a port the
// kernel picks, there and then) and passes the listening socket to the
// re-run, which accepts on it (a socket stays in the namespace it was made
// in) and forwards each connection to the API server on the node's
// loopback, at the same port: the kubeconfig, whose server and serving
// certificate name 127.0.0.1, reads the same on either side. kubectl
// port-forward, logs and exec then go on from the API server to the
// kubelet, both in the node's namespaces.
func (r *runner) enterNode() (code int, done bool, err error) {
	if controlplane.InNodeNamespaces() {
		return controlplane.EnterNodeNamespaces()
	}
	ln, err := listenWhenFree(r.apiServerPort)
	if err != nil {
		return 1, true, fmt.Errorf("127.0.0.1:%d is in use; pick another port with APISERVER_PORT=... (0 for any free one)", r.apiServerPort)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return 1, true, err
	}
	defer f.Close()
	// Once the re-run runs, a terminal's Ctrl-C and hang-up reach it
	// too (one process group): it stops in order, and this one with it;
	// SIGTERM, sent to this process alone, is passed on.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	return controlplane.EnterNodeNamespacesWith(controlplane.EnterOptions{
		Files:   []*os.File{f},
		Env:     []string{"APISERVER_PORT=" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)},
		Signals: sigs,
	})
}

// nodeRun is what the node of a run starts beside the control plane, to
// be closed when it stops.
type nodeRun struct {
	opts      *controlplane.NodeOptions
	forwarder *controlplane.Forwarder
	stopDNS   func() error
}

// newNodeRun is the node's options; their images are written by
// writeImages, once the run's directory is taken.
func (r *runner) newNodeRun() *nodeRun {
	return &nodeRun{opts: &controlplane.NodeOptions{BinDir: r.nodeBin, PauseImage: nodeimages.PauseImage}}
}

// writeImages builds the node's images (pause, echo, the operator's and
// the gateway's nginx) as OCI tars into RUN_DIR/images, which the node
// imports as it starts: it has no registry to pull from.
func (r *runner) writeImages() error {
	dir := filepath.Join(r.runDir, "images")
	r.log("Writing the node's images (pause, echo backend, operator, nginx) into " + r.show(dir))
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	images, err := nodeimages.WriteImages(dir)
	r.nodeRun.opts.Images = images
	return err
}

// serveAPIServer forwards the machine's connections, on the listener the
// launcher passed (see enterNode), to the API server.
func (r *runner) serveAPIServer() error {
	ln, err := net.FileListener(controlplane.PassedFile(0, "apiserver-listener"))
	if err != nil {
		return fmt.Errorf("the API server's listener on the machine's loopback: %w", err)
	}
	r.nodeRun.forwarder = controlplane.Forward(ln, net.JoinHostPort("127.0.0.1", strconv.Itoa(r.apiServerPort)))
	return nil
}

// serveClusterDNS answers the pods' DNS questions at the node's address,
// where the kubelet points them, as CoreDNS would: the gateways resolve
// their backends' Services there.
func (r *runner) serveClusterDNS() error {
	cfg, err := r.cp.Config(controlplane.Admin)
	if err != nil {
		return err
	}
	// controller-runtime's client logs through its global logger, which
	// would otherwise print a stack trace saying it was never set.
	ctrllog.SetLogger(logr.Discard())
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	_, stop, err := clusterdns.ServeLookup(net.JoinHostPort(controlplane.NodeIP, "53"), "cluster.local", clusterdns.Services(c))
	if err != nil {
		return fmt.Errorf("the cluster DNS at %s: %w", controlplane.NodeIP, err)
	}
	r.nodeRun.stopDNS = stop
	return nil
}

// close stops the DNS server and the API server's forwarder.
func (n *nodeRun) close() error {
	var errs []error
	if n.stopDNS != nil {
		errs = append(errs, n.stopDNS())
	}
	if n.forwarder != nil {
		if err := n.forwarder.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
