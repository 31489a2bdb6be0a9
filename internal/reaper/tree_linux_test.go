package reaper

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary is its own helper: E_REAPER_HELPER=parent starts a
// grandchild in a session of its own (setsid), with its environment or
// without it (clearenv), prints the grandchild's pid and sleeps, or exits
// (orphan); =sleep sleeps.
func TestMain(m *testing.M) {
	switch os.Getenv("E_REAPER_HELPER") {
	case "sleep":
		time.Sleep(time.Hour)
		os.Exit(0)
	case "parent":
		self, _ := os.Executable()
		gc := exec.Command(self)
		gc.Env = append(os.Environ(), "E_REAPER_HELPER=sleep")
		if os.Getenv("E_REAPER_CLEARENV") != "" {
			gc.Env = []string{"E_REAPER_HELPER=sleep"}
		}
		gc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := gc.Start(); err != nil {
			os.Exit(2)
		}
		fmt.Println(gc.Process.Pid)
		if os.Getenv("E_REAPER_ORPHAN") != "" {
			os.Exit(0)
		}
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// KillTree ends a descendant that left the process group: found below the
// live parent by its parent chain (its environment cleared or not), or by
// the marker once its parent has exited and e adopted it (D2).
func TestKillTree(t *testing.T) {
	if !Enable() {
		t.Skip("no child subreaper here")
	}
	tests := []struct {
		name     string
		clearEnv bool // the grandchild has no marker: only its chain tells
		orphan   bool // the parent exits first: only the marker tells
	}{
		{name: "setsid grandchild below its parent"},
		{name: "setsid grandchild without the marker", clearEnv: true},
		{name: "orphaned grandchild with the marker", orphan: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			marker := "E_REAPER_TEST_" + strconv.Itoa(os.Getpid()) + "=" + strings.ReplaceAll(tt.name, " ", "_")
			self, _ := os.Executable()
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), "E_REAPER_HELPER=parent", marker)
			if tt.clearEnv {
				cmd.Env = append(cmd.Env, "E_REAPER_CLEARENV=1")
			}
			if tt.orphan {
				cmd.Env = append(cmd.Env, "E_REAPER_ORPHAN=1")
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := Start(cmd); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			gc, _ := strconv.Atoi(strings.TrimSpace(line))
			if err != nil || gc == 0 {
				t.Fatalf("grandchild pid %q: %v", line, err)
			}
			t.Cleanup(func() { syscall.Kill(gc, syscall.SIGKILL) })
			root := cmd.Process.Pid
			if tt.orphan {
				cmd.Wait()
				root = 0
			}
			KillTree(root, marker)
			if !tt.orphan {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				cmd.Wait()
				KillTree(0, marker) // reaps the grandchild, adopted when its parent died
			}
			Forget(cmd.Process.Pid)
			if st, ok := readStat(gc); ok && st.state != 'Z' {
				t.Errorf("grandchild %d still runs (state %c)", gc, st.state)
			}
		})
	}
}
