package extension

import (
	"context"
	"errors"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// D1, D2: nothing is left behind, children in the group included, and a
// child that left the group (setsid) too.
func TestShutdownLeavesNoProcess(t *testing.T) {
	tests := []struct {
		name string
		mode string
		stop func(h *Host)
	}{
		{name: "graceful", mode: "probe", stop: func(h *Host) { h.Shutdown(10 * time.Second) }},
		{name: "stubborn is killed after grace", mode: "stubborn", stop: func(h *Host) { h.Shutdown(50 * time.Millisecond) }},
		{name: "kill", mode: "probe", stop: func(h *Host) { h.Kill() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ui := newFakeUI(noUI)
			h := start(t, ui, Options{}, helperConfig(t, "s", tt.mode), Config{Name: "guard", Command: guardBin})
			var pids []int
			for _, tool := range []string{"spawn", "spawnsid"} {
				content, failed := h.CallTool(context.Background(), "s1", tool, nil)
				child, err := strconv.Atoi(content)
				if failed || err != nil {
					t.Fatalf("%s = %q, %v", tool, content, failed)
				}
				pids = append(pids, child)
			}
			for _, e := range h.exts {
				pids = append(pids, e.cmd.Process.Pid)
			}
			tt.stop(h)
			for _, pid := range pids {
				if !exits(t, pid) {
					t.Errorf("process %d is still running", pid)
				}
			}
			select {
			case n := <-ui.notices:
				t.Errorf("unexpected notice on shutdown: %+v", n)
			default:
			}
		})
	}
}

// exits waits (at most 10 s) for pid to terminate, through a pidfd: the
// grandchild is not ours to wait for, and SIGKILL takes effect
// asynchronously. A zombie counts as terminated.
func exits(t *testing.T, pid int) bool {
	t.Helper()
	const sysPidfdOpen = 434
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno == syscall.ESRCH {
		return true
	}
	if errno != 0 {
		t.Fatalf("pidfd_open %d: %v", pid, errno)
	}
	defer syscall.Close(int(fd))
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var set syscall.FdSet
		set.Bits[fd/64] |= 1 << (fd % 64)
		tv := syscall.NsecToTimeval(int64(time.Until(deadline)))
		n, err := syscall.Select(int(fd)+1, &set, nil, nil, &tv)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("select on pidfd %d: %v", pid, err)
		}
		return n == 1
	}
	return false
}
