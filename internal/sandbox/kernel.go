package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// minABI is the oldest Landlock ABI the sandbox accepts: ABI 3 is the first
// that can refuse truncate(2), without which a file outside the roots
// could still be emptied.
const minABI = 3

// Support is what this kernel can enforce (W4, W5).
type Support struct {
	Landlock int // the Landlock ABI version; 0: none
	UserNS   bool
	Seccomp  bool
	// Modes are the sandboxed modes that can be enforced (Landlock,
	// seccomp, user namespaces), and Network whether their network can be
	// cut off too (user namespaces).
	Modes   []Mode
	Network bool
	// Missing says what is missing, "" when nothing is.
	Missing string
}

// LimitEnv names the environment variable that makes e take the kernel as
// less capable than it is, for tests of refusals (W4): a comma-separated
// list of landlock=N (the ABI to assume, capped at the real one),
// userns=0, seccomp=0. It can only take capabilities away, so it can make
// e refuse a session, never confine one less.
const LimitEnv = "E_SANDBOX_KERNEL_LIMIT"

var (
	probeMu sync.Mutex
	probed  = map[string]Support{} // by LimitEnv's value
)

// Probe returns what this kernel can enforce, as LimitEnv limits it now;
// the kernel is asked once per value of LimitEnv.
func Probe() Support {
	limit := os.Getenv(LimitEnv)
	probeMu.Lock()
	defer probeMu.Unlock()
	s, ok := probed[limit]
	if !ok {
		s = probe(limit)
		probed[limit] = s
	}
	return s
}

func probe(limit string) Support {
	var s Support
	if v, err := landlockABI(); err == nil {
		s.Landlock = v
	}
	s.UserNS = userNamespaces()
	s.Seccomp = seccompAvailable()
	for _, kv := range strings.Split(limit, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			continue
		}
		switch k {
		case "landlock":
			s.Landlock = min(s.Landlock, n)
		case "userns":
			s.UserNS = s.UserNS && n != 0
		case "seccomp":
			s.Seccomp = s.Seccomp && n != 0
		}
	}
	missing := s.needs()
	if len(missing) == 0 {
		s.Modes = []Mode{WorkspaceWrite, ReadOnly}
	}
	s.Network = s.UserNS
	s.Missing = strings.Join(missing, "; ")
	return s
}

// needs names what the kernel lacks for any sandboxed mode, nothing when
// it has all of it.
func (s Support) needs() []string {
	var missing []string
	switch {
	case s.Landlock == 0:
		missing = append(missing, "Landlock, which this kernel lacks or does not enable (see the lsm= list)")
	case s.Landlock < minABI:
		missing = append(missing, fmt.Sprintf("Landlock ABI %d or newer, and this kernel has ABI %d", minABI, s.Landlock))
	}
	if !s.Seccomp {
		missing = append(missing, "seccomp filters, to refuse unix sockets")
	}
	if !s.UserNS {
		missing = append(missing, "user namespaces, for read-only mounts and to cut the network off")
	}
	return missing
}

// userNamespaces reports whether e may create a user namespace: the
// sysctls that switch them off, for everyone or for the unprivileged.
func userNamespaces() bool {
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		return false
	}
	if n, ok := readInt("/proc/sys/user/max_user_namespaces"); ok && n == 0 {
		return false
	}
	if os.Geteuid() != 0 {
		if n, ok := readInt("/proc/sys/kernel/unprivileged_userns_clone"); ok && n == 0 {
			return false
		}
		if n, ok := readInt("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && n != 0 {
			return false
		}
	}
	return true
}

func readInt(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return n, err == nil
}

// ErrUnsupported marks a policy this kernel cannot enforce.
var ErrUnsupported = errors.New("unsupported")

// Enforceable returns an error wrapping ErrUnsupported, saying what is
// missing, when s cannot enforce p (W4): never a silent downgrade.
func (s Support) Enforceable(p Policy) error {
	if !p.Sandboxed() {
		return nil
	}
	missing := s.needs()
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("sandbox: %s cannot be enforced here: it needs %s: %w", p.describe(), strings.Join(missing, ", and "), ErrUnsupported)
}

func (p Policy) describe() string {
	if p.Network {
		return fmt.Sprintf("mode %s with network", p.Mode)
	}
	return fmt.Sprintf("mode %s without network", p.Mode)
}
