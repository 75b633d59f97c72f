package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// runExec is the last stage: on one OS thread it gives up every
// privilege — capabilities (and root's power to regain them on exec),
// new privileges, the filesystem and TCP beyond the walls (Landlock), the
// system calls an agent never needs (seccomp) — then execs the agent.
func runExec() error {
	runtime.LockOSThread() // never unlocked: exec happens on this thread
	s, _, err := readSpec()
	if err != nil {
		return err
	}
	argv0, err := lookPath(s.Plan.Argv[0], s.Plan.Env)
	if err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := restrictLandlock(&s.Plan); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if err := loadSeccomp(); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	err = syscall.Exec(argv0, s.Plan.Argv, s.Plan.Env)
	return fmt.Errorf("%s: %w", s.Plan.Argv[0], err)
}

// lookPath finds name on the PATH of env (not this process's).
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found on PATH inside the sandbox", name)
}

// dropCapabilities empties this thread's bounding, ambient, inheritable,
// permitted and effective sets, and locks the securebits so that exec as
// uid 0 (the sandbox's root, when the person is root) grants nothing.
func dropCapabilities() error {
	const bits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5 // NOROOT, NO_SETUID_FIXUP, KEEP_CAPS, each locked
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits&^(1<<4), 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("bounding set %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{}
	return unix.Capset(&hdr, &data[0])
}

// restrictLandlock confines the agent's filesystem access to reading
// what the view shows and writing its writable roots, its TCP connects to
// the doors (unless the persona opens its own loopback), and its signals
// and abstract sockets to the sandbox. A kernel without Landlock leaves
// the namespaces as the walls (Probe says so at start).
func restrictLandlock(p *Plan) error {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return nil
	}
	cfg := landlock.V7
	cfg.HandledAccessNet = ll.AccessNetConnectTCP
	if p.Loopback {
		cfg.HandledAccessNet = 0
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		// Refer: files move between folders of the writable roots
		// (mv, package managers); never out of them.
		landlock.RWDirs(append([]string{"/tmp"}, p.Writable...)...).WithRefer(),
		landlock.RWDirs("/var/tmp", "/run").WithRefer().IgnoreIfMissing(),
		// The sandbox's own minimal /dev: terminals need their ioctls.
		landlock.RWDirs("/dev").WithIoctlDev(),
	}
	for _, port := range p.Ports {
		rules = append(rules, landlock.ConnectTCP(uint16(port)))
	}
	cfg = cfg.BestEffort()
	if abi >= 7 {
		cfg = cfg.EnableLoggingForSubprocesses()
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	if fd < 0 {
		return nil
	}
	defer unix.Close(fd)
	return ll.LandlockRestrictSelf(fd, flags)
}
