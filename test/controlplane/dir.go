package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The directory's layout (see the package documentation).
const (
	etcdDir         = "etcd"
	pkiDir          = "pki"
	logsDir         = "logs"
	pidsDir         = "pids"
	kubeconfigFile  = "kubeconfig"
	lockFile        = "pids/run.pid"
	servingCertFile = "pki/apiserver.crt"
	servingKeyFile  = "pki/apiserver.key"
	saKeyFile       = "pki/sa.key"
	tokensFile      = "pki/tokens.csv"
)

// ErrInUse is in New's error when another run holds the directory.
var ErrInUse = errors.New("stop it first, or use another directory")

func (c *ControlPlane) path(name string) string { return filepath.Join(c.dir, name) }

func makeLayout(dir string) error {
	for _, sub := range []string{etcdDir, pkiDir, logsDir, pidsDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return err
		}
	}
	// It holds bearer tokens and keys.
	return os.Chmod(dir, 0o700)
}

// take locks a kept directory, stops what a killed run left running in it
// and, with Options.Fresh, empties it.
//
// The lock is an flock on pids/run.pid, which holds the locking process's
// pid for people to read. The kernel releases it when that process dies,
// however it dies, so a killed run never blocks the next; and no child
// inherits it (Go opens files close-on-exec), so leftovers do not either.
func (c *ControlPlane) take() error {
	if err := os.MkdirAll(filepath.Join(c.dir, pidsDir), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(c.path(lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(c.path(lockFile))
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("another run is using %s (pid %s): %w", c.dir, strings.TrimSpace(string(holder)), ErrInUse)
		}
		return fmt.Errorf("locking %s: %w", c.dir, err)
	}
	c.lock = f
	if err := f.Truncate(0); err != nil {
		return errors.Join(err, c.release())
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return errors.Join(err, c.release())
	}
	if err := c.stopLeftovers(); err != nil {
		return errors.Join(err, c.release())
	}
	if c.opts.Fresh {
		c.log("Deleting " + c.dir + ": the cluster starts empty")
		if err := emptyBut(c.dir, pidsDir); err != nil {
			return errors.Join(err, c.release())
		}
	}
	return nil
}

// release unlocks a kept directory, or removes a temporary one.
func (c *ControlPlane) release() error {
	if c.temp {
		return os.RemoveAll(c.dir)
	}
	if c.lock == nil {
		return nil
	}
	// Removed while still locked, so no other run reads a stale pid.
	err := os.Remove(c.path(lockFile))
	err = errors.Join(err, c.lock.Close())
	c.lock = nil
	return err
}

// emptyBut removes everything in dir except keep.
func emptyBut(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != keep {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// pidFile is a process's record in pids/.
type pidFile struct {
	name, path string
	modified   time.Time
}

// stopLeftovers stops the processes recorded in pids/ by a run that did not
// stop them, the last started first, as Stop would have. A recorded pid
// counts only while its command line names a path inside the directory
// (see recordedHere): the number may belong to another process by now.
func (c *ControlPlane) stopLeftovers() error {
	files, err := pidFiles(filepath.Join(c.dir, pidsDir))
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		data, err := os.ReadFile(f.path)
		if err != nil {
			return err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		switch {
		case err != nil || pid <= 0:
		case recordedHere(pid, c.dir):
			c.log(fmt.Sprintf("Stopping %s (pid %d) left over from an earlier run", f.name, pid))
			errs = append(errs, terminate(f.name, pid, c.opts.StopTimeout))
		case exiting(pid):
			// Killed with its launcher a moment ago (its parent-death
			// signal), its command line already gone: its ports are
			// free once it has exited. Whoever it is, it is dying.
			gone(pid, c.opts.StopTimeout)
		}
		errs = append(errs, os.Remove(f.path))
	}
	return errors.Join(errs...)
}

// pidFiles lists the process records in dir, the most recently written
// (the last started) first; the lock is not one of them.
func pidFiles(dir string) ([]pidFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []pidFile
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".pid")
		if !ok || e.Name() == filepath.Base(lockFile) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		files = append(files, pidFile{name: name, path: filepath.Join(dir, e.Name()), modified: info.ModTime()})
	}
	slices.SortFunc(files, func(a, b pidFile) int {
		if c := b.modified.Compare(a.modified); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return files, nil
}

// recordedHere is whether process pid runs and names a path inside dir on
// its command line, as every process of a control plane does (etcd its
// data, kube-apiserver its certificates, the others a kubeconfig).
func recordedHere(pid int, dir string) bool {
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err == nil && Running(pid) && namesPathIn(cmdline, dir)
}

// namesPathIn is whether a /proc cmdline (NUL-separated arguments) holds a
// path inside dir.
func namesPathIn(cmdline []byte, dir string) bool {
	inside := filepath.Clean(dir) + string(filepath.Separator)
	for arg := range strings.SplitSeq(string(cmdline), "\x00") {
		if strings.HasPrefix(arg, inside) || strings.Contains(arg, "="+inside) {
			return true
		}
	}
	return false
}
