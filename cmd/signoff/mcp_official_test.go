package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
)

// mcpClientScript is the official TypeScript SDK's client calling
// request_approval through `signoff mcp` over stdio, with the timeout the
// docs give (resetTimeoutOnProgress) or without it. It prints one JSON
// line per progress notification and one for the outcome.
const mcpClientScript = `import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
const [bin, timeout, reset] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: bin, args: ["mcp", "--persona", "demo"], env: process.env, stderr: "inherit" });
const client = new Client({ name: "signoff-test", version: "0" });
await client.connect(transport);
const start = Date.now();
const at = () => (Date.now() - start) / 1000;
try {
  const res = await client.callTool({ name: "request_approval", arguments: { action: "rm -rf /tmp/signoff-mcp-ts", kind: "command" } }, undefined, {
    timeout: Number(timeout), resetTimeoutOnProgress: reset === "reset",
    onprogress: (p) => console.log(JSON.stringify({ at: at(), message: p.message })),
  });
  console.log(JSON.stringify({ at: at(), result: res.structuredContent, isError: res.isError ?? false }));
} catch (e) {
  console.log(JSON.stringify({ at: at(), error: String(e) }));
}
await client.close();
`

type mcpLine struct {
	At      float64        `json:"at"`
	Message string         `json:"message"`
	Result  map[string]any `json:"result"`
	IsError bool           `json:"isError"`
	Error   string         `json:"error"`
}

// officialMCPCall runs the official client; lines receives its output.
func officialMCPCall(t *testing.T, npm string, timeout, reset string) (lines chan mcpLine, done chan error) {
	t.Helper()
	dir, err := os.MkdirTemp(npm, "t-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	script := filepath.Join(dir, "client.mjs")
	os.WriteFile(script, []byte(mcpClientScript), 0o644)
	cmd := exec.Command("node", script, signoffBinary(t), timeout, reset)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines, done = make(chan mcpLine, 100), make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l mcpLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				lines <- l
			}
		}
		close(lines)
		done <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return lines, done
}

// TestMCPOfficialClientWaitsForPeople: the official TypeScript client,
// with a request timeout shorter than the person takes (4s here, above
// signoff's 3s between progress notifications; the SDK's 60s in life) and resetTimeoutOnProgress as docs/agents.md says,
// hears progress within the first second, keeps waiting past its timeout,
// and gets the approval; without resetTimeoutOnProgress the same client
// gives up at its timeout (what the docs warn of).
func TestMCPOfficialClientWaitsForPeople(t *testing.T) {
	npm := officialNPM(t)
	gateway(t, demoPersona)

	lines, done := officialMCPCall(t, npm, "4000", "reset")
	// The first progress comes within a second; the person finds the
	// request in the pending list.
	var first mcpLine
	select {
	case l, ok := <-lines:
		if !ok || l.Message == "" {
			t.Fatalf("the client ended before any progress (%+v): %v", l, <-done)
		}
		first = l
	case <-time.After(30 * time.Second):
		t.Fatal("no progress in 30s")
	}
	var id string
	waitFor(t, 10*time.Second, "the request in the pending list", func() string {
		rs, _ := gatewayClient().List(context.Background(), bot.Filter{Status: bot.Pending})
		if len(rs) == 1 {
			id = rs[0].ID
		}
		return id
	}, func(s string) bool { return s != "" })
	if first.At > 1 {
		t.Errorf("first progress at %.2fs, want within the first second", first.At)
	}
	time.Sleep(9 * time.Second) // the person takes longer than twice the client's timeout
	if code, out, errs := cli("approve", id); code != 0 {
		t.Fatalf("approve = %d %s %s", code, out, errs)
	}
	var last mcpLine
	for l := range lines {
		last = l
	}
	if err := <-done; err != nil {
		t.Fatalf("client: %v", err)
	}
	if last.Error != "" || last.IsError || last.Result["approved"] != true || last.At < 9 {
		t.Errorf("the official client got %+v; want approved after more than 9s", last)
	}

	// Without resetTimeoutOnProgress, the client's own timeout ends the call.
	lines, done = officialMCPCall(t, npm, "4000", "")
	var end mcpLine
	for l := range lines {
		end = l
	}
	<-done
	if !strings.Contains(end.Error, "timed out") || end.At > 6 {
		t.Errorf("without resetTimeoutOnProgress the client ended with %+v; want its timeout at 4s", end)
	}
}
