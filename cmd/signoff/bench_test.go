package main

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestBenchSpawn runs `signoff bench --spawn` as a person would, small: its
// report has every field, no lifecycle failed, and the audit stream holds
// exactly one decision for each request it made. Timings are not asserted.
func TestBenchSpawn(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	t.Setenv("SIGNOFF_RATE_LIMIT", "") // bench sets it for its gateway; restored after
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, errs := &syncBuffer{}, &syncBuffer{}
	a := &app{stdout: out, stderr: errs}
	if code := a.run(ctx, []string{"bench", "--spawn", "-n", "200", "--concurrency", "4", "--unloaded", "20"}); code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	report := out.String()
	for _, field := range []string{
		"SIGNOFF_RATE_LIMIT=0",
		"loopback HTTP round trip",
		"verify one reaction",
		"Redis round trip (PING)",
		"floor    ",
		"vote path (reaction POST → answer)  p50",
		"reaction → waiter                   p50",
		"lifecycles/s",
		"votes/s (verified, counted)",
		"errors: 0",
		"ratio vote-p50/floor: ",
		"cpu, this process",
		"    bench client",
		"    gateway",
		"cpu, redis-server",
		"gateway + Redis: ",
	} {
		if !strings.Contains(report, field) {
			t.Errorf("report has no %q:\n%s", field, report)
		}
	}
	// 20 unloaded + 200 loaded requests, each decided once.
	if !regexp.MustCompile(`decided exactly once: yes — 220 requests, 220 decision records`).MatchString(report) {
		t.Errorf("not every request decided exactly once:\n%s", report)
	}
	if strings.Contains(report, "  cpu: ") {
		t.Errorf("a part of the CPU account is missing:\n%s", report)
	}
	if !regexp.MustCompile(`\(200 lifecycles`).MatchString(report) {
		t.Errorf("loaded phase did not run 200 lifecycles:\n%s", report)
	}
}
