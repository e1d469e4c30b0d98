package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupMounts are the cgroup hierarchies mounted under /sys/fs/cgroup
// (one per v1 controller on these machines, and the v2 one).
func cgroupMounts() ([]string, error) {
	all, err := mounts()
	var out []string
	for _, m := range all {
		if (m.fstype == "cgroup" || m.fstype == "cgroup2") && strings.HasPrefix(m.target, "/sys/fs/cgroup/") {
			out = append(out, m.target)
		}
	}
	return out, err
}

// makeCgroupRoot makes the cgroup name in every hierarchy and returns the
// folders made. A v1 cpuset cgroup starts with no CPUs and no memory
// nodes, which no process may join: it gets its parent's.
func makeCgroupRoot(name string) ([]string, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	var made []string
	for _, mount := range mounts {
		dir := filepath.Join(mount, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return made, fmt.Errorf("making cgroup %s: %w", dir, err)
		}
		made = append(made, dir)
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			if _, err := os.Stat(filepath.Join(mount, file)); err != nil {
				continue
			}
			data, err := os.ReadFile(filepath.Join(mount, file))
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, file), data, 0o644)
			}
			if err != nil {
				return made, fmt.Errorf("copying %s to cgroup %s: %w", file, dir, err)
			}
		}
	}
	return made, nil
}

// removeCgroups kills the processes left in the cgroups dirs and under
// them (containers the kubelet did not stop), waits up to timeout for them
// to go, then removes the cgroups, the deepest first.
func removeCgroups(dirs []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var errs []error
	for _, dir := range dirs {
		for {
			pids := cgroupProcs(dir)
			if len(pids) == 0 {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("cgroup %s still holds processes %v", dir, pids))
				break
			}
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(pollInterval)
		}
		errs = append(errs, removeCgroupTree(dir))
	}
	return errors.Join(errs...)
}

// cgroupProcs are the processes in cgroup dir and those under it.
func cgroupProcs(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil //nolint:nilerr // a cgroup removed meanwhile holds nothing
		}
		data, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
		for _, field := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(field); err == nil && pid > 0 {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// removeCgroupTree removes cgroup dir and the cgroups under it (a cgroup's
// files cannot be removed, only its folder, once its children are gone).
func removeCgroupTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeCgroupTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing cgroup %s: %w", dir, err)
	}
	return nil
}
