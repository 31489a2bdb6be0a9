package sandbox

import (
	"os/exec"
	"testing"
)

// BenchmarkStart is the cost of the sandbox on a command's start: /bin/bash
// -c true run plain, and through the launcher under workspace-write with the
// network (Landlock only) and without it (a user and network namespace and
// seccomp too), start to exit.
func BenchmarkStart(b *testing.B) {
	cases := []struct {
		name string
		p    Policy
	}{
		{"plain", Policy{Mode: Off}},
		{"workspace-write+network", Policy{Mode: WorkspaceWrite, Network: true}},
		{"workspace-write", Policy{Mode: WorkspaceWrite}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if err := Probe().Enforceable(c.p); err != nil {
				b.Skip(err)
			}
			cwd, tmp := b.TempDir(), b.TempDir()
			for b.Loop() {
				cmd := exec.Command("/bin/bash", "-c", "true")
				cmd.Dir = cwd
				if err := Command(cmd, c.p, cwd, tmp); err != nil {
					b.Fatal(err)
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}
