package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// serve collects garbage at GOGC=400 unless the operator set GOGC, and
// leaves an operator's choice alone.
func TestServeGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	t.Setenv("GOGC", "")
	logs := startServe(t)
	if got := debug.SetGCPercent(100); got != serveGCPercent {
		t.Errorf("GC percent under serve without GOGC = %d, want %d", got, serveGCPercent)
	}
	if !strings.Contains(logs.String(), "GOGC=400") {
		t.Errorf("serve did not say which GOGC it runs with:\n%s", logs)
	}

	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150) // what the runtime made of it at start
	logs = startServe(t)
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("GC percent under serve with GOGC=150 = %d, want 150 (the operator's)", got)
	}
	if strings.Contains(logs.String(), "GOGC=400") {
		t.Errorf("serve claims GOGC=400 with GOGC=150 set:\n%s", logs)
	}
}
