// Package ports reserves loopback TCP ports for servers that must be told
// their port before they bind it: etcd and kube-apiserver, which cannot
// report a port they chose, the operator binary and nginx, whose ports are
// written into flags, kubeconfigs and webhook configurations first, and
// servers that bind the same port again (a restarted API server, a second
// `make run`, each manager of a suite in turn).
//
// Picking a free port by listening on port 0 and closing the listener
// releases the port until the server binds it; meanwhile the kernel may hand
// it to any other process's listener or outgoing connection (it lies in the
// ephemeral range), and the server fails with "address already in use". A
// reservation never releases it: it is a socket bound to 127.0.0.1 with
// SO_REUSEADDR that never listens, held until Release. Linux then
//
//   - never picks the port for another socket bound to port 0 or for an
//     outgoing connection (it skips ports with a bound socket on them), and
//   - lets any socket with SO_REUSEADDR bind and listen on it, as long as no
//     other socket listens there: every Go listener sets SO_REUSEADDR, and so
//     does nginx.
//
// So the reserving process, or a child it names the port to, binds it at
// leisure and as often as it likes, while two listeners at once still fail
// as before. The kernel frees the port when the reserving process dies.
// This needs no port range of our own, no lock files and no retries, and
// holds in any network namespace.
package ports

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
)

// Port is a port on 127.0.0.1 reserved until Release.
type Port struct {
	// Number is the port.
	Number int

	fd      int
	release sync.Once
}

// Reserve reserves a port on 127.0.0.1 that the kernel chose.
func Reserve() (*Port, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("reserving a port: %w", err)
	}
	port, err := bindAny(fd)
	if err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("reserving a port: %w", err)
	}
	return &Port{Number: port, fd: fd}, nil
}

// bindAny binds fd to a port of 127.0.0.1 the kernel picks, with
// SO_REUSEADDR so that a listener may bind it too, and returns the port.
func bindAny(fd int) (int, error) {
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		return 0, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return 0, err
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return 0, err
	}
	return sa.(*syscall.SockaddrInet4).Port, nil
}

// Addr is the port's address, "127.0.0.1:<Number>".
func (p *Port) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Number)) }

// Release ends the reservation: the port is the kernel's to give again
// once no one listens on it. Releasing twice is a no-op.
func (p *Port) Release() error {
	var err error
	p.release.Do(func() { err = syscall.Close(p.fd) })
	return err
}

// TB is the part of testing.TB that For uses (this package does not
// import testing: hack/run uses it).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// For reserves a port until t's test (or benchmark) ends.
func For(t TB) int {
	t.Helper()
	p, err := Reserve()
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = p.Release() })
	return p.Number
}
