//go:build !linux

package httpapi

import "net"

// Elsewhere than Linux no hang-up watch: long-polls wait on their
// handler's goroutine.
func connWatchAvailable() bool { return false }

func watchConn(net.Conn, func()) (uint64, bool) { return 0, false }

func unwatchConn(net.Conn, uint64) {}
