package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// runInit is PID 1 of the sandbox: it builds the filesystem view, brings
// up loopback, serves the inside ends of the doors, starts Exec and
// reaps every orphan until the agent ends, then exits with its status
// (the kernel then ends whatever is left in the namespace).
func runInit() error {
	if os.Getpid() != 1 {
		return errors.New("the sandbox's init must be process 1 of its own namespace")
	}
	s, _, err := readSpec()
	if err != nil {
		return err
	}
	// Not dumpable: the agent, same user, cannot read this process's
	// memory or file descriptors through /proc.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl dumpable: %w", err)
	}
	doors, err := unix.Open(s.Doors, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the doors: %w", err)
	}
	if err := loopbackUp(); err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := buildView(s); err != nil {
		return fmt.Errorf("walls: %w", err)
	}
	for _, p := range s.Ports {
		ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)))
		if err != nil {
			return fmt.Errorf("door on port %d: %w", p.Port, err)
		}
		go forward(ln, fmt.Sprintf("/proc/self/fd/%d/%s", doors, p.Socket))
	}

	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	proc, err := startAgent(&s.Plan)
	if err != nil {
		return err
	}
	go func() {
		for sg := range sigs {
			_ = proc.Signal(sg)
		}
	}()
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("wait: %w", err)
		}
		if pid != proc.Pid {
			continue // an orphan reaped
		}
		switch {
		case ws.Exited():
			os.Exit(ws.ExitStatus())
		case ws.Signaled():
			os.Exit(128 + int(ws.Signal()))
		}
	}
}

// readSpec reads the spec from fd 3.
func readSpec() (*spec, []byte, error) {
	f := os.NewFile(3, "spec")
	if f == nil {
		return nil, nil, errors.New("no spec on fd 3")
	}
	raw, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("read spec: %w", err)
	}
	var s spec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, fmt.Errorf("read spec: %w", err)
	}
	return &s, raw, nil
}

// forward carries each connection on ln to the Unix socket at sock.
func forward(ln net.Listener, sock string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("unix", sock)
			if err != nil {
				return
			}
			defer u.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(u, c); closeWrite(u); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, u); closeWrite(c); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// loopbackUp sets lo up: the namespace's only interface.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// buildView makes the sandbox's filesystem on s.Root and moves into it:
// the whole tree read-only; private /tmp, /var/tmp, /run, /dev/shm; a
// minimal /dev and a new /proc; the writable roots; the masks; the guard
// files read-only again; then pivot_root.
func buildView(s *spec) error {
	root := s.Root
	at := func(p string) string { return filepath.Join(root, p) }
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := unix.Mount("/", root, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind /: %w", err)
	}
	if err := readOnlyBelow(root); err != nil {
		return err
	}

	// Private scratch: nothing of the person's /tmp or /run (sockets
	// there are doors: docker, dbus, agents) is seen.
	for _, d := range []string{"/tmp", "/var/tmp", "/run", "/dev/shm"} {
		if fi, err := os.Lstat(at(d)); err != nil || !fi.IsDir() {
			continue
		}
		mode := "mode=1777"
		if d == "/run" {
			mode = "mode=0755"
		}
		if err := unix.Mount("tmpfs", at(d), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, mode); err != nil {
			return fmt.Errorf("private %s: %w", d, err)
		}
	}
	for path, from := range s.Plan.Files {
		if !strings.HasPrefix(path, "/tmp/") {
			return fmt.Errorf("file %s: only the private /tmp takes files", path)
		}
		data, err := os.ReadFile(from) // still the person's view: before pivot_root
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(at(path)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(at(path), data, 0o444); err != nil {
			return err
		}
	}
	if err := makeDev(at("/dev")); err != nil {
		return fmt.Errorf("/dev: %w", err)
	}
	if err := unix.Mount("proc", at("/proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("/proc: %w", err)
	}
	for _, p := range []string{"sys", "sysrq-trigger", "irq", "bus", "fs"} {
		t := at("/proc/" + p)
		if _, err := os.Lstat(t); err != nil {
			continue
		}
		if err := bindReadOnly(t, t); err != nil {
			return fmt.Errorf("/proc/%s: %w", p, err)
		}
	}

	for _, w := range s.Plan.Writable {
		t := at(w)
		if err := os.MkdirAll(t, 0o755); err != nil {
			return fmt.Errorf("writable %s: %w", w, err)
		}
		if err := unix.Mount(w, t, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("writable %s: %w", w, err)
		}
	}
	for _, m := range s.Plan.Hidden {
		t := at(m.Path)
		if _, err := os.Lstat(t); err != nil {
			continue // not in the view: nothing to hide
		}
		var err error
		if m.Dir {
			err = unix.Mount("tmpfs", t, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|unix.MS_RDONLY, "size=4k,mode=0555")
		} else {
			err = bindReadOnly(s.Empty, t)
		}
		if err != nil {
			return fmt.Errorf("hide %s: %w", m.Path, err)
		}
	}
	for _, g := range s.Plan.Guarded {
		t := at(g)
		if _, err := os.Lstat(t); err != nil {
			return fmt.Errorf("guard %s: %w", g, err)
		}
		if err := bindReadOnly(t, t); err != nil {
			return fmt.Errorf("guard %s: %w", g, err)
		}
	}

	if err := os.Chdir(root); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the old root: %w", err)
	}
	return os.Chdir("/")
}

// bindReadOnly binds src onto dst (recursively) and makes every mount
// there read-only.
func bindReadOnly(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return readOnlyBelow(dst)
}

// readOnlyBelow remounts every mount at or under dir read-only, keeping
// each one's other flags (the kernel refuses to drop locked ones).
func readOnlyBelow(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			points = append(points, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, mp := range points {
		var st unix.Statfs_t
		if err := unix.Statfs(mp, &st); err != nil {
			if errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOENT) {
				continue // under a mount made later, or not ours to see
			}
			return fmt.Errorf("statfs %s: %w", mp, err)
		}
		flags := uintptr(unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY) | keptFlags(st.Flags)
		if err := unix.Mount("", mp, "", flags, ""); err != nil {
			if errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOENT) {
				continue
			}
			return fmt.Errorf("read-only %s: %w", mp, err)
		}
	}
	return nil
}

// keptFlags are the statfs flags a bind remount must repeat.
func keptFlags(f int64) uintptr {
	var out uintptr
	for _, p := range [][2]uintptr{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(f)&p[0] != 0 {
			out |= p[1]
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// makeDev mounts a minimal /dev: the harmless devices bound from the
// person's /dev, a devpts of the sandbox's own (not the person's other
// terminals), and the usual links. No disks, no memory devices.
func makeDev(dev string) error {
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755"); err != nil {
		return err
	}
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		t := filepath.Join(dev, d)
		if err := os.WriteFile(t, nil, 0o644); err != nil {
			return err
		}
		if err := unix.Mount("/dev/"+d, t, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := os.Mkdir(filepath.Join(dev, d), 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("devpts", filepath.Join(dev, "pts"), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620"); err != nil {
		return fmt.Errorf("devpts: %w", err)
	}
	if err := unix.Mount("tmpfs", filepath.Join(dev, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("shm: %w", err)
	}
	for link, to := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(to, filepath.Join(dev, link)); err != nil {
			return err
		}
	}
	return nil
}
