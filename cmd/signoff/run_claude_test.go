//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// claudeCLI is the real Claude Code CLI for TestRealClaudeCodeHookInsideRun:
// $SIGNOFF_TEST_CLAUDE, which .ci/run installs from npm. Outside CI a
// missing CLI skips the test and says why; in CI it fails.
func claudeCLI(t *testing.T) string {
	p := os.Getenv("SIGNOFF_TEST_CLAUDE")
	if p == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("SIGNOFF_TEST_CLAUDE is not set: .ci/run installs @anthropic-ai/claude-code and sets it")
		}
		t.Skip("SIGNOFF_TEST_CLAUDE is not set (npm install @anthropic-ai/claude-code, then point it at node_modules/.bin/claude)")
	}
	if strings.HasPrefix(p, "/tmp/") {
		t.Fatalf("SIGNOFF_TEST_CLAUDE %s is under /tmp, which the sandbox hides: install it elsewhere", p)
	}
	return p
}

// fakeModel is a stand-in for the Anthropic Messages API that asks for
// one Bash call, then ends the turn when it sees the call's result.
type fakeModel struct {
	mu      sync.Mutex
	command string
	results []string
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		http.NotFound(w, r)
		return
	}
	var body struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var result string
	for _, m := range body.Messages {
		var blocks []map[string]any
		if json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				if b["type"] == "tool_result" {
					c, _ := json.Marshal(b["content"])
					result = string(c)
				}
			}
		}
	}
	hasBash := false
	for _, tl := range body.Tools {
		hasBash = hasBash || tl.Name == "Bash"
	}
	block := map[string]any{"type": "text", "text": "done"}
	stop := "end_turn"
	if result != "" {
		f.mu.Lock()
		f.results = append(f.results, result)
		f.mu.Unlock()
	} else if hasBash {
		block = map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": f.command, "description": "clean up"}}
		stop = "tool_use"
	}
	msg := map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": body.Model, "content": []any{block},
		"stop_reason": stop, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 1, "output_tokens": 1}}
	if !body.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	ev("message_start", map[string]any{"type": "message_start", "message": start})
	if block["type"] == "text" {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "done"}})
	} else {
		in, _ := json.Marshal(block["input"])
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{}}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
	}
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 1}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

// TestRealClaudeCodeHookInsideRun: the real Claude Code CLI runs inside
// signoff run, reaching a stand-in model through a door the person
// opened; the model asks for `rm -rf ~/precious`; Claude Code's
// PreToolUse hook (signoff hook claude-code, in the person's settings)
// reaches the gateway through the sandbox's door, a request waits, the
// person denies it outside, and Claude Code is told so and does not run
// the call.
func TestRealClaudeCodeHookInsideRun(t *testing.T) {
	claude := claudeCLI(t)
	model := &fakeModel{command: "rm -rf ~/precious"}
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	must(t, err)
	srv := &http.Server{Handler: model}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	host, port, _ := net.SplitHostPort(ln.Addr().String())

	w := newWorld(t)
	policy := filepath.Join(w.root, "policy.yaml")
	w.write(policy, fmt.Sprintf("hosts:\n  - host: %s\n    port: %s\n    access: read-write\n", host, port))
	w.serve.Process.Kill()
	w.serve.Wait()
	w.url = ""
	w.env = append(w.env, "SIGNOFF_NET_POLICY="+policy)
	w.startServe()
	w.write(filepath.Join(w.home, ".claude/settings.json"),
		`{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"signoff hook claude-code","timeout":120}]}]}}`+"\n")
	must(t, os.MkdirAll(filepath.Join(w.home, "precious"), 0o755))

	denied := make(chan string, 1)
	go func() { // the person, outside: deny what waits
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			res, err := http.Get(w.url + "/v1/requests?status=pending")
			if err == nil {
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if m := regexp.MustCompile(`"id":"([^"]+)"`).FindSubmatch(b); m != nil {
					out, _ := w.cmd(w.ws, "signoff", "deny", "--reason", "not my files", string(m[1])).CombinedOutput()
					denied <- string(b) + string(out)
					return
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		denied <- ""
	}()
	c := w.cmd(w.ws, "signoff", "run", "--quiet", "--", claude, "-p", "clean up", "--output-format", "text")
	c.Env = append(c.Env, "ANTHROPIC_API_KEY=sk-ant-test", "ANTHROPIC_BASE_URL=http://"+ln.Addr().String(),
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	out, err := c.CombinedOutput()
	seen := <-denied
	if err != nil {
		t.Fatalf("claude inside signoff run: %v\n%s", err, out)
	}
	if !strings.Contains(seen, "rm -rf ~/precious") {
		t.Fatalf("no request for the model's call reached the gateway (the hook did not run through the door): %q\n%s", seen, out)
	}
	model.mu.Lock()
	results := strings.Join(model.results, "\n")
	model.mu.Unlock()
	if !strings.Contains(results, "denied") || !strings.Contains(results, "not my files") {
		t.Errorf("Claude Code was not told of the denial; the tool results were: %s\n%s", results, out)
	}
	if _, err := os.Stat(filepath.Join(w.home, "precious")); err != nil {
		t.Errorf("the denied call ran: %v", err)
	}
}
