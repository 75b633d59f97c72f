package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// Run runs argv as given — no shell — with the given stdin, stdout and
// stderr, passes the signals in forward on to it while it runs, and
// returns its exit status as a shell reports it: its own code, 128+N when
// signal N ended it, 127 when the program is not found, 126 when it
// cannot be started. The error, when not nil, says why it did not start.
func Run(argv []string, stdin io.Reader, stdout, stderr io.Writer, forward ...os.Signal) (int, error) {
	if len(argv) == 0 {
		return 2, errors.New("no command to run")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr

	var sigs chan os.Signal
	if len(forward) > 0 {
		// Catch before starting, so a signal in between is not lost to
		// the default action (which would leave the child running).
		sigs = make(chan os.Signal, 8)
		signal.Notify(sigs, forward...)
		defer signal.Stop(sigs)
	}
	if err := cmd.Start(); err != nil {
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return code, fmt.Errorf("%s: %w", argv[0], unwrapExec(err))
	}
	done := make(chan struct{})
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-relayed
	return exitCode(cmd, err)
}

func exitCode(cmd *exec.Cmd, err error) (int, error) {
	st := cmd.ProcessState
	if st == nil {
		return 126, err
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	if code := st.ExitCode(); code >= 0 {
		var ee *exec.ExitError
		if err == nil || errors.As(err, &ee) {
			return code, nil
		}
		// Exited, but copying its output failed.
		return code, err
	}
	return 126, err
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
