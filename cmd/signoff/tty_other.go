//go:build !linux

package main

import (
	"io"
	"os"
)

// isTerminal reports whether r is a character device (a terminal, most
// likely; on Linux the termios check is exact).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && f.Name() != os.DevNull
}
