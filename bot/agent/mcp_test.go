package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/agent"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/risk"
)

// connect serves o on in-memory transports and returns a client session.
// progress, when not nil, receives every progress notification.
func connect(t *testing.T, o agent.MCPOptions, progress func(*mcp.ProgressNotificationParams)) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := agent.NewMCPServer(o).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	var opts *mcp.ClientOptions
	if progress != nil {
		opts = &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress(r.Params)
		}}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return v
}

func TestMCPListTools(t *testing.T) {
	cs := connect(t, agent.MCPOptions{Classifier: risk.Default()}, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}
	for name, required := range map[string]string{"request_approval": "action", "classify": "command"} {
		tool := tools[name]
		if tool == nil {
			t.Fatalf("tool %s missing from %v", name, res.Tools)
		}
		schema, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(schema), `"required":["`+required+`"]`) {
			t.Errorf("%s input schema %s does not require exactly %s", name, schema, required)
		}
		if tool.OutputSchema == nil || tool.Description == "" {
			t.Errorf("%s lacks an output schema or description", name)
		}
	}
	if len(tools) != 2 {
		t.Errorf("%d tools, want 2", len(tools))
	}
}

func TestMCPClassify(t *testing.T) {
	cs := connect(t, agent.MCPOptions{Classifier: risk.Default()}, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		cmd   string
		level bot.Level
	}{
		{"ls -la", bot.Safe},
		{"npm install left-pad", bot.Caution},
		{"bash -c 'rm -rf /'", bot.Dangerous},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "classify", Arguments: map[string]any{"command": tc.cmd}})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			t.Fatalf("classify %q: error %s", tc.cmd, text(res))
		}
		v := structured[agent.Verdict](t, res)
		if v.Command != tc.cmd || v.Level != tc.level || v.Reasons == nil {
			t.Errorf("classify %q = %+v, want level %s", tc.cmd, v, tc.level)
		}
		if text(res) != v.String() {
			t.Errorf("text %q, want %q", text(res), v.String())
		}
	}
}

func TestMCPBadInput(t *testing.T) {
	l := newLive(t, time.Minute)
	cs := connect(t, agent.MCPOptions{Classifier: risk.Default(), Gateway: l.client, Persona: "demo"}, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		tool string
		args any
		want string
	}{
		{"classify without command", "classify", map[string]any{}, "command"},
		{"classify with a number", "classify", map[string]any{"command": 42}, "string"},
		{"classify empty", "classify", map[string]any{"command": "  "}, "empty"},
		{"classify extra field", "classify", map[string]any{"command": "ls", "sudo": true}, "sudo"},
		{"approval without action", "request_approval", map[string]any{"reason": "x"}, "action"},
		{"approval empty action", "request_approval", map[string]any{"action": ""}, "action is empty"},
		{"approval unknown persona", "request_approval", map[string]any{"action": "deploy", "persona": "nope"}, `unknown persona "nope"`},
		{"approval bad kind", "request_approval", map[string]any{"action": "deploy", "kind": "magic"}, "kind"},
		{"approval huge action", "request_approval", map[string]any{"action": strings.Repeat("a", bot.MaxActionLen+1)}, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatalf("protocol error %v, want a tool error", err)
			}
			if !res.IsError || !strings.Contains(text(res), tc.want) {
				t.Errorf("got IsError=%v %q, want an error with %q", res.IsError, text(res), tc.want)
			}
		})
	}
	if rs, _ := l.env.Gateway.List(ctx, bot.Filter{}); len(rs) != 0 {
		t.Errorf("bad input created %d requests", len(rs))
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope"}); err == nil {
		t.Error("unknown tool: no error")
	}
}

// TestMCPLockedPersona: a server started for one persona refuses calls
// naming another, so the agent cannot pick its own electorate.
func TestMCPLockedPersona(t *testing.T) {
	l := newLive(t, time.Minute)
	cs := connect(t, agent.MCPOptions{Gateway: l.client, Persona: "demo", LockPersona: true}, nil)
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "request_approval", Arguments: map[string]any{"action": "deploy", "persona": "lenient"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), `asks persona "demo" only`) {
		t.Fatalf("got IsError=%v %q, want a refusal naming the locked persona", res.IsError, text(res))
	}
	if rs, _ := l.env.Gateway.List(ctx, bot.Filter{}); len(rs) != 0 {
		t.Errorf("the refused call created %d requests", len(rs))
	}
}

func TestMCPRequestApproval(t *testing.T) {
	for _, tc := range []struct {
		react    string
		status   bot.Status
		approved bool
		text     string
	}{
		{"✅", bot.Approved, true, "you may proceed"},
		{"❌", bot.Denied, false, "do not proceed"},
	} {
		t.Run(string(tc.status), func(t *testing.T) {
			l := newLive(t, time.Minute)
			var (
				mu       sync.Mutex
				progress []*mcp.ProgressNotificationParams
			)
			cs := connect(t, agent.MCPOptions{Classifier: risk.Default(), Gateway: l.client, Persona: "demo", Poll: 100 * time.Millisecond, ProgressEvery: 50 * time.Millisecond, Verify: l.verify},
				func(p *mcp.ProgressNotificationParams) {
					mu.Lock()
					progress = append(progress, p)
					mu.Unlock()
				})
			// Answer only after a progress notification naming the request went out.
			answered := make(chan *bot.Request, 1)
			go func() {
				for range 200 {
					mu.Lock()
					n := 0
					for _, p := range progress {
						if strings.HasPrefix(p.Message, "request ") {
							n++
						}
					}
					mu.Unlock()
					if n > 0 {
						answered <- <-l.answer(t, tc.react)
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
				answered <- nil
			}()
			params := &mcp.CallToolParams{Name: "request_approval", Arguments: map[string]any{
				"action": "git push --force origin main", "reason": "rewrite history", "kind": "command"}}
			params.SetProgressToken("tok-1")
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			r := <-answered
			if r == nil {
				t.Fatal("no progress notification, or no request reached the gateway")
			}
			if res.IsError {
				t.Fatalf("tool error: %s", text(res))
			}
			out := structured[agent.ApprovalOut](t, res)
			if out.RequestID != r.ID || out.Status != string(tc.status) || out.Approved != tc.approved ||
				len(out.DecidedBy) != 1 || out.DecidedBy[0] != "alice" || out.Level != string(bot.Dangerous) || len(out.Reasons) == 0 {
				t.Errorf("out = %+v, want %s by alice for %s, dangerous with reasons", out, tc.status, r.ID)
			}
			if r.Action != "git push --force origin main" || r.Reason != "rewrite history" || r.Persona != "demo" || r.Kind != bot.KindCommand {
				t.Errorf("request = %+v", r)
			}
			if !strings.Contains(text(res), tc.text) || !strings.Contains(text(res), r.ID) {
				t.Errorf("text %q lacks %q or the id", text(res), tc.text)
			}
			mu.Lock()
			defer mu.Unlock()
			var p *mcp.ProgressNotificationParams
			for _, q := range progress {
				if strings.Contains(q.Message, r.ID) {
					p = q
					break
				}
			}
			if p == nil {
				t.Fatalf("no progress named request %s", r.ID)
			}
			if p.ProgressToken != "tok-1" || !strings.Contains(p.Message, r.ID) || !strings.Contains(p.Message, "left") || p.Total < 59 {
				t.Errorf("progress %+v", p)
			}
			for i := 1; i < len(progress); i++ {
				if progress[i].Progress <= progress[i-1].Progress {
					t.Errorf("progress went %v then %v", progress[i-1].Progress, progress[i].Progress)
				}
			}
		})
	}
}

func TestMCPRequestApprovalFailsClosed(t *testing.T) {
	t.Run("expired", func(t *testing.T) {
		l := newLive(t, 300*time.Millisecond)
		cs := connect(t, agent.MCPOptions{Gateway: l.client, Persona: "demo"}, nil)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "request_approval", Arguments: map[string]any{"action": "deploy v2 to prod"}})
		if err != nil {
			t.Fatal(err)
		}
		out := structured[agent.ApprovalOut](t, res)
		if out.Status != string(bot.Expired) || out.Approved || !strings.Contains(out.Reason, "silence is not consent") || !strings.Contains(text(res), "do not proceed") {
			t.Errorf("out = %+v, text %q; want expired, not approved", out, text(res))
		}
	})
	t.Run("gateway unreachable", func(t *testing.T) {
		cs := connect(t, agent.MCPOptions{Gateway: httpapi.NewClient("http://127.0.0.1:1"), Persona: "demo"}, nil)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "request_approval", Arguments: map[string]any{"action": "deploy"}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(text(res), "cannot reach the gateway") || !strings.Contains(text(res), "not approved") {
			t.Errorf("got IsError=%v %q", res.IsError, text(res))
		}
	})
	t.Run("client gives up", func(t *testing.T) {
		l := newLive(t, time.Minute)
		cs := connect(t, agent.MCPOptions{Gateway: l.client, Persona: "demo"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "request_approval", Arguments: map[string]any{"action": "deploy"}}); err == nil {
			t.Error("no error after the client's deadline")
		}
	})
}

// TestMCPProgressFromTheFirstSecond: the real gateway's check holds the
// call while people decide (up to 50s before it even names the request),
// and still the client hears progress at once and every ProgressEvery, so
// a client that resets its timeout on progress keeps waiting.
func TestMCPProgressFromTheFirstSecond(t *testing.T) {
	l := newLive(t, time.Minute)
	var (
		mu    sync.Mutex
		times []time.Duration
	)
	start := time.Now()
	cs := connect(t, agent.MCPOptions{Checker: l.client, Gateway: l.client, Persona: "demo", ProgressEvery: 200 * time.Millisecond, Verify: l.verify},
		func(p *mcp.ProgressNotificationParams) {
			mu.Lock()
			times = append(times, time.Since(start))
			mu.Unlock()
		})
	params := &mcp.CallToolParams{Name: "request_approval", Arguments: map[string]any{"action": "deploy v2 to prod"}}
	params.SetProgressToken("tok")
	ctx, cancel := context.WithTimeout(context.Background(), 1100*time.Millisecond)
	defer cancel()
	start = time.Now()
	cs.CallTool(ctx, params) // ends by ctx: nobody answers
	mu.Lock()
	defer mu.Unlock()
	if len(times) < 3 || times[0] > time.Second {
		t.Fatalf("progress at %v: want the first within a second and more every 200ms", times)
	}
}
