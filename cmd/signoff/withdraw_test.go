package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/adapters/discord/discordfake"
	"github.com/signoff/signoff/adapters/nostr/relaytest"
	"github.com/signoff/signoff/adapters/slack/slackfake"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// signoffBinary builds the command once per test run.
func signoffBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "signoff-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "signoff")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = err
			t.Logf("%s", out)
		}
	})
	if binErr != nil {
		t.Fatalf("go build: %v", binErr)
	}
	return binPath
}

// everywhere is a gateway whose persona posts to a fake Slack, a fake
// Discord and a local Nostr relay at once.
type everywhere struct {
	slack   *slackfake.Server
	discord *discordfake.Server
	relay   *relaytest.Relay
}

func gatewayEverywhere(t *testing.T) everywhere {
	t.Helper()
	e := everywhere{slack: slackfake.New(t), discord: discordfake.New(t), relay: relaytest.Start(t)}
	t.Setenv("SIGNOFF_SLACK_BOT_TOKEN", slackfake.BotToken)
	t.Setenv("SIGNOFF_SLACK_APP_TOKEN", slackfake.AppToken)
	t.Setenv("SIGNOFF_SLACK_API_URL", e.slack.APIURL)
	t.Setenv("SIGNOFF_DISCORD_BOT_TOKEN", strings.TrimPrefix(e.discord.Token, "Bot "))
	t.Setenv("SIGNOFF_DISCORD_API_URL", e.discord.URL)
	gateway(t, "name: demo\nowner:\n  name: alice\n  nostr: OWNER\n  slack: U01ALICE\n  discord: \"111111111111111111\"\ntimeout: 1m\n"+
		"channels:\n  - slack: C0123456\n  - discord: \"998877665544332211\"\n  - nostr:\n      relays: ["+e.relay.URL()+"]\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.discord.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	return e
}

// posted waits for the request's card on every platform.
func (e everywhere) posted(t *testing.T) (id string, slackTS, discordID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	post, err := e.slack.Next(ctx, "chat.postMessage")
	if err != nil {
		t.Fatal(err)
	}
	for len(e.discord.Posts()) == 0 {
		if ctx.Err() != nil {
			t.Fatal("nothing posted to Discord")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := awaitPending(t)
	return r.ID, post.TS, e.discord.Posts()[0].MessageID
}

// withdrawn waits for the request to be withdrawn and its card edited on
// each platform to say so.
func (e everywhere) withdrawn(t *testing.T, id, slackTS, discordID string, within time.Duration) *bot.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	c := httpapi.NewClient(os.Getenv("SIGNOFF_URL"))
	c.Token = os.Getenv("SIGNOFF_TOKEN")
	var r *bot.Request
	for {
		var err error
		if r, err = c.Get(ctx, id); err == nil && r.Status.Final() {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("request %s not withdrawn within %s", id, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r.Status != bot.Withdrawn {
		t.Fatalf("request %s is %s, want withdrawn", id, r.Status)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	up, err := e.slack.Next(ctx, "chat.update")
	if err != nil {
		t.Fatal(err)
	}
	if up.TS != slackTS || !strings.Contains(up.Text, "withdrawn") || strings.Contains(string(up.Blocks), `"button"`) {
		t.Errorf("Slack card edited to %q %s; want withdrawn and no buttons", up.Text, up.Blocks)
	}
	edit, err := e.discord.WaitEdit(ctx, discordID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(edit.Body), "withdrawn") || !strings.Contains(string(edit.Body), `"components":[]`) {
		t.Errorf("Discord message edited to %s; want withdrawn and no buttons", edit.Body)
	}
	for {
		evs := e.relay.Events(gonostr.Filter{Kinds: []int{1}})
		found := false
		for _, ev := range evs {
			if strings.Contains(ev.Content, "withdrawn") && strings.Contains(ev.Content, "approval needed") {
				found = true
			}
		}
		if found {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no Nostr reply saying withdrawn; relay has %d events", len(evs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Withdrawn is final: the owner's ✅ afterwards is ignored.
	if code, out, _ := cli("approve", id); code == 0 {
		t.Errorf("approve after withdraw exited 0: %s", out)
	}
	if r, _ := c.Get(context.Background(), id); r.Status != bot.Withdrawn {
		t.Errorf("after a late ✅ the request is %s", r.Status)
	}
	return r
}

// TestInterruptedRequestIsWithdrawn: Ctrl-C or SIGTERM on a waiting
// `signoff request` withdraws its request at once and every card says so.
func TestInterruptedRequestIsWithdrawn(t *testing.T) {
	bin := signoffBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			e := gatewayEverywhere(t)
			cmd := exec.Command(bin, "request", "--", "rm", "-rf", "/srv/data")
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			id, ts, mid := e.posted(t)
			waitFor(t, 5*time.Second, "the waiting line", stderr.String, func(s string) bool { return strings.Contains(s, "waiting:") })
			sent := time.Now()
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Errorf("request exited %v, want 1", err)
			}
			if !strings.Contains(stderr.String(), "request "+id+" withdrawn, not approved") {
				t.Errorf("stderr does not say withdrawn:\n%s", stderr.String())
			}
			r := e.withdrawn(t, id, ts, mid, 2*time.Second)
			if !strings.Contains(r.DecisionReason, "interrupted") {
				t.Errorf("reason %q", r.DecisionReason)
			}
			t.Logf("%s: withdrawn and edited everywhere %s after the signal", sig, time.Since(sent).Round(time.Millisecond))
		})
	}
}

// TestKilledHookWithdrawsItsRequest: an agent that SIGKILLs its hook
// (which cannot catch it) leaves a long-poll that just closes; the
// gateway withdraws the request after the grace period.
func TestKilledHookWithdrawsItsRequest(t *testing.T) {
	bin := signoffBinary(t)
	e := gatewayEverywhere(t)
	cmd := exec.Command(bin, "hook", "claude-code")
	cmd.Stdin = strings.NewReader(hookInput("Bash", map[string]any{"command": "git push --force origin main"}))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id, ts, mid := e.posted(t)
	time.Sleep(200 * time.Millisecond) // the hook is in its long-poll
	killed := time.Now()
	cmd.Process.Kill()
	cmd.Wait()
	r := e.withdrawn(t, id, ts, mid, bot.DefaultWithdrawGrace+5*time.Second)
	if !strings.Contains(r.DecisionReason, "went away") {
		t.Errorf("reason %q", r.DecisionReason)
	}
	t.Logf("withdrawn %s after SIGKILL (grace %s)", time.Since(killed).Round(time.Millisecond), bot.DefaultWithdrawGrace)
}

// TestCancelledMCPCallWithdrawsItsRequest: an MCP client that cancels its
// request_approval call withdraws the request.
func TestCancelledMCPCallWithdrawsItsRequest(t *testing.T) {
	bin := signoffBinary(t)
	e := gatewayEverywhere(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(bin, "mcp")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "SIGNOFF_LOG_LEVEL=debug")
	defer func() {
		if t.Failed() {
			t.Logf("mcp stderr:\n%s", stderr.String())
		}
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callCtx, callCancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "request_approval", Arguments: map[string]any{"action": "deploy v2 to prod"}})
		done <- err
	}()
	id, ts, mid := e.posted(t)
	time.Sleep(300 * time.Millisecond) // the call is in its long-poll
	callCancel()
	<-done
	r := e.withdrawn(t, id, ts, mid, bot.DefaultWithdrawGrace+5*time.Second)
	t.Logf("withdrawn: %s", r.DecisionReason)
}

// TestWithdrawCommand: `signoff withdraw ID` from a terminal; a second
// withdraw is refused, saying why.
func TestWithdrawCommand(t *testing.T) {
	e := gatewayEverywhere(t)
	_, _, code := startRequest(t, "--", "terraform", "destroy")
	id, ts, mid := e.posted(t)
	c, out, errs := cli("withdraw", "--reason", "wrong workspace", id)
	if c != 0 || !strings.Contains(out, "↩ withdrawn") {
		t.Fatalf("withdraw = %d %q %q", c, out, errs)
	}
	if got := <-code; got != 1 {
		t.Errorf("the waiting request exited %d, want 1", got)
	}
	r := e.withdrawn(t, id, ts, mid, 2*time.Second)
	if r.DecisionReason != "wrong workspace" {
		t.Errorf("reason %q", r.DecisionReason)
	}
	c, _, errs = cli("withdraw", id)
	if c != 1 || !strings.Contains(errs, "already withdrawn") {
		t.Errorf("second withdraw = %d %q", c, errs)
	}
	c, _, errs = cli("withdraw", "nosuchrequest000")
	if c != 2 || !strings.Contains(errs, "unknown request") {
		t.Errorf("unknown withdraw = %d %q", c, errs)
	}
}
