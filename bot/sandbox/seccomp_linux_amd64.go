package sandbox

import (
	"fmt"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// refused are the system calls an agent never needs and a way out would:
// changing the view (mount and friends), new namespaces, kernel modules
// and kexec, keyrings, bpf and perf, tracing other processes, the clock,
// swap, reboot, and file handles that open by inode around the walls.
var refused = []string{
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount",
	"fsconfig", "fspick", "mount_setattr", "unshare", "setns",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	"open_by_handle_at", "name_to_handle_at", "lookup_dcookie",
	"reboot", "swapon", "swapoff", "syslog", "acct", "quotactl", "vhangup",
	"iopl", "ioperm", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"uselib", "personality",
}

// Seccomp data offsets (struct seccomp_data, little-endian): the call's
// number, its architecture, and the low words of its first two arguments.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
)

// newNamespaces are clone(2)'s flags for new namespaces (CLONE_NEWTIME
// overlaps the exit signal's bits in clone and is only for clone3).
const newNamespaces = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// loadSeccomp installs the filter on this thread (inherited across exec
// and by every child). A prelude the library cannot express comes first:
// clone3 answers ENOSYS (its flags are behind a pointer, so it cannot be
// checked; libc then falls back to clone), clone with a new namespace's
// flag is refused, and ioctl TIOCSTI / TIOCLINUX (typing into the
// person's terminal) are refused whatever the argument's high word says.
func loadSeccomp() error {
	pol := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls:      []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: refused}},
	}
	body, err := pol.Assemble()
	if err != nil {
		return err
	}
	return loadWithPrelude(body)
}

// preludeInstructions is the prelude; each jump counts the instructions
// it skips, and "out" is the library's body, right after it.
func preludeInstructions() []bpf.Instruction {
	const out = 13
	skip := func(from, to int) uint8 { return uint8(to - from - 1) }
	const eperm, enosys, cloneChk, ioctlChk = 11, 12, 6, 8
	return []bpf.Instruction{
		/* 0 */ bpf.LoadAbsolute{Off: offArch, Size: 4},
		/* 1 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AUDIT_ARCH_X86_64, SkipFalse: skip(1, out)},
		/* 2 */ bpf.LoadAbsolute{Off: offNr, Size: 4},
		/* 3 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE3, SkipTrue: skip(3, enosys)},
		/* 4 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE, SkipTrue: skip(4, cloneChk)},
		/* 5 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_IOCTL, SkipTrue: skip(5, ioctlChk), SkipFalse: skip(5, out)},
		/* 6 */ bpf.LoadAbsolute{Off: offArg0, Size: 4},
		/* 7 */ bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: newNamespaces, SkipTrue: skip(7, eperm), SkipFalse: skip(7, out)},
		/* 8 */ bpf.LoadAbsolute{Off: offArg1, Size: 4},
		/* 9 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCSTI, SkipTrue: skip(9, eperm)},
		/* 10 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCLINUX, SkipTrue: skip(10, eperm), SkipFalse: skip(10, out)},
		/* 11 */ bpf.RetConstant{Val: uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EPERM)},
		/* 12 */ bpf.RetConstant{Val: uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.ENOSYS)},
	}
}

// loadWithPrelude loads the prelude followed by the library's body.
func loadWithPrelude(body []bpf.Instruction) error {
	prog := append(preludeInstructions(), body...)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return fmt.Errorf("assemble: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return errno
	}
	return nil
}
