package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpClient runs `signoff mcp` in-process on pipes and connects a client.
func mcpClient(t *testing.T, args ...string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		a := &app{stdin: inR, stdout: outW, stderr: logs}
		done <- a.run(ctx, append([]string{"mcp"}, args...))
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v (logs: %s)", err, logs)
	}
	t.Cleanup(func() {
		cs.Close()
		inW.Close()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("signoff mcp exited %d after the client left: %s", code, logs)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("signoff mcp still running after the client left")
		}
		cancel()
	})
	return cs, logs
}

func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestMCPCommand(t *testing.T) {
	gateway(t, demoPersona)
	cs, _ := mcpClient(t)
	ctx := context.Background()
	res, err := cs.ListTools(ctx, nil)
	if err != nil || len(res.Tools) != 2 {
		t.Fatalf("ListTools = %v, %v", res, err)
	}
	cr, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "classify", Arguments: map[string]any{"command": "terraform destroy"}})
	if err != nil || cr.IsError || !strings.HasPrefix(toolText(cr), "dangerous: ") {
		t.Fatalf("classify = %v %v", toolText(cr), err)
	}

	type call struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan call, 1)
	go func() {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "request_approval", Arguments: map[string]any{"action": "deploy v2 to prod", "reason": "release day"}})
		done <- call{r, err}
	}()
	r := awaitPending(t)
	if r.Persona != "demo" || r.Action != "deploy v2 to prod" || r.Kind != "text" {
		t.Errorf("request = %s %s %q", r.Persona, r.Kind, r.Action)
	}
	if c, out, errs := cli("approve", r.ID); c != 0 {
		t.Fatalf("approve = %d %q %q", c, out, errs)
	}
	select {
	case got := <-done:
		if got.err != nil || got.res.IsError {
			t.Fatalf("request_approval: %v %v", got.err, got.res)
		}
		m, _ := got.res.StructuredContent.(map[string]any)
		if m["request_id"] != r.ID || m["status"] != "approved" || m["approved"] != true {
			t.Errorf("structured = %v", got.res.StructuredContent)
		}
		if !strings.Contains(toolText(got.res), "✅ approved by alice") {
			t.Errorf("text = %q", toolText(got.res))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("request_approval still waiting after approve")
	}
}

// TestMCPStdio builds the binary and speaks MCP to it over real stdio:
// stdout must carry nothing but the protocol.
func TestMCPStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "signoff")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "mcp")
	cmd.Env = append(os.Environ(), "SIGNOFF_URL=http://127.0.0.1:1", "SIGNOFF_LOG_LEVEL=debug")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	if cs.InitializeResult().ServerInfo.Name != "signoff" {
		t.Errorf("server = %+v", cs.InitializeResult().ServerInfo)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "classify", Arguments: map[string]any{"command": "ls"}})
	if err != nil || res.IsError || toolText(res) != "safe" {
		t.Fatalf("classify = %v %v", res, err)
	}
	// No gateway: request_approval fails closed, as a tool error.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "request_approval", Arguments: map[string]any{"action": "deploy"}})
	if err != nil || !res.IsError || !strings.Contains(toolText(res), "not approved") {
		t.Fatalf("request_approval without a gateway = %v %v", toolText(res), err)
	}
}
