package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// launch is what the launcher applies to itself before exec'ing the command.
type launch struct {
	Writable []string `json:"writable"` // directories it may write beneath, temp dir included
	Network  bool     `json:"network"`
}

// Command makes cmd run under p, in place: cmd starts e itself (the
// launcher, Main) in namespaces of its own, which confines itself and then
// execs cmd's program. tmp is the session's private temp dir, set as
// TMPDIR and writable in both sandboxed modes. cmd.SysProcAttr is kept,
// with a session of its own and the namespaces added.
func Command(cmd *exec.Cmd, p Policy, cwd, tmp string) error {
	if !p.Sandboxed() {
		return nil
	}
	if err := Probe().Enforceable(p); err != nil {
		return err
	}
	cfg, err := json.Marshal(launch{Writable: append(p.Writable(cwd), tmp), Network: p.Network})
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	// The child execs what its parent runs: e's own binary, even when the
	// file was replaced or removed since e started.
	cmd.Args = append([]string{"e", launchArg, string(cfg), cmd.Path}, cmd.Args...)
	cmd.Path = "/proc/self/exe"
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	// Build tools' caches go to the private temp dir: the user's own
	// (~/.cache) are not writable, and must not be, as a later build
	// outside the sandbox would use what a command planted there.
	cache := filepath.Join(tmp, ".cache")
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp, "XDG_CACHE_HOME="+cache, "GOCACHE="+filepath.Join(cache, "go-build"))
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// A session of its own, so no controlling terminal: through /dev/tty a
	// command could push keystrokes (TIOCSTI) into the user's shell. Its
	// process group is still its pid, as Setpgid would make it.
	cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setpgid = true, false
	// A user namespace (mapped to e's own user and group: no privilege
	// needed) owning a mount namespace of the launcher's, and with the
	// network off a network namespace where no interface leads out.
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
	if !p.Network {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNET
	}
	cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	return nil
}

// Main is the launcher: when e was started as one (Command), it confines
// itself and execs the command, and returns only when it cannot, with an
// error saying why, which the caller writes to stderr before it exits with
// ExitLaunch; otherwise it returns nil at once. Every binary that starts
// sandboxed commands calls it first thing: e's main, and the tests' mains
// of packages that run them. It does not exit itself: only mains do.
func Main() error {
	if len(os.Args) < 5 || os.Args[1] != launchArg {
		return nil
	}
	// The rules bind this thread and what it execs; the exec is made from it.
	runtime.LockOSThread()
	var cfg launch
	err := json.Unmarshal([]byte(os.Args[2]), &cfg)
	if err == nil {
		err = confine(cfg)
	}
	if err == nil {
		err = unix.Exec(os.Args[3], os.Args[4:], os.Environ())
	}
	return fmt.Errorf("sandbox: cannot start %s: %w", os.Args[3], err)
}

// confine applies cfg to the launcher, before it execs the command: the
// mounts read-only but the writable directories, no capabilities,
// no_new_privs, Landlock for the file system and a seccomp filter refusing
// unix sockets (all but the mounts bind the calling thread, which execs).
// The network namespace's loopback, when there is one, stays down, so a
// send anywhere, 127.0.0.1 included, fails with ENETUNREACH rather than
// vanishing.
func confine(cfg launch) error {
	if err := readOnlyMounts(cfg.Writable); err != nil {
		return fmt.Errorf("mounts: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := landlock(cfg); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	// With the network on too: a daemon's unix socket (docker's,
	// systemd's) would run commands outside the sandbox.
	if err := seccomp(); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

// readOnlyMounts makes every mount of the launcher's mount namespace
// read-only but the writable directories, each bound onto itself: Landlock
// ABI 7 does not check chmod, chown, utimes or extended attributes, which a
// read-only mount refuses (EROFS). The mounts stay private to the namespace.
// The writable directories are checked for links later (landlock), before
// anything runs.
func readOnlyMounts(writable []string) error {
	// Only in namespaces of its own, never its parent's: the launcher run
	// by hand (as root) would make the host's mounts read-only. From the
	// user namespace Command makes, the parent's namespaces cannot be read,
	// and its user map has one entry of one id.
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return err
	}
	parent, perr := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", os.Getppid()))
	ids, _ := os.ReadFile("/proc/self/uid_map")
	if f := strings.Fields(string(ids)); (perr == nil && parent == self) || len(f) != 3 || f[2] != "1" {
		return fmt.Errorf("not in namespaces of its own (mount %s, its parent's %s; uid map %q): started other than by Command", self, parent, ids)
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("private: %w", err)
	}
	for _, d := range writable {
		if err := unix.Mount(d, d, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", d, err)
		}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("read-only /: %w", err)
	}
	rw := &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	for _, d := range writable {
		// A read-only mount inside d that was so before stays so.
		if err := unix.MountSetattr(unix.AT_FDCWD, d, unix.AT_RECURSIVE, rw); err != nil {
			if err := unix.MountSetattr(unix.AT_FDCWD, d, 0, rw); err != nil {
				return fmt.Errorf("writable %s: %w", d, err)
			}
		}
	}
	// The working directory was entered before its bind mount covered
	// it: enter it again, through the mount.
	return os.Chdir(wd)
}

// dropCapabilities empties the bounding set: the command, root in its user
// namespace when e is root, execs with no capability there, so it cannot
// undo the mounts (mount_setattr has no Landlock hook) nor act as the
// owner of files that are not its own.
func dropCapabilities() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop %d: %w", c, err)
		}
	}
	return unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
}

// writeRights are the Landlock rights the sandbox handles: every way to
// change the file system, and devices' ioctls, by ABI. Reading and
// executing are not handled, so they stay allowed everywhere.
func writeRights(abi int) uint64 {
	r := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	if abi >= 2 {
		r |= unix.LANDLOCK_ACCESS_FS_REFER // links and renames across directories
	}
	if abi >= 3 {
		r |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV // a device's ioctls outside the writable places
	}
	return r
}

// devices a command may always write: the sinks and sources shells use.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

func landlock(cfg launch) error {
	abi, err := landlockABI()
	if err != nil {
		return err
	}
	if abi < minABI {
		return fmt.Errorf("ABI %d, %d or newer needed", abi, minABI)
	}
	handled := writeRights(abi)
	attr := unix.LandlockRulesetAttr{Access_fs: handled}
	if abi >= 6 {
		// Abstract unix sockets outside the sandbox (seccomp refuses
		// AF_UNIX sockets already; the network namespace hides them too),
		// and signals to processes outside it (e itself, other sessions'
		// commands).
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("create ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	add := func(path string, rights uint64, how *unix.OpenHow) error {
		p, err := unix.Openat2(unix.AT_FDCWD, path, how)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer unix.Close(p)
		rule := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(p)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return fmt.Errorf("rule for %s: %w", path, errno)
		}
		return nil
	}
	// The writable directories are real paths fixed when the session
	// began: a link in one now (a command replaced a directory with it) is
	// refused, or a command could point the next one's rule anywhere.
	noLinks := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	for _, d := range cfg.Writable {
		if err := add(d, handled, noLinks); err != nil {
			return err
		}
	}
	fileRights := handled & (unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV)
	for _, d := range devices {
		err := add(d, fileRights, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC})
		if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENXIO) {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("restrict self: %w", errno)
	}
	return nil
}

// SelfTest runs `true` under the narrowest policy (read-only, no network)
// to show the launcher works here, beyond what Probe read (e doctor).
func SelfTest() error {
	tmp, err := TempDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("/bin/sh", "-c", "true")
	if err := Command(cmd, Policy{Mode: ReadOnly}, tmp, tmp); err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("sandbox: a confined true failed: %w: %s", err, out)
	}
	return nil
}
