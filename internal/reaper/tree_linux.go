package reaper

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// KillTree kills with SIGKILL every process whose environment holds marker
// ("NAME=VALUE", which every descendant inherits, setsid and double-forked
// ones included) and every process below one of those or below pid, found
// by their parent chains in /proc, until none is left; then it reaps those
// that re-parented to this process (the subreaper, [Enable]). pid itself is
// left to its owner; it must still be this process's unreaped child, or 0:
// a reaped pid may name another process by now.
func KillTree(pid int, marker string) {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		pids := tree(pid, []byte(marker))
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(time.Millisecond) // SIGKILL takes effect asynchronously
	}
	ReapAdopted()
}

type stat struct {
	state byte
	ppid  int
}

// tree lists the live processes marked with marker or below root or below
// a marked one; root itself is left to its owner's Wait.
func tree(root int, marker []byte) []int {
	names, err := readNames("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	stats := map[int]stat{}
	take := map[int]bool{}
	if root > 0 {
		take[root] = true
	}
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		st, ok := readStat(pid)
		if !ok || st.state == 'Z' || st.state == 'X' {
			continue
		}
		stats[pid] = st
		if env, err := os.ReadFile("/proc/" + name + "/environ"); err == nil {
			for _, kv := range bytes.Split(env, []byte{0}) {
				if bytes.Equal(kv, marker) {
					take[pid] = true
					break
				}
			}
		}
	}
	var out []int
	for pid := range stats {
		for q, n := pid, 0; n < 64; n++ { // the bound guards against a cycle seen across changing reads
			if take[q] {
				if pid != root {
					out = append(out, pid)
				}
				break
			}
			up, ok := stats[q]
			if !ok || up.ppid <= 1 || up.ppid == self {
				break
			}
			q = up.ppid
		}
	}
	return out
}

// ReapAdopted waits for the children of this process that exited and that
// it did not start through [Start]: orphans it adopted as subreaper, so
// they do not stay zombies; its own children are left to their cmd.Wait.
func ReapAdopted() {
	names, err := readNames("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	Classify(func(own func(int) bool) {
		for _, name := range names {
			pid, err := strconv.Atoi(name)
			if err != nil {
				continue
			}
			if st, ok := readStat(pid); ok && st.ppid == self && st.state == 'Z' && !own(pid) {
				var ws syscall.WaitStatus
				syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			}
		}
	})
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

func readStat(pid int) (stat, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	// The command name in parentheses may hold anything; fields resume after the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(string(data[i+1:])) // f[0] is field 3, state
	if len(f) < 2 || len(f[0]) != 1 {
		return stat{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return stat{}, false
	}
	return stat{state: f[0][0], ppid: ppid}, true
}
