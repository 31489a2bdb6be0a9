package sandbox

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccomp installs a filter on the calling thread that refuses, with
// EACCES, the ways out of the network namespace that do not go through
// it: socket(AF_UNIX), as a pathname unix socket is reached through the
// file system, which Landlock ABI 7 does not check on connect (AF_UNIX
// socketpair stays: it connects nothing outside); io_uring_setup, whose
// operations would not pass this filter; and any system call of another
// ABI (x32, i386), whose numbers it does not check.
func seccomp() error {
	arch, x32 := uint32(unix.AUDIT_ARCH_X86_64), true
	if runtime.GOARCH == "arm64" {
		arch, x32 = unix.AUDIT_ARCH_AARCH64, false
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
		// offsets in struct seccomp_data
		offNr, offArch, offArg0 = 0, 4, 16
	)
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES))
	x32Limit := uint32(0x40000000)
	if !x32 {
		x32Limit = 0xffffffff
	}
	prog := []unix.SockFilter{
		{Code: ld, K: offArch},
		{Code: jeq, Jt: 1, Jf: 0, K: arch},
		{Code: ret, K: deny},
		{Code: ld, K: offNr},
		{Code: jge, Jt: 0, Jf: 1, K: x32Limit},
		{Code: ret, K: deny},
		{Code: jeq, Jt: 0, Jf: 1, K: unix.SYS_IO_URING_SETUP},
		{Code: ret, K: deny},
		{Code: jeq, Jt: 0, Jf: 3, K: unix.SYS_SOCKET},
		{Code: ld, K: offArg0},
		{Code: jeq, Jt: 0, Jf: 1, K: unix.AF_UNIX},
		{Code: ret, K: deny},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return errno
	}
	return nil
}
