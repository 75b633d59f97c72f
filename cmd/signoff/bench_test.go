package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
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
		"a vote's least work, each a POST as the client sees it (p50 of 60 each)",
		"the floor's pieces in series",
		"the design's minimum vote",
		"beside it the design's minimum vote ",
		"the design's minimum vote under the same load (4 clients",
		"(200 votes; a request made for each;",
		"verified votes/s: ",
		" in the loaded phase, ",
		" in the votes phase (target ≥ 5000",
		"votes phase (concurrency 4, -n 200, took ",
		"its 200 requests made and their votes signed before it",
		"; 0 the window did not reach",
		"(200 votes on 200 requests, each decided, sealed and its waiter answered in the window)",
		"a verified vote: the window's work",
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
	// 20 unloaded + 200 loaded + 200 for the votes phase, each decided once.
	if !regexp.MustCompile(`decided exactly once: yes — 420 requests, 420 decision records`).MatchString(report) {
		t.Errorf("not every request decided exactly once:\n%s", report)
	}
	if strings.Contains(report, "  cpu: ") {
		t.Errorf("a part of the CPU account is missing:\n%s", report)
	}
	if !regexp.MustCompile(`\(200 lifecycles`).MatchString(report) {
		t.Errorf("loaded phase did not run 200 lifecycles:\n%s", report)
	}
	checkSteps(t, report, 20)
}

// checkSteps: the report says where the unloaded votes' time went, each
// step of the API, the store and the audit log marked on every one of
// the votes (one a lifecycle: the owner's), the batch's beside the PING.
func checkSteps(t *testing.T, report string, votes int) {
	t.Helper()
	if !strings.Contains(report, "where an unloaded vote's time went in the gateway") {
		t.Fatalf("report has no steps:\n%s", report)
	}
	every := fmt.Sprintf("(n=%d)", votes)
	for _, step := range []string{
		"read the body", "verify: event id and BIP-340 signature", "judge the ballot; prepare its tally",
		"make its audit record", "after the tally: its outcome", "write the answer",
		"the vote's call in the gateway, in all",
	} {
		line := regexp.MustCompile(`(?m)^    ` + regexp.QuoteMeta(step) + `.*$`).FindString(report)
		if !strings.Contains(line, every) {
			t.Errorf("step %q: line %q, want it marked on each of the %d votes %s", step, line, votes, every)
		}
	}
	// A vote whose record rode in a batch already on its way (a seal's)
	// marks a wait instead: most are their own batch.
	script := regexp.MustCompile(`(?m)^    Redis: the batch's round trip \(the vote script\) +\S+  \(n=(\d+)\) the floor's PING \S+$`).FindStringSubmatch(report)
	if script == nil {
		t.Fatalf("no step for the batch's round trip beside the floor's PING:\n%s", report)
	}
	if n, _ := strconv.Atoi(script[1]); n < votes/2 {
		t.Errorf("the batch's round trip marked %d times of %d votes:\n%s", n, votes, report)
	}
	if !strings.Contains(report, "outside it: HTTP to and from the client") {
		t.Errorf("report does not say what is outside the gateway's call:\n%s", report)
	}
}
