package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMain(m *testing.M) {
	if err := Main(); err != nil {
		fmt.Fprintln(os.Stderr, "e:", err)
		os.Exit(ExitLaunch)
	}
	os.Exit(m.Run())
}

func ptr[T any](v T) *T { return &v }

func TestNarrow(t *testing.T) {
	ws := Policy{Mode: WorkspaceWrite, Roots: []string{"/srv/a"}}
	tests := []struct {
		name    string
		proc    Policy
		mode    *Mode
		roots   []string
		network *bool
		want    Policy
		field   Field // "" when no error
	}{
		{name: "off", proc: Policy{Mode: Off}, want: Policy{Mode: Off}},
		{name: "zero is off", proc: Policy{}, want: Policy{Mode: Off}},
		{name: "off with network keeps it for sandboxed sessions", proc: Policy{Mode: Off, Network: true}, mode: ptr(ReadOnly), want: Policy{Mode: ReadOnly, Network: true}},
		{name: "off narrows to read-only", proc: Policy{Mode: Off}, mode: ptr(ReadOnly), want: Policy{Mode: ReadOnly}},
		{name: "off allows network in read-only", proc: Policy{Mode: Off}, mode: ptr(ReadOnly), network: ptr(true), want: Policy{Mode: ReadOnly, Network: true}},
		{name: "workspace to read-only drops roots", proc: ws, mode: ptr(ReadOnly), want: Policy{Mode: ReadOnly}},
		{name: "read-only cannot widen to workspace", proc: Policy{Mode: ReadOnly}, mode: ptr(WorkspaceWrite), field: "sandbox"},
		{name: "workspace cannot widen to off", proc: ws, mode: ptr(Off), field: "sandbox"},
		{name: "network cannot widen", proc: ws, network: ptr(true), field: "network"},
		{name: "network narrows", proc: Policy{Mode: ReadOnly, Network: true}, network: ptr(false), want: Policy{Mode: ReadOnly}},
		{name: "root inside cwd", proc: ws, roots: []string{"/work/x/sub"}, want: Policy{Mode: WorkspaceWrite, Roots: []string{"/work/x/sub"}}},
		{name: "root inside a process root", proc: ws, roots: []string{"/srv/a/b/"}, want: Policy{Mode: WorkspaceWrite, Roots: []string{"/srv/a/b"}}},
		{name: "root outside", proc: ws, roots: []string{"/srv/ab"}, field: "writable_roots[0]"},
		{name: "relative root", proc: Policy{Mode: Off}, roots: []string{"rel"}, field: "writable_roots[0]"},
		{name: "any root when off", proc: Policy{Mode: Off}, mode: ptr(WorkspaceWrite), roots: []string{"/anywhere"}, want: Policy{Mode: WorkspaceWrite, Roots: []string{"/anywhere"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Narrow(tt.proc, "/work/x", tt.mode, tt.roots, tt.network)
			var ne *NarrowError
			switch {
			case tt.field != "":
				if !errors.As(err, &ne) || ne.Field != tt.field {
					t.Fatalf("Narrow: error %v, want one about %s", err, tt.field)
				}
			case err != nil:
				t.Fatalf("Narrow: %v", err)
			default:
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Narrow (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestNarrowLink: a session's root that is a link inside the process's cwd
// to a directory outside it is outside (W2).
func TestNarrowLink(t *testing.T) {
	cwd, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(cwd, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(cwd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	proc := Policy{Mode: WorkspaceWrite}
	if _, err := Narrow(proc, cwd, nil, []string{filepath.Join(cwd, "link")}, nil); err == nil {
		t.Error("a link to outside the cwd was taken as a root")
	}
	p, err := Narrow(proc, cwd, nil, []string{filepath.Join(cwd, "sub")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{realOr(filepath.Join(cwd, "sub"))}; !slices.Equal(p.Roots, want) {
		t.Errorf("roots %v, want %v", p.Roots, want)
	}
}

// TestLauncherByHand: the launcher started without its namespaces (by
// hand) refuses to touch the mounts, which are then the host's, and
// exits with ExitLaunch, saying which command it could not start.
func TestLauncherByHand(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(exe, launchArg, `{"writable":["`+dir+`"]}`, "/bin/true", "true")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitLaunch || !strings.HasPrefix(string(out), "e: sandbox: cannot start /bin/true: mounts: ") ||
		!strings.Contains(string(out), "not in namespaces of its own") {
		t.Errorf("launcher by hand: %v %q, want exit status %d and why", err, out, ExitLaunch)
	}
}

func TestCheckHome(t *testing.T) {
	tests := []struct {
		name  string
		p     Policy
		home  string
		field Field
	}{
		{name: "home apart", p: Policy{Mode: WorkspaceWrite}, home: "/home/u/.e"},
		{name: "home in cwd", p: Policy{Mode: WorkspaceWrite}, home: "/work/x/.e", field: "cwd"},
		{name: "home holds cwd", p: Policy{Mode: WorkspaceWrite}, home: "/work", field: "cwd"},
		{name: "home in a root", p: Policy{Mode: WorkspaceWrite, Roots: []string{"/srv"}}, home: "/srv/e", field: "writable_roots[0]"},
		{name: "read-only writes no cwd", p: Policy{Mode: ReadOnly}, home: "/work/x/.e"},
		{name: "off", p: Policy{Mode: Off}, home: "/work/x/.e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.CheckHome("/work/x", tt.home)
			var ne *NarrowError
			if tt.field == "" && err != nil || tt.field != "" && (!errors.As(err, &ne) || ne.Field != tt.field) {
				t.Fatalf("CheckHome: %v, want field %q", err, tt.field)
			}
		})
	}
}

func TestProbeLimit(t *testing.T) {
	real := probe("")
	if real.Landlock < minABI {
		t.Skipf("this kernel has Landlock ABI %d", real.Landlock)
	}
	tests := []struct {
		limit   string
		missing string // a part of Enforceable's error; "" for none
		policy  Policy
	}{
		{limit: "", policy: Policy{Mode: ReadOnly}},
		{limit: "landlock=0", policy: Policy{Mode: ReadOnly}, missing: "Landlock, which this kernel lacks"},
		{limit: "landlock=2", policy: Policy{Mode: WorkspaceWrite, Network: true}, missing: "Landlock ABI 3 or newer, and this kernel has ABI 2"},
		{limit: "landlock=99", policy: Policy{Mode: ReadOnly}},
		{limit: "userns=0", policy: Policy{Mode: ReadOnly}, missing: "user namespaces"},
		{limit: "userns=0", policy: Policy{Mode: ReadOnly, Network: true}, missing: "user namespaces"},
		{limit: "seccomp=0", policy: Policy{Mode: ReadOnly}, missing: "seccomp"},
		{limit: "seccomp=0", policy: Policy{Mode: ReadOnly, Network: true}, missing: "seccomp"},
		{limit: "landlock=0", policy: Policy{Mode: Off}},
	}
	for _, tt := range tests {
		t.Run(tt.limit+"/"+tt.policy.describe(), func(t *testing.T) {
			s := probe(tt.limit)
			if s.Landlock > real.Landlock {
				t.Errorf("limit %q raised the ABI to %d", tt.limit, s.Landlock)
			}
			// What the probe reports missing is what Enforceable names:
			// a kernel with Landlock but no seccomp is not said to lack Landlock.
			if got := strings.Contains(s.Missing, "Landlock"); got != (s.Landlock < minABI) {
				t.Errorf("Missing %q names Landlock: %v, ABI %d", s.Missing, got, s.Landlock)
			}
			if (len(s.Modes) == 0) != (s.Missing != "") {
				t.Errorf("Modes %v beside Missing %q", s.Modes, s.Missing)
			}
			err := s.Enforceable(tt.policy)
			switch {
			case tt.missing == "" && err != nil:
				t.Fatalf("Enforceable: %v", err)
			case tt.missing != "" && (!errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tt.missing)):
				t.Fatalf("Enforceable: %v, want unsupported naming %q", err, tt.missing)
			}
		})
	}
}

// run runs a bash command line under p in cwd and returns its output and error.
func run(t *testing.T, p Policy, cwd, tmp, line string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/bash", "-c", line)
	cmd.Dir = cwd
	if err := Command(cmd, p, cwd, tmp); err != nil {
		t.Fatalf("Command: %v", err)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestEscapes(t *testing.T) {
	if err := Probe().Enforceable(Policy{Mode: ReadOnly}); err != nil {
		t.Skip(err)
	}
	root := t.TempDir()
	cwd, outside, tmp := filepath.Join(root, "work"), filepath.Join(root, "outside"), filepath.Join(root, "tmp")
	for _, d := range []string{cwd, outside, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	sock := filepath.Join(root, "s.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	python := "python3"
	if _, err := exec.LookPath(python); err != nil {
		t.Skip("python3 is not installed")
	}
	ws := Policy{Mode: WorkspaceWrite}
	escapes := []struct{ name, line string }{
		{"dotdot", "echo x > ../outside/new"},
		{"overwrite", "echo x > " + outside + "/secret"},
		{"touch", "touch " + outside + "/secret"},
		{"chmod", "chmod 600 " + outside + "/secret"},
		{"remount", "mount -o remount,rw /"},
		{"truncate", "truncate -s 0 " + outside + "/secret"},
		{"symlink", "ln -s " + outside + " link && echo x > link/new"},
		{"hardlink", "ln " + outside + "/secret hl && echo x >> hl"},
		{"proc root", "echo x > /proc/self/root" + outside + "/new"},
		{"rename out", "echo x > f && mv f " + outside + "/f"},
		{"unshare", "unshare -Ur sh -c 'echo x > " + outside + "/new'"},
		{"tcp", "exec 3<>/dev/tcp/127.0.0.1/" + port},
		{"udp", "echo x > /dev/udp/127.0.0.1/" + port},
	}
	unixConnect := python + ` -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("` + sock + `")'`
	escapes = append(escapes, struct{ name, line string }{"unix socket", unixConnect})
	for _, e := range escapes {
		t.Run(e.name, func(t *testing.T) {
			out, err := run(t, ws, cwd, tmp, e.line)
			if err == nil {
				t.Errorf("%s: succeeded, want a failure; output %q", e.line, out)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "s\n" {
		t.Errorf("secret now %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("outside holds %d entries, want 1", len(ents))
	}
	ordinary := []struct {
		name string
		p    Policy
		line string
	}{
		{"write in cwd", ws, "echo x > f && cat f >/dev/null && rm f"},
		{"temp dir", Policy{Mode: ReadOnly}, `echo x > "$TMPDIR/t" && [ "$TMPDIR" = ` + tmp + ` ]`},
		{"git", ws, "git init -q . && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x"},
		{"true", ws, "true"},
		{"network on", Policy{Mode: WorkspaceWrite, Network: true}, "exec 3<>/dev/tcp/127.0.0.1/" + port},
		{"socketpair", ws, python + ` -c 'import socket; socket.socketpair()'`},
		{"caches in the temp dir", ws, `[ "$XDG_CACHE_HOME" = ` + tmp + `/.cache ] && [ "$GOCACHE" = ` + tmp + `/.cache/go-build ]`},
	}
	for _, o := range ordinary {
		t.Run(o.name, func(t *testing.T) {
			if out, err := run(t, o.p, cwd, tmp, o.line); err != nil {
				t.Errorf("%s: %v; output %q", o.line, err, out)
			}
		})
	}
	t.Run("a root replaced by a link", func(t *testing.T) {
		// A writable root inside the cwd is replaced with a link to
		// outside after the session began (a command cannot: the root is a
		// mount point in its namespace; another process can); the next
		// command must not get the link's target.
		sub := filepath.Join(cwd, "sub")
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		p := Policy{Mode: WorkspaceWrite, Roots: []string{sub}}.Settle(cwd)
		if out, err := run(t, p, cwd, tmp, "rm -r sub"); err == nil {
			t.Errorf("a command removed a writable root: %q", out)
		}
		if err := os.Remove(sub); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, sub); err != nil {
			t.Fatal(err)
		}
		if out, err := run(t, p, cwd, tmp, "echo x > sub/viasub"); err == nil {
			t.Errorf("wrote through the link: %q", out)
		}
		if _, err := os.Stat(filepath.Join(outside, "viasub")); err == nil {
			t.Error("a file was written outside through the link")
		}
	})
	t.Run("unix socket with network", func(t *testing.T) {
		if out, err := run(t, Policy{Mode: WorkspaceWrite, Network: true}, cwd, tmp, unixConnect); err == nil {
			t.Errorf("a unix socket connected with the network on: %q", out)
		}
	})
	t.Run("read-only cwd", func(t *testing.T) {
		if out, err := run(t, Policy{Mode: ReadOnly}, cwd, tmp, "echo x > g"); err == nil || !strings.Contains(out, "Read-only file system") {
			t.Errorf("wrote in cwd under read-only: %v %q", err, out)
		}
	})
}
