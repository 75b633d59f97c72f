package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Part is one kernel part the sandbox uses, as Probe found it.
type Part struct {
	Name     string
	OK       bool
	Required bool
	Detail   string // what was found
	Fix      string // how to allow it, when not OK
}

// Probe reports each part: the namespaces (tried for real, in a child
// that exits at once), seccomp, no_new_privs and Landlock's ABI.
func Probe() []Part {
	var parts []Part
	ns := Part{Name: "namespaces (user, mount, pid, net, ipc, uts)", Required: true}
	if err := tryNamespaces(); err != nil {
		ns.Detail = err.Error()
		ns.Fix = userNSFix()
	} else {
		ns.OK, ns.Detail = true, "a child made all six"
	}
	parts = append(parts, ns)

	sc := Part{Name: "seccomp filters", Required: true}
	if b, err := os.ReadFile("/proc/self/status"); err == nil && strings.Contains(string(b), "Seccomp:") {
		sc.OK, sc.Detail = true, "available"
	} else {
		sc.Detail = "the kernel has no seccomp (no Seccomp line in /proc/self/status)"
		sc.Fix = "use a kernel built with CONFIG_SECCOMP_FILTER=y"
	}
	parts = append(parts, sc)

	lk := Part{Name: "Landlock (second layer)"}
	abi, err := ll.LandlockGetABIVersion()
	switch {
	case err != nil || abi < 1:
		lk.Detail = "not in this kernel: the namespaces are the walls, with no second layer"
		lk.Fix = "boot with lsm=landlock,… (Linux 5.13+; 6.7+ for TCP rules, 6.12+ for signal scoping)"
	default:
		lk.OK = true
		lk.Detail = fmt.Sprintf("ABI %d: filesystem", abi)
		if abi >= 4 {
			lk.Detail += ", TCP connect"
		}
		if abi >= 6 {
			lk.Detail += ", signal and abstract-socket scoping"
		}
	}
	parts = append(parts, lk)
	return parts
}

// Require is a quick Probe as an error: the first required part known
// to be missing, named, with how to allow it. It starts no process: Run's
// own start is the real test of the namespaces (a refusal there is
// reported the same way).
func Require() error {
	if b, err := os.ReadFile("/proc/self/status"); err != nil || !strings.Contains(string(b), "Seccomp:") {
		return errors.New("the sandbox needs seccomp filters: the kernel has none; to allow it: use a kernel built with CONFIG_SECCOMP_FILTER=y")
	}
	read := func(p string) string {
		b, _ := os.ReadFile(p)
		return strings.TrimSpace(string(b))
	}
	if read("/proc/sys/user/max_user_namespaces") == "0" || read("/proc/sys/kernel/unprivileged_userns_clone") == "0" && os.Getuid() != 0 {
		return namespacesError(errors.New("user namespaces are switched off"))
	}
	return nil
}

// namespacesError says the namespaces could not be made, and how to
// allow them.
func namespacesError(err error) error {
	return fmt.Errorf("the sandbox needs namespaces (user, mount, pid, net, ipc, uts): %v; to allow it: %s (signoff doctor shows every part)", err, userNSFix())
}

// tryNamespaces starts `true`-like child in every namespace the sandbox
// uses (the signoff binary itself, which exits at once on this stage).
func tryNamespaces() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, probeArg)
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
			syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if len(out) > 0 {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return err
	}
	return nil
}

// userNSFix says how to allow unprivileged user namespaces on this
// machine, from what it can see.
func userNSFix() string {
	read := func(p string) string {
		b, _ := os.ReadFile(p)
		return strings.TrimSpace(string(b))
	}
	switch {
	case read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
		return "AppArmor restricts unprivileged user namespaces: `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`, or an AppArmor profile for signoff with `userns,`"
	case read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
		return "`sudo sysctl kernel.unprivileged_userns_clone=1`"
	case read("/proc/sys/user/max_user_namespaces") == "0":
		return "`sudo sysctl user.max_user_namespaces=15000`"
	}
	return "allow unprivileged user namespaces (a kernel with CONFIG_USER_NS=y and no sysctl or security module forbidding them)"
}
