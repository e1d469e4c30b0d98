package gatewayapi

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// inNamespaceEnv marks the test binary re-executed inside its namespaces.
const inNamespaceEnv = "APIGATEWAY_TEST_GATEWAYAPI_NETNS"

// The private addresses on the namespace's loopback device: Traefik's,
// and one per gateway pod (podAddr).
var (
	traefikAddr = net.IPv4(10, 200, 0, 1)
	maxPods     = 20
)

// podAddr is the address of the i-th gateway pod.
func podAddr(i int) net.IP { return net.IPv4(10, 200, 0, byte(10+i)) }

// inNamespaces reports whether the test binary runs in the namespaces
// reexecInNamespaces made.
func inNamespaces() bool { return os.Getenv(inNamespaceEnv) != "" }

// reexecInNamespaces runs the test binary again, with the same arguments,
// in a new network namespace and a new PID namespace, and returns its exit
// code. The PID namespace is what makes everything stop by itself: when
// the re-executed binary (its first process) exits, or is killed because
// this one died, the kernel kills every process left in it, and the
// network namespace goes with the last of them.
func reexecInNamespaces() (int, error) {
	// Pdeathsig follows the thread that started the child.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), inNamespaceEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWPID,
		Pdeathsig:  syscall.SIGKILL,
	}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), nil
	case errors.Is(err, syscall.EPERM):
		return 1, fmt.Errorf("creating network and PID namespaces needs root (CI runs as root): %w", err)
	case err != nil:
		return 1, err
	}
	return 0, nil
}

// setUpLoopback brings the namespace's loopback device up (127.0.0.1, for
// the control plane and the backends) and gives it the private addresses,
// each a /32 of its own ("lo:N" aliases, through the same ioctls as
// `ifconfig lo:N`, so no tool outside Go is needed).
func setUpLoopback(addrs ...net.IP) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	lo, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, lo); err != nil {
		return fmt.Errorf("reading lo's flags: %w", err)
	}
	lo.SetUint16(lo.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, lo); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	for i, addr := range addrs {
		alias, err := unix.NewIfreq(fmt.Sprintf("lo:%d", i+1))
		if err != nil {
			return err
		}
		// The address first: it creates the alias, with its class's mask.
		for _, set := range []struct {
			req uint
			ip  net.IP
		}{{unix.SIOCSIFADDR, addr}, {unix.SIOCSIFNETMASK, net.IPv4bcast}} {
			if err := alias.SetInet4Addr(set.ip.To4()); err != nil {
				return err
			}
			if err := unix.IoctlIfreq(fd, set.req, alias); err != nil {
				return fmt.Errorf("adding %s to lo: %w", addr, err)
			}
		}
	}
	return nil
}
