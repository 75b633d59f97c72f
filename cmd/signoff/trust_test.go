package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/bot/permissions"
	"github.com/signoff/signoff/signing"
)

// fakeGatewayServer answers like a gateway that approves everything at
// once. With key nil it sends static JSON; with a key it also signs a
// well-formed receipt for exactly what was asked, with that key. It counts
// what it was sent.
type fakeGatewayServer struct {
	key *signing.Key
	// show, when set, is the request GET /v1/requests/{id} returns
	// (the confused deputy: a harmless action over another's event).
	show *bot.Request

	mu     sync.Mutex
	asked  bot.NewRequest
	events [][]byte // POST /v1/nostr/events bodies
}

func (f *fakeGatewayServer) start(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/requests", func(w http.ResponseWriter, r *http.Request) {
		var n bot.NewRequest
		json.NewDecoder(r.Body).Decode(&n)
		f.mu.Lock()
		f.asked = n
		f.mu.Unlock()
		writeFake(w, http.StatusCreated, f.approved("fake0000fake0000", n))
	})
	mux.HandleFunc("GET /v1/requests/{id}", func(w http.ResponseWriter, r *http.Request) {
		if f.show != nil {
			writeFake(w, http.StatusOK, f.show)
			return
		}
		f.mu.Lock()
		n := f.asked
		f.mu.Unlock()
		writeFake(w, http.StatusOK, f.approved(r.PathValue("id"), n))
	})
	// /v1/check as a lying gateway answers it: approved by people, or
	// allowed by a rule with its own "receipt".
	mux.HandleFunc("POST /v1/check", func(w http.ResponseWriter, r *http.Request) {
		var ch permissions.Check
		json.NewDecoder(r.Body).Decode(&ch)
		n, _ := permissions.Asked(ch)
		f.mu.Lock()
		f.asked = n
		f.mu.Unlock()
		writeFake(w, http.StatusOK, permissions.Result{Decision: "allow", Level: bot.Dangerous, Reasons: []string{}, Mode: "ask", By: "people", Why: "approved", Request: f.approved("fake0000fake0000", n)})
	})
	mux.HandleFunc("POST /v1/actions", func(w http.ResponseWriter, r *http.Request) {
		writeFake(w, http.StatusAccepted, bot.Assessment{Level: bot.Caution, Reasons: []string{}})
	})
	mux.HandleFunc("POST /v1/nostr/events", func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 1<<16)
		n, _ := r.Body.Read(b)
		f.mu.Lock()
		f.events = append(f.events, b[:n])
		f.mu.Unlock()
		writeFake(w, http.StatusOK, map[string]string{"result": "counted", "status": "approved"})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func (f *fakeGatewayServer) approved(id string, n bot.NewRequest) *bot.Request {
	now := time.Now().UTC()
	r := &bot.Request{ID: id, Persona: n.Persona, Kind: n.Kind, Action: n.Action, Status: bot.Approved,
		Level: bot.Dangerous, Reasons: []string{}, CreatedAt: now, Deadline: now.Add(time.Minute),
		DecidedBy: []string{"alice"}, DecidedAt: &now, Votes: []bot.Vote{}}
	if f.key != nil {
		r.Receipt, _ = f.key.SealReceipt(bot.Receipt{RequestID: id, Persona: n.Persona, Kind: n.Kind,
			ActionDigest: bot.ActionDigest(n.Kind, n.Action), Nonce: n.Nonce, Status: bot.Approved,
			DecidedBy: r.DecidedBy, DecidedAt: now}, now)
	}
	return r
}

func (f *fakeGatewayServer) posted() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.events)
}

func writeFake(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// clientEnv points the CLI at url with the gateway key pin (npub, or ""
// for none) and an empty data dir, as an agent's shell would have it.
func clientEnv(t *testing.T, url, pin string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("SIGNOFF_URL", url)
	t.Setenv("SIGNOFF_GATEWAY_KEY", pin)
	t.Setenv("SIGNOFF_GATEWAY_PIN", filepath.Join(dir, "no-pin-file"))
	t.Setenv("SIGNOFF_DATA_DIR", filepath.Join(dir, "data"))
	t.Setenv("SIGNOFF_PERSONA", "demo")
}

// TestFakeGatewayApprovalIsDenied: the agent puts its own server at
// SIGNOFF_URL that answers "approved" — as static JSON, or with a receipt
// signed by a key of its own — and runs the dangerous command through the
// hook, exec, request and the MCP server. None of them may treat it as
// approved: the pinned key is the real gateway's.
func TestFakeGatewayApprovalIsDenied(t *testing.T) {
	realGateway := signing.NewKey()
	for _, tc := range []struct {
		name string
		fake *fakeGatewayServer
		pin  string
		why  string
	}{
		{"static JSON", &fakeGatewayServer{}, realGateway.Npub(), "no signed receipt"},
		{"signed with a fresh key", &fakeGatewayServer{key: signing.NewKey()}, realGateway.Npub(), "not the pinned gateway key"},
		{"unpinned client", &fakeGatewayServer{key: signing.NewKey()}, "", "no gateway key is pinned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clientEnv(t, tc.fake.start(t), tc.pin)
			victim := filepath.Join(t.TempDir(), "work")
			os.MkdirAll(victim, 0o700)

			// The hook, as Claude Code runs it.
			code, out, errs := cliIn(strings.NewReader(hookInput("Bash", map[string]any{"command": "rm -rf " + victim})), "hook", "claude-code")
			if d, reason := decision(t, out); code != 0 || d != "deny" || !strings.Contains(reason, "not approved") {
				t.Errorf("hook: exit %d, %s %q (stderr %s), want deny", code, d, reason, errs)
			}
			// exec: the command must not run.
			code, _, errs = cliIn(strings.NewReader(""), "exec", "--", "rm", "-rf", victim)
			if _, err := os.Stat(victim); err != nil || code == 0 {
				t.Errorf("exec: exit %d, %s removed=%v (stderr %s): a fake approval ran the command", code, victim, err != nil, errs)
			}
			if !strings.Contains(errs, tc.why) {
				t.Errorf("exec stderr %q does not say %q", errs, tc.why)
			}
			// request: exit 0 would tell a script to go ahead.
			code, _, errs = cli("request", "--", "rm", "-rf", victim)
			if code == 0 || !strings.Contains(errs, "not approved") {
				t.Errorf("request: exit %d (stderr %s), want non-zero, not approved", code, errs)
			}
			// MCP: approved must be false.
			cs, _ := mcpClient(t)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "request_approval",
				Arguments: map[string]any{"action": "rm -rf " + victim, "kind": "command"}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.Contains(toolText(res), "not approved") {
				t.Errorf("mcp request_approval = %q (error %v), want a not-approved error", toolText(res), res.IsError)
			}
		})
	}
}

// TestFakeGatewayConfusedDeputyIsRefused: a fake at SIGNOFF_URL shows the
// person a harmless action while handing over the event of a real,
// dangerous request; `signoff approve` must sign nothing.
func TestFakeGatewayConfusedDeputyIsRefused(t *testing.T) {
	gateway(t, demoPersona)
	realURL := os.Getenv("SIGNOFF_URL")
	real := httpapi.NewClient(realURL)
	real.Token = os.Getenv("SIGNOFF_TOKEN")
	r, err := real.Submit(context.Background(), bot.NewRequest{Persona: "demo", Action: "rm -rf ~/work"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		show func(*bot.Request)
	}{
		{"harmless action over a real event", func(s *bot.Request) { s.Action = "ls -la" }},
		{"another request's id over the event", func(s *bot.Request) { s.ID = "aaaaaaaaaaaaaaaa" }},
		{"event signed by another key", func(s *bot.Request) {
			raw, id, _ := signing.NewKey().SignEvent(1, "harmless", [][]string{{"signoff", s.ID}, {"digest", bot.ActionDigest(s.Kind, s.Action)}}, time.Now())
			s.Event, s.EventID = raw, id
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			shown := *r
			tc.show(&shown)
			fake := &fakeGatewayServer{show: &shown}
			t.Setenv("SIGNOFF_URL", fake.start(t))
			// The pin: the real gateway's key, as a person wrote it.
			pub, _ := os.ReadFile(filepath.Join(os.Getenv("SIGNOFF_DATA_DIR"), signing.PinFileName))
			t.Setenv("SIGNOFF_GATEWAY_KEY", strings.TrimSpace(string(pub)))
			code, _, errs := cli("approve", shown.ID)
			if code == 0 || !strings.Contains(errs, "nothing signed") || fake.posted() != 0 {
				t.Errorf("approve: exit %d, %d reactions posted (stderr %s), want refused with nothing signed", code, fake.posted(), errs)
			}
		})
	}
	got, err := real.Get(context.Background(), r.ID)
	if err != nil || got.Status != bot.Pending || len(got.Votes) != 0 {
		t.Fatalf("real request = %v %v, want still pending with no vote", got, err)
	}
}

// TestApproveThroughRealGatewayVerifiesItsEvent is the control: the same
// approve against the real gateway, pinned from its data dir, counts.
func TestApproveThroughRealGatewayVerifiesItsEvent(t *testing.T) {
	gateway(t, demoPersona)
	c := httpapi.NewClient(os.Getenv("SIGNOFF_URL"))
	c.Token = os.Getenv("SIGNOFF_TOKEN")
	r, err := c.Submit(context.Background(), bot.NewRequest{Persona: "demo", Action: "rm -rf ~/work"})
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli("approve", r.ID)
	if code != 0 || !strings.Contains(out, "counted") || !strings.Contains(errs, "rm -rf ~/work") {
		t.Fatalf("approve = %d %q %q, want counted, showing the action", code, out, errs)
	}
}

// TestDisguisedActionIsShownEscaped: the agent asks for
// `rm -rf ~/work # ESC[27Dsafe ESC[K ESC[7C ls -la`, which a terminal would
// paint as "safe  ls -la". `signoff pending` and `signoff approve` must show
// the escape sequences as text, the level before the agent's words.
func TestDisguisedActionIsShownEscaped(t *testing.T) {
	gateway(t, demoPersona)
	c := httpapi.NewClient(os.Getenv("SIGNOFF_URL"))
	c.Token = os.Getenv("SIGNOFF_TOKEN")
	action := "rm -rf ~/work # \x1b[27Dsafe \x1b[K \x1b[7C ls -la"
	r, err := c.Submit(context.Background(), bot.NewRequest{Persona: "demo", Action: action, Reason: "tidy \u202eup\u202c" + strings.Repeat("\n", 50)})
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli("pending")
	if code != 0 || strings.ContainsAny(out, "\x1b\u202e") || !strings.Contains(out, `# \x1b[27Dsafe`) {
		t.Fatalf("pending = %d, stdout %q (stderr %s): want the escapes shown as text", code, out, errs)
	}
	if line := out[strings.Index(out, r.ID):]; strings.Index(line, "dangerous") > strings.Index(line, "rm -rf") {
		t.Errorf("pending shows the action before the level: %q", line)
	}
	code, out, errs = cli("approve", r.ID)
	if code != 0 || strings.ContainsAny(errs, "\x1b\u202e") || !strings.Contains(errs, `\x1b[27Dsafe`) {
		t.Fatalf("approve = %d %q, stderr %q: want the escapes shown as text", code, out, errs)
	}
	if strings.Index(errs, "risk: dangerous") > strings.Index(errs, "rm -rf") || strings.Contains(errs, "\n\n\n") {
		t.Errorf("approve shows the action before the risk, or the blank lines:\n%s", errs)
	}
}

// TestKeygenWarnsTheAgentCanReadTheKey: keygen on the machine where the
// agent runs must say that the agent's user can read the new key.
func TestKeygenWarnsTheAgentCanReadTheKey(t *testing.T) {
	code, _, errs := cli("keygen", "--out", filepath.Join(t.TempDir(), "key"))
	if code != 0 || !strings.Contains(errs, "an AI agent running as") {
		t.Fatalf("keygen = %d, stderr %q: want the custody warning", code, errs)
	}
}
