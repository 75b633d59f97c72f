//go:build !unix

package risk

import "time"

func cpuTime() time.Duration { return 0 }
