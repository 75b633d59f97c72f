package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
)

// Door is a way out of the sandbox: a TCP port on the sandbox's loopback
// whose connections are carried to Serve, outside.
type Door struct {
	Name  string // "proxy", "gateway": names its socket
	Port  int
	Serve func(ctx context.Context, ln net.Listener) error
}

// Stdio is the agent's standard streams.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// spec is what Init and Exec are told, through a pipe on fd 3.
type spec struct {
	Plan  Plan   `json:"plan"`
	Root  string `json:"root"`  // the empty directory the view is built on
	Doors string `json:"doors"` // the directory of the doors' sockets
	Empty string `json:"empty"` // an empty read-only file, for masks
	Ports []port `json:"ports"`
}

type port struct {
	Port   int    `json:"port"`
	Socket string `json:"socket"`
}

const (
	initArg  = "__sandbox-init"
	execArg  = "__sandbox-exec"
	probeArg = "__sandbox-probe"
)

// IsStage reports whether args (os.Args[1:]) start one of the sandbox's
// inner stages, which main must run before anything else.
func IsStage(args []string) bool {
	return len(args) > 0 && (args[0] == initArg || args[0] == execArg || args[0] == probeArg)
}

// RunStage runs the inner stage args names and never returns.
func RunStage(args []string) {
	var err error
	switch args[0] {
	case initArg:
		err = runInit()
	case execArg:
		err = runExec()
	case probeArg:
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "signoff run: %v\n", err)
	os.Exit(126)
}

// Run starts plan's command in the sandbox, serves doors until it ends,
// and returns its exit status as a shell reports it. An error means the
// sandbox did not start (nothing ran).
func Run(ctx context.Context, plan *Plan, doors []Door, stdio Stdio) (int, error) {
	if err := Require(); err != nil {
		return 2, err
	}
	dir, err := os.MkdirTemp("", "signoff-run-")
	if err != nil {
		return 2, fmt.Errorf("cannot make the sandbox's folder: %w", err)
	}
	defer os.RemoveAll(dir)
	s := spec{Plan: *plan, Root: filepath.Join(dir, "root"), Doors: filepath.Join(dir, "doors"), Empty: filepath.Join(dir, "empty")}
	for _, d := range []string{s.Root, s.Doors} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return 2, fmt.Errorf("cannot make the sandbox's folder: %w", err)
		}
	}
	if err := os.WriteFile(s.Empty, nil, 0o444); err != nil {
		return 2, fmt.Errorf("cannot make the sandbox's folder: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for _, d := range doors {
		sock := d.Name + ".sock"
		ln, err := net.Listen("unix", filepath.Join(s.Doors, sock))
		if err != nil {
			return 2, fmt.Errorf("cannot open the %s door: %w", d.Name, err)
		}
		s.Ports = append(s.Ports, port{Port: d.Port, Socket: sock})
		wg.Add(2)
		go func() { defer wg.Done(); _ = d.Serve(ctx, ln) }()
		go func() { defer wg.Done(); <-ctx.Done(); ln.Close() }()
	}

	made, err := makeStandIns(plan.StandIns)
	defer removeStandIns(made)
	if err != nil {
		return 2, err
	}

	r, w, err := os.Pipe()
	if err != nil {
		return 2, err
	}
	self, err := os.Executable()
	if err != nil {
		return 2, fmt.Errorf("cannot find signoff's own binary: %w", err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	cmd := exec.Command(self, initArg)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.In, stdio.Out, stdio.Err
	cmd.ExtraFiles = []*os.File{r}
	cmd.Env = []string{} // the agent's environment travels in the spec
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
			syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	// The terminal's signals reach the agent itself (it is in the same
	// process group); the rest are passed on to Init, which passes them on.
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT)
	defer signal.Reset(syscall.SIGINT, syscall.SIGQUIT)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EINVAL) {
			return 2, namespacesError(err)
		}
		return 2, fmt.Errorf("cannot start the sandbox: %w", err)
	}
	r.Close()
	err = json.NewEncoder(w).Encode(s)
	w.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 2, fmt.Errorf("cannot start the sandbox: %w", err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sg := <-sigs:
				_ = cmd.Process.Signal(sg)
			case <-ctx.Done():
				_ = cmd.Process.Signal(syscall.SIGTERM)
				return
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	st := cmd.ProcessState
	if st == nil {
		return 2, err
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return st.ExitCode(), nil
}

// makeStandIns makes each missing guard path an empty file or folder for
// the sandbox's life; it returns those it made.
func makeStandIns(ms []Mask) ([]Mask, error) {
	var made []Mask
	for _, m := range ms {
		var err error
		if m.Dir {
			err = os.Mkdir(m.Path, 0o755)
		} else {
			var f *os.File
			f, err = os.OpenFile(m.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err == nil {
				_, err = f.WriteString(m.Content)
				f.Close()
			}
		}
		if errors.Is(err, os.ErrExist) {
			continue // made meanwhile: it is walled as it is
		}
		if err != nil {
			return made, fmt.Errorf("cannot make a stand-in for %s: %w", m.Path, err)
		}
		made = append(made, m)
	}
	return made, nil
}

// removeStandIns removes the stand-ins that are as they were made.
func removeStandIns(ms []Mask) {
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if m.Dir {
			_ = os.Remove(m.Path) // only if still empty
			continue
		}
		if b, err := os.ReadFile(m.Path); err == nil && string(b) == m.Content {
			_ = os.Remove(m.Path)
		}
	}
}
