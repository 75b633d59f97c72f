package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// docBlock is one fenced block marked to be run, and where it is.
type docBlock struct {
	file string
	n    int // its number in its file, from 1
	text string
}

// readmeBlocks returns the fenced blocks of README.md and of every page in
// docs/ whose info string is "sh readme-test": the examples a person is
// told to paste, wherever the README's sections moved.
func readmeBlocks(t *testing.T) []docBlock {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	for _, path := range append([]string{"../../README.md"}, docs...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(path, "../../")
		var cur *strings.Builder
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			switch {
			case cur == nil && strings.TrimSpace(line) == "```sh readme-test":
				cur = &strings.Builder{}
			case cur != nil && strings.TrimSpace(line) == "```":
				n++
				blocks = append(blocks, docBlock{file: name, n: n, text: cur.String()})
				cur = nil
			case cur != nil:
				cur.WriteString(line + "\n")
			}
		}
	}
	return blocks
}

// TestReadmeExamples runs the marked shell blocks of the README and the
// docs, as written, against a gateway on a free port (localhost:8080
// becomes its address): each must exit 0 and no call may be refused as
// malformed. The README keeps at least one, and so does docs/api.md.
func TestReadmeExamples(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	blocks := readmeBlocks(t)
	for _, want := range []string{"README.md", "docs/api.md"} {
		if !slices.ContainsFunc(blocks, func(b docBlock) bool { return b.file == want }) {
			t.Fatalf("%s has no block marked sh readme-test", want)
		}
	}
	gateway(t, demoPersona)
	addr := strings.TrimPrefix(os.Getenv("SIGNOFF_URL"), "http://")
	for _, block := range blocks {
		where := fmt.Sprintf("%s block %d", block.file, block.n)
		script := strings.ReplaceAll(block.text, "localhost:8080", addr)
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s failed (%v):\n%s\noutput:\n%s", where, err, block.text, out)
			continue
		}
		for _, bad := range []string{`"code":"invalid"`, `"code":"not_found"`, `"code":"unauthorized"`} {
			if strings.Contains(string(out), bad) {
				t.Errorf("%s: a call was refused (%s):\n%s", where, bad, out)
			}
		}
		t.Logf("%s:\n%s", where, out)
	}
}

// TestMetricsSeries: /metrics has the pending gauge (counting a waiting
// request), the replica's waiters (the agent blocked on it), every outcome
// and platform at zero from the start.
func TestMetricsSeries(t *testing.T) {
	gateway(t, demoPersona)
	id, _, code := startRequest(t, "--", "rm", "-rf", "/tmp/x")
	if c, out, errs := cli("check", "--", "ls"); c != 0 { // a safe call: one /v1/check allow
		t.Fatalf("check = %d %s %s", c, out, errs)
	}
	scrape := func() string {
		resp, err := http.Get(os.Getenv("SIGNOFF_URL") + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// The agent's long-poll is parked a moment after its request exists.
	b := scrape()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(b, "\nsignoff_waiters 1\n") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		b = scrape()
	}
	for _, want := range []string{
		"\nsignoff_waiters 1\n",
		"signoff_pending_requests 1",
		`signoff_requests_total{outcome="withdrawn"} 0`, `signoff_requests_total{outcome="expired"} 0`,
		`signoff_votes_total{result="duplicate"} 0`,
		`signoff_post_errors_total{platform="slack"} 0`, `signoff_edit_errors_total{platform="discord"} 0`,
		`signoff_checks_total{decision="deny"} 0`, `signoff_checks_total{decision="allow"} 1`,
		`signoff_http_request_duration_seconds_count{route="POST /v1/requests"} 1`,
		`signoff_http_request_duration_seconds_bucket{route="POST /v1/check",le="+Inf"} 1`,
		`signoff_build_info{commit=`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	cli("withdraw", id)
	<-code
}
