package controlplane

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// nodeNamespaceEnv marks the process EnterNodeNamespaces re-ran.
const nodeNamespaceEnv = "APIGATEWAY_NODE_NAMESPACES"

// InNodeNamespaces reports whether this process runs in the namespaces
// EnterNodeNamespaces made.
func InNodeNamespaces() bool { return os.Getenv(nodeNamespaceEnv) != "" }

// EnterNodeNamespaces makes the rest of the process run in new network,
// mount and PID namespaces, as a node (Options.Node) needs: the first call
// re-runs this binary, with the same arguments, under unshare(1) and
// returns its exit code with done set, which the caller exits with; in the
// re-run, it brings loopback up and returns done unset.
//
// What the node does to the network (its address, the pods' bridge and
// their addresses) and its mounts (kernel settings shown to the kubelet,
// containers' root filesystems, the kubelet's volumes) stay in those
// namespaces and go with them. The re-run is their PID 1: when it exits,
// however it exits, the kernel kills every process left in them
// (containers, containerd's shims), and unshare kills it when unshare
// itself is killed, as the kernel kills unshare when the caller dies. A
// test package calls it from TestMain.
func EnterNodeNamespaces() (code int, done bool, err error) {
	return EnterNodeNamespacesWith(EnterOptions{})
}

// EnterOptions are what the caller of EnterNodeNamespacesWith hands the
// re-run.
type EnterOptions struct {
	// Files are open in the re-run as file descriptors 3, 4, ... (see
	// PassedFile). A socket stays in the network namespace it was made
	// in: a listener on the machine's loopback, passed on, is how the
	// re-run serves the machine's clients (see Forward).
	Files []*os.File
	// Env is added to the re-run's environment.
	Env []string
	// Signals, when set, are the signals the caller is notified of
	// (SIGINT, SIGTERM, SIGHUP). While it waits for another node on the
	// machine to stop, one ends the wait: the call returns 128 + its
	// number, done. Once the re-run runs, SIGTERM, which reaches the
	// caller alone, is passed on to it; SIGINT and SIGHUP are not: a
	// terminal sends them to its whole process group, the re-run
	// included, which would get them twice (a second one hurries a
	// stop).
	Signals <-chan os.Signal
}

// EnterNodeNamespacesWith is EnterNodeNamespaces with opts.
func EnterNodeNamespacesWith(opts EnterOptions) (code int, done bool, err error) {
	if InNodeNamespaces() {
		return 0, false, run("ip", "link", "set", "lo", "up")
	}
	if os.Geteuid() != 0 {
		return 1, true, fmt.Errorf("a node needs root (it makes namespaces, mounts and cgroups); running as uid %d", os.Geteuid())
	}
	unlock, sig, err := lockMachine(opts.Signals)
	if err != nil {
		return 1, true, err
	}
	if sig != nil {
		return 128 + int(sig.(syscall.Signal)), true, nil
	}
	defer unlock()
	// unshare blocks SIGINT and SIGTERM while it waits, but dies of a
	// terminal's hang-up, and its death kills the re-run (--kill-child)
	// before the re-run, which gets the hang-up too, has stopped what it
	// started. Ignored here, SIGHUP stays ignored in unshare (an ignored
	// signal stays so across exec); the re-run may still handle it
	// (os/signal.Notify installs a handler over an inherited SIG_IGN).
	signal.Ignore(syscall.SIGHUP)
	args := []string{"--net", "--mount", "--propagation=private", "--pid", "--fork", "--mount-proc", "--kill-child", "--", os.Args[0]}
	cmd := exec.Command("unshare", append(args, os.Args[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(append(os.Environ(), opts.Env...), nodeNamespaceEnv+"=1")
	cmd.ExtraFiles = opts.Files
	// The caller's death (SIGKILL, a crash) takes unshare with it, and
	// so the namespaces (--kill-child).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := startOnLockedThread(cmd); err != nil {
		return 1, true, fmt.Errorf("running under unshare: %w", err)
	}
	stop := passSignals(cmd.Process.Pid, opts.Signals)
	err = cmd.Wait()
	stop()
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		return exit.ExitCode(), true, nil
	}
	if err != nil {
		return 1, true, fmt.Errorf("running under unshare: %w", err)
	}
	return 0, true, nil
}

// PassedFile is file i of EnterOptions.Files in the re-run.
func PassedFile(i int, name string) *os.File { return os.NewFile(uintptr(3+i), name) }

// passSignals passes SIGTERM from sigs to the child of unshare (whose pid
// is pid): unshare, waiting for it, does not pass signals on. It returns
// a func that stops it.
func passSignals(pid int, sigs <-chan os.Signal) (stop func()) {
	if sigs == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				if sig != syscall.SIGTERM {
					continue
				}
				for _, child := range children(pid) {
					_ = syscall.Kill(child, syscall.SIGTERM)
				}
			}
		}
	}()
	return func() { close(done) }
}

// children are process pid's children, as /proc lists them.
func children(pid int) []int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var out []int
	for _, field := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(field); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// machineLock is the folder whose lock a node holds on the machine while
// it runs: an existing folder, so that waiting leaves nothing behind.
const machineLock = "/var/lib"

// lockMachine waits until no other node runs on the machine and keeps it
// so until unlock, or until a signal arrives on sigs, which it returns. Nodes in namespaces of their own still share the
// machine's folders they mount over (hostPaths): a node that made a
// missing one removes it when it stops, and removing a folder detaches
// every other mount namespace's mount on it, so a second node running
// then would lose its kubelet's and containerd's folders and write to
// the machine's (seen: two `make test-node` at once left /run/containerd
// and /var/lib/cni behind, and one failed to unmount /var/log/pods). The
// lock is an flock(2), which the kernel drops when the process ends,
// however it ends.
func lockMachine(sigs <-chan os.Signal) (unlock func(), sig os.Signal, err error) {
	f, err := os.Open(machineLock)
	if err != nil {
		return nil, nil, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		fmt.Fprintf(os.Stderr, "another node runs on this machine (a lock on %s): waiting for it to stop\n", machineLock)
		locked := make(chan error, 1)
		go func() { locked <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
		select {
		case err = <-locked:
		case sig = <-sigs:
			// The process exits: the kernel drops the lock it may
			// still take.
			return nil, sig, nil
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("locking %s: %w", machineLock, err)
	}
	return func() { _ = f.Close() }, nil, nil
}

// run runs a command, returning its output with its error.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// hostPaths are the machine's paths that the kubelet, containerd, its
// shims, runc or the CNI plugins use whatever their configuration says.
// In the node's mount namespace each is a folder of the run's directory
// mounted over the machine's, which stays as it was.
var hostPaths = []string{
	"/run/containerd",
	"/var/lib/cni",
	"/var/lib/kubelet",
	"/var/log/containers",
	"/var/log/pods",
}

// nodeMounts are what the node mounted in its mount namespace, and the
// machine's folders it had to make to mount over, to be undone by Stop.
type nodeMounts struct {
	mounted []string
	made    []string
}

// mountHostPaths mounts a folder under dir over each of hostPaths, making
// the missing ones (and remembering the topmost folder it made).
func (m *nodeMounts) mountHostPaths(dir string) error {
	for _, path := range hostPaths {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			top, err := mkdirAllTop(path)
			if err != nil {
				return err
			}
			m.made = append(m.made, top)
		}
		src := filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(path, "/"), "/", "-"))
		if err := os.MkdirAll(src, 0o755); err != nil {
			return err
		}
		if err := m.bind(src, path); err != nil {
			return err
		}
	}
	return nil
}

// fakeKernelSettings shows the kubelet the kernel settings it wants where
// the machine's differ: files under dir mounted over /proc/sys's.
func (m *nodeMounts) fakeKernelSettings(dir string) error {
	current := map[string]string{}
	for path := range kernelDefaults {
		data, err := os.ReadFile("/proc/sys/" + path)
		if err != nil {
			return err
		}
		current[path] = string(data)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for path, value := range kernelOverrides(current) {
		src := filepath.Join(dir, strings.ReplaceAll(path, "/", "."))
		if err := os.WriteFile(src, []byte(value+"\n"), 0o644); err != nil {
			return err
		}
		if err := m.bind(src, "/proc/sys/"+path); err != nil {
			return err
		}
	}
	return nil
}

func (m *nodeMounts) bind(src, target string) error {
	if err := syscall.Mount(src, target, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("mounting %s over %s: %w", src, target, err)
	}
	m.mounted = append(m.mounted, target)
	return nil
}

// undo unmounts everything mounted under dir (containers' root
// filesystems, the kubelet's volumes, network namespaces), deepest first,
// then its own mounts, and removes the folders it made on the machine
// (empty: what went in them went to the run's directory).
func (m *nodeMounts) undo(dir string) error {
	under, err := mountsUnder(dir)
	errs := []error{err}
	own := slices.Clone(m.mounted)
	slices.Reverse(own)
	for _, target := range append(under, own...) {
		if err := syscall.Unmount(target, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", target, err))
		}
	}
	m.mounted = nil
	for _, top := range m.made {
		errs = append(errs, removeEmptyTree(top))
	}
	m.made = nil
	return errors.Join(errs...)
}

// mountsUnder are this mount namespace's mount points under dir, deepest
// (last mounted) first.
func mountsUnder(dir string) ([]string, error) {
	all, err := mounts()
	var out []string
	for _, m := range all {
		if m.target == dir || strings.HasPrefix(m.target, dir+"/") {
			out = append(out, m.target)
		}
	}
	slices.Reverse(out)
	return out, err
}

// mkdirAllTop makes path and its missing parents, and returns the topmost
// folder it made.
func mkdirAllTop(path string) (string, error) {
	top := path
	for dir := filepath.Dir(path); dir != "/"; dir = filepath.Dir(dir) {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		top = dir
	}
	return top, os.MkdirAll(path, 0o755)
}

// removeEmptyTree removes dir and the empty folders in it; it fails when
// a file is in the way (something wrote to the machine).
func removeEmptyTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeEmptyTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return os.Remove(dir)
}
