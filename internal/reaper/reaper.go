// Package reaper makes e the child subreaper of everything it starts
// (Linux PR_SET_CHILD_SUBREAPER). A process that leaves its parent's process
// group and clears its environment (env -i setsid …, a daemon's double fork)
// then re-parents to e when its parent exits, instead of to PID 1, so e can
// still find it, kill it and reap it (D1, D2, PITFALLS "Processes").
//
// e's own children (bash shells, extensions) are started through [Start],
// so that a child of e that Start did not record is known to be an adopted
// orphan. Classifying holds starts off, so a child forked a moment ago is
// never mistaken for one.
//
// [KillTree] ends a process's whole descendant tree, the ones that left its
// group included: by a marker variable they inherit, and by parent chains
// in /proc (extensions, D2).
package reaper

import (
	"os/exec"
	"sync"
)

var (
	once    sync.Once
	enabled bool

	gate sync.RWMutex // Start holds it shared across the fork; Classify exclusively
	mu   sync.Mutex
	own  = map[int]bool{} // pids of the children this process started
)

// Enable makes this process a child subreaper, once; it reports whether it
// is one (false where the kernel has no such thing).
func Enable() bool {
	once.Do(func() { enabled = becomeSubreaper() })
	return enabled
}

// Start starts cmd and records its process as this process's own child.
func Start(cmd *exec.Cmd) error {
	gate.RLock()
	defer gate.RUnlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	mu.Lock()
	own[cmd.Process.Pid] = true
	mu.Unlock()
	return nil
}

// Forget drops pid, a child started with Start, once its Wait has returned.
func Forget(pid int) {
	mu.Lock()
	delete(own, pid)
	mu.Unlock()
}

// Classify runs fn with no child being started meanwhile; fn's argument
// reports whether pid is a child this process started itself.
func Classify(fn func(own func(pid int) bool)) {
	gate.Lock()
	defer gate.Unlock()
	fn(func(pid int) bool {
		mu.Lock()
		defer mu.Unlock()
		return own[pid]
	})
}
