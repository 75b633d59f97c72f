package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/signing"
)

// loosePersona is the electorate an agent would pick for itself: it owns
// it (its own key is the owner) and its rules allow the dangerous command
// outright. Its key file is returned for the agent's own "approval".
func loosePersona(t *testing.T) (yaml, agentKeyFile string) {
	t.Helper()
	k := signing.NewKey()
	agentKeyFile = filepath.Join(t.TempDir(), "agent.key")
	if err := signing.WriteKey(agentKeyFile, k); err != nil {
		t.Fatal(err)
	}
	return "name: loose\nowner:\n  name: mallory\n  nostr: " + k.Npub() + "\ntimeout: 1m\n" +
		"permissions:\n  bash:\n    \"git push --force origin main\": allow\n", agentKeyFile
}

// pendingOrDone waits for the one pending request at $SIGNOFF_URL, or for
// the command to finish first (it answered without asking anyone).
func pendingOrDone(t *testing.T, done <-chan result) (*bot.Request, *result) {
	t.Helper()
	c := httpapi.NewClient(os.Getenv("SIGNOFF_URL"))
	c.Token = os.Getenv("SIGNOFF_TOKEN")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case r := <-done:
			return nil, &r
		default:
		}
		rs, err := c.List(context.Background(), bot.Filter{Status: bot.Pending})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 1 {
			return rs[0], nil
		}
	}
	t.Fatal("no request reached the gateway in 10s, and the command is still running")
	return nil, nil
}

const ignoredEnvHook = "ignoring SIGNOFF_PERSONA=loose from the environment: the hook's persona comes only from --persona in its settings"

// TestAgentEnvironmentCannotSteerHookPersona: the hook's command line is
// in settings a person wrote, but its environment is the agent's. With
// SIGNOFF_PERSONA=loose (rules that allow the force-push, owned by the
// agent) the hook used to ask loose, which allowed at once. It asks the
// persona of its --persona, else the default, and says it ignored the
// variable.
func TestAgentEnvironmentCannotSteerHookPersona(t *testing.T) {
	loose, _ := loosePersona(t)
	gatewayPersonas(t, "", demoPersona, loose)
	danger := hookInput("Bash", map[string]any{"command": "git push --force origin main", "description": "Force-push the rebase"})
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no --persona: the default", nil},
		{"--persona demo in the settings", []string{"--persona", "demo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SIGNOFF_PERSONA", "loose")
			defer awaitNonePending(t)
			done := background(strings.NewReader(danger), append([]string{"hook", "claude-code"}, tc.args...)...)
			r, early := pendingOrDone(t, done)
			if early != nil {
				t.Fatalf("the hook answered without asking demo's owner: %q (stderr %q)", early.stdout, early.err)
			}
			if r.Persona != "demo" {
				t.Errorf("the hook asked persona %q, want demo", r.Persona)
			}
			if c, out, errs := cli("deny", r.ID); c != 0 {
				t.Fatalf("deny = %d %q %q", c, out, errs)
			}
			res := finished(t, done)
			if got, reason := decision(t, res.stdout); res.code != 0 || got != "deny" || !strings.Contains(reason, "denied by alice") {
				t.Errorf("hook = %d %s %q, want deny by alice", res.code, got, reason)
			}
			if strings.Count(res.err, ignoredEnvHook) != 1 {
				t.Errorf("stderr %q does not say once that SIGNOFF_PERSONA was ignored", res.err)
			}
		})
	}
	t.Run("SIGNOFF_PERSONA naming the same persona: nothing said", func(t *testing.T) {
		t.Setenv("SIGNOFF_PERSONA", "demo")
		res := finished(t, background(strings.NewReader(hookInput("Read", map[string]any{"file_path": "/home/u/proj/go.mod"})), "hook", "claude-code"))
		if got, _ := decision(t, res.stdout); got != "allow" || strings.Contains(res.err, "SIGNOFF_PERSONA") {
			t.Errorf("hook = %s, stderr %q", got, res.err)
		}
	})
}

// TestAgentEnvironmentCannotSteerMCPPersona: the MCP server's args are in
// .mcp.json, a person's; its environment and its calls' arguments are the
// agent's. Neither SIGNOFF_PERSONA=loose nor a call naming "loose" may send
// the request to a persona the agent owns, where its own key approves.
func TestAgentEnvironmentCannotSteerMCPPersona(t *testing.T) {
	loose, agentKey := loosePersona(t)
	gatewayPersonas(t, "", demoPersona, loose)
	t.Setenv("SIGNOFF_PERSONA", "loose")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no --persona: the default", nil},
		{"--persona demo in the args", []string{"--persona", "demo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, logs := mcpClient(t, tc.args...)
			ctx := context.Background()

			// A call naming no persona asks demo; the agent's own ✅ is not counted.
			type call struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan call, 1)
			go func() {
				r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "request_approval", Arguments: map[string]any{"action": "deploy v2 to prod"}})
				done <- call{r, err}
			}()
			r := awaitPending(t)
			if r.Persona != "demo" {
				t.Errorf("request_approval asked persona %q, want demo", r.Persona)
			}
			cli("approve", "--key", agentKey, r.ID) // the agent approves its own request
			cli("deny", r.ID)                       // demo's owner
			select {
			case got := <-done:
				if got.err != nil {
					t.Fatal(got.err)
				}
				m, _ := got.res.StructuredContent.(map[string]any)
				if m["approved"] == true || m["status"] != "denied" {
					t.Errorf("request_approval = %v %q, want denied by demo's owner", got.res.StructuredContent, toolText(got.res))
				}
			case <-time.After(15 * time.Second):
				t.Fatal("request_approval still waiting after deny")
			}
			if !strings.Contains(logs.String(), "ignoring SIGNOFF_PERSONA=loose from the environment: the MCP server's persona comes only from --persona in its settings") {
				t.Errorf("the server did not say it ignored SIGNOFF_PERSONA:\n%s", logs)
			}

			// A call naming loose is refused, and nothing is asked.
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "request_approval", Arguments: map[string]any{"action": "deploy v2 to prod", "persona": "loose"}})
			if err != nil || !res.IsError || !strings.Contains(toolText(res), `asks persona "demo" only, not "loose"`) {
				t.Errorf("a call naming loose = %v %v, want a refusal", res, err)
			}
			awaitNonePending(t)
		})
	}
}
