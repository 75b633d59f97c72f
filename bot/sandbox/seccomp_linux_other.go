//go:build linux && !amd64

package sandbox

import (
	"fmt"
	"runtime"
)

func loadSeccomp() error {
	return fmt.Errorf("the seccomp filter is written for x86-64, not %s", runtime.GOARCH)
}
