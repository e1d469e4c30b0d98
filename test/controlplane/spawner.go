package controlplane

import (
	"os/exec"
	"runtime"
	"sync"
)

// The parent-death signal (SysProcAttr.Pdeathsig) is sent when the thread
// that forked the child exits, not the process (prctl(2)), and the Go
// runtime ends a thread when a goroutine locked to it returns
// (golang/go#27505). Every child is therefore forked from one goroutine
// that locks its thread and never returns: its thread lives as long as
// the process, and the signal comes only when the process dies.
var (
	spawnOnce sync.Once
	spawns    chan spawnRequest
)

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// startOnLockedThread starts cmd from the spawning thread.
func startOnLockedThread(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawns = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must not exit
			for req := range spawns {
				req.done <- req.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawns <- spawnRequest{cmd: cmd, done: done}
	return <-done
}
