//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"net"
	"runtime"
)

// Door is a way out of the sandbox (see run_linux.go).
type Door struct {
	Name  string
	Port  int
	Serve func(ctx context.Context, ln net.Listener) error
}

// Stdio is the agent's standard streams.
type Stdio struct {
	In       interface{ Read([]byte) (int, error) }
	Out, Err interface{ Write([]byte) (int, error) }
}

// Part is one kernel part the sandbox uses.
type Part struct {
	Name     string
	OK       bool
	Required bool
	Detail   string
	Fix      string
}

var errNotLinux = errors.New("signoff run's sandbox is built from Linux kernel features; " + runtime.GOOS + " has none of them here")

func IsStage(args []string) bool { return false }
func RunStage(args []string)     {}
func Require() error             { return errNotLinux }
func Probe() []Part {
	return []Part{{Name: "Linux namespaces", Required: true, Detail: errNotLinux.Error(), Fix: "run the agent on Linux"}}
}
func Run(ctx context.Context, plan *Plan, doors []Door, stdio Stdio) (int, error) {
	return 2, errNotLinux
}
