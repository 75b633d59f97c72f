package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot/notify"
	"github.com/signoff/signoff/bot/notify/notifytest"
)

// TestFirstHour is a newcomer's first hour with the built binary, in a
// clone: init → serve (which reads init's persona, not the clone's
// example) → an agent's request → the person is told three ways (serve's log
// line with the commands, `pending --watch` with the bell and a desktop
// notification over a real D-Bus session bus, and the persona's notify
// command, which got the request on stdin) → approve → the agent proceeds.
func TestFirstHour(t *testing.T) {
	bin := signoffBinary(t)
	env, home, work := freshUser(t)
	busAddr, desktop := notifytest.SessionBus(t)

	code, out, errs := run(t, bin, env, work, "init")
	if code != 0 {
		t.Fatalf("init = %d\n%s%s", code, out, errs)
	}
	// The person turns on the notify example init left in the persona.
	personaPath := filepath.Join(home, ".config", "signoff", "personas", "demo.yaml")
	persona, _ := os.ReadFile(personaPath)
	if !strings.Contains(string(persona), "# notify:") {
		t.Fatalf("init's persona has no notify example:\n%s", persona)
	}
	notified := filepath.Join(t.TempDir(), "notified.json")
	persona = append(persona, []byte("notify:\n  command: [sh, -c, 'cat > \"$0\"', "+notified+"]\n  timeout: 5s\n")...)
	if err := os.WriteFile(personaPath, persona, 0o600); err != nil {
		t.Fatal(err)
	}

	// A clone: its configs/personas holds the ownerless example, which
	// must not shadow the persona init wrote.
	example, err := os.ReadFile(filepath.Join("..", "..", "configs", "personas", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(work, "configs", "personas"), 0o755)
	os.WriteFile(filepath.Join(work, "configs", "personas", "demo.yaml"), example, 0o644)

	// serve, as init said.
	serve := exec.Command(bin, "serve")
	serve.Env, serve.Dir = append(env, "SIGNOFF_LISTEN=127.0.0.1:0"), work
	pr, pw, _ := os.Pipe()
	serve.Stderr, serve.Stdout = pw, pw
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer func() { serve.Process.Signal(os.Interrupt); serve.Wait() }()
	var serveLog syncBuffer
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		re := regexp.MustCompile(`listening"? addr=(127\.0\.0\.1:\d+)`)
		for sc.Scan() {
			serveLog.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		env = append(env, "SIGNOFF_URL=http://"+a)
	case <-time.After(15 * time.Second):
		t.Fatalf("serve not listening:\n%s", serveLog.String())
	}

	if l := serveLog.String(); !strings.Contains(l, "owner=alice") || strings.Contains(l, "NO ONE CAN APPROVE") {
		t.Errorf("serve in a clone read the example, not init's persona:\n%s", l)
	}

	// The person watches (text, with the desktop) and a script watches (JSON).
	watch := exec.Command(bin, "pending", "--watch", "--every", "300ms")
	watch.Env, watch.Dir = append(env, "DBUS_SESSION_BUS_ADDRESS="+busAddr), work
	var watchOut, watchErr syncBuffer
	watch.Stdout, watch.Stderr = &watchOut, &watchErr
	watchJSON := exec.Command(bin, "pending", "--watch", "--json", "--every", "300ms", "--no-desktop")
	watchJSON.Env, watchJSON.Dir = env, work
	var jsonOut syncBuffer
	watchJSON.Stdout, watchJSON.Stderr = &jsonOut, &jsonOut
	for _, c := range []*exec.Cmd{watch, watchJSON} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { c.Process.Signal(os.Interrupt); c.Wait() }()
	}
	waitFor(t, 10*time.Second, "pending --watch to start", watchErr.String, func(s string) bool { return strings.Contains(s, "desktop notifications on") })

	// The agent asks.
	req := exec.Command(bin, "request", "--reason", "clean up", "--", "rm", "-rf", "/tmp/signoff-first-hour")
	req.Env, req.Dir = env, work
	var reqErr syncBuffer
	req.Stderr = &reqErr
	if err := req.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the request's id", reqErr.String, func(s string) bool { return idRE.MatchString(s) })
	id := idRE.FindStringSubmatch(reqErr.String())[1]

	// 1. serve's log line: what, and the commands that answer it.
	waitFor(t, 10*time.Second, "serve's line for the request", serveLog.String, func(s string) bool { return strings.Contains(s, "NEW REQUEST") })
	for _, want := range []string{"id=" + id, "persona=demo", "level=dangerous", `action="rm -rf /tmp/signoff-first-hour"`, `approve="signoff approve ` + id + `"`, `show="signoff show ` + id + `"`} {
		if !strings.Contains(serveLog.String(), want) {
			t.Errorf("serve's log lacks %s", want)
		}
	}
	// 2. pending --watch: a line with the commands, the bell, the desktop.
	waitFor(t, 10*time.Second, "pending --watch's line", watchOut.String, func(s string) bool { return strings.Contains(s, id+" (demo, dangerous)") })
	if s := watchOut.String(); !strings.Contains(s, "\a") || !strings.Contains(s, "signoff approve "+id) {
		t.Errorf("pending --watch rang no bell or gave no command:\n%q", s)
	}
	select {
	case n := <-desktop:
		if !strings.Contains(n.Summary, "demo") || !strings.Contains(n.Body, "rm -rf /tmp/signoff-first-hour") || !strings.Contains(n.Body, "signoff approve "+id) {
			t.Errorf("desktop notification %+v", n)
		}
	case <-time.After(10 * time.Second):
		t.Error("no desktop notification")
	}
	waitFor(t, 10*time.Second, "pending --watch --json's new event", jsonOut.String, func(s string) bool { return strings.Contains(s, `"event":"new"`) })
	var ev watchEvent
	if err := json.Unmarshal([]byte(strings.SplitN(jsonOut.String(), "\n", 2)[0]), &ev); err != nil || ev.ID != id || ev.Request == nil || ev.Approve != "signoff approve "+id {
		t.Errorf("pending --watch --json: %v %s", err, jsonOut.String())
	}
	// 3. the notify command ran, with the request on stdin.
	var got notify.Message
	waitFor(t, 10*time.Second, "the notify command's file", func() string { b, _ := os.ReadFile(notified); return string(b) }, func(s string) bool { return json.Unmarshal([]byte(s), &got) == nil })
	if got.Request == nil || got.Request.ID != id || got.Request.Reason != "clean up" || got.Approve != "signoff approve "+id {
		t.Errorf("the notify command read %+v", got)
	}

	// The person approves; the agent proceeds.
	if code, o, e := run(t, bin, env, work, "approve", id); code != 0 {
		t.Fatalf("approve = %d %s %s", code, o, e)
	}
	if err := req.Wait(); err != nil {
		t.Fatalf("request: %v\n%s", err, reqErr.String())
	}
	if !strings.Contains(reqErr.String(), "✅ approved by alice") {
		t.Errorf("request says:\n%s", reqErr.String())
	}
	waitFor(t, 10*time.Second, "pending --watch to see it go", watchOut.String, func(s string) bool { return strings.Contains(s, id+": ✅ approved by alice") })
	waitFor(t, 10*time.Second, "pending --watch --json's gone event", jsonOut.String, func(s string) bool {
		return strings.Contains(s, `"event":"gone"`) && strings.Contains(s, `"status":"approved"`)
	})
	t.Logf("$ signoff pending --watch\n%s", strings.ReplaceAll(watchOut.String(), "\a", "🔔"))
	t.Logf("$ signoff pending --watch --json\n%s", jsonOut.String())
}

// TestSmallThingsANewcomerHits: item 8 of issue 30, each as a person meets it.
func TestSmallThingsANewcomerHits(t *testing.T) {
	bin := signoffBinary(t)
	env, _, work := freshUser(t)

	t.Run("version", func(t *testing.T) {
		for _, args := range [][]string{{"--version"}, {"version"}} {
			code, out, errs := run(t, bin, env, work, args...)
			if code != 0 || !strings.HasPrefix(out, "signoff ") || !strings.Contains(out, "go1.") {
				t.Errorf("%v = %d %q %q", args, code, out, errs)
			}
		}
	})
	t.Run("completion", func(t *testing.T) {
		for _, sh := range []string{"bash", "zsh", "fish"} {
			code, out, errs := run(t, bin, env, work, "completion", sh)
			if code != 0 || !strings.Contains(out, "pending") || !strings.Contains(out, "approve") {
				t.Errorf("completion %s = %d %q", sh, code, errs)
			}
		}
		code, out, _ := run(t, bin, env, work, "completion", "bash")
		cmd := exec.Command("bash", "-c", out+"\nCOMP_WORDS=(signoff pen); COMP_CWORD=1; _signoff; echo \"${COMPREPLY[@]}\"")
		got, err := cmd.CombinedOutput()
		if code != 0 || err != nil || strings.TrimSpace(string(got)) != "pending" {
			t.Errorf("bash completion of 'signoff pen' = %q %v", got, err)
		}
	})
	t.Run("help exits 0 for every command", func(t *testing.T) {
		for name := range commands {
			code, out, errs := run(t, bin, env, work, name, "--help")
			if code != 0 || out+errs == "" {
				t.Errorf("signoff %s --help = %d, printed %d bytes", name, code, len(out+errs))
			}
		}
	})
	t.Run("serve --help lists the variables", func(t *testing.T) {
		_, out, errs := run(t, bin, env, work, "serve", "--help")
		for _, want := range []string{"SIGNOFF_LISTEN", "SIGNOFF_GATEWAY_KEY", "SIGNOFF_LOG_FORMAT", "SIGNOFF_NET_POLICY"} {
			if !strings.Contains(out+errs, want) {
				t.Errorf("serve --help lacks %s", want)
			}
		}
	})
	t.Run("usage names hook codex", func(t *testing.T) {
		_, out, _ := run(t, bin, env, work, "--help")
		if !strings.Contains(out, "signoff hook codex") || !strings.Contains(out, "pending [--json] [--watch]") {
			t.Errorf("usage:\n%s", out)
		}
	})
	t.Run("a readable key file is named", func(t *testing.T) {
		gateway(t, demoPersona)
		key := os.Getenv("SIGNOFF_KEY")
		os.Chmod(key, 0o644)
		_, _, errs := cli("approve", "aaaaaaaaaaaaaaaa")
		if !strings.Contains(errs, "can be read by others (mode 0644)") || !strings.Contains(errs, "chmod 600 "+key) {
			t.Errorf("approve with a 0644 key said:\n%s", errs)
		}
	})
	t.Run("publish on init's persona says why nowhere", func(t *testing.T) {
		gateway(t, demoPersona)
		code, _, errs := cli("publish", "hello")
		if code != 1 || !strings.Contains(errs, "has no channel that carries messages") || !strings.Contains(errs, "--relay") {
			t.Errorf("publish = %d:\n%s", code, errs)
		}
	})
	t.Run("a missing scope names the command that grants it", func(t *testing.T) {
		if got := missingScopes(`token "me" lacks scope request or check or read:requests`); got != "request,check,read:requests" {
			t.Errorf("missingScopes = %q", got)
		}
		gateway(t, demoPersona)
		_, out, errs := cli("tokens", "create", "--name", "me", "--scopes", "admin", "--json")
		var tok struct {
			Token string `json:"token"`
		}
		if err := json.Unmarshal([]byte(out), &tok); err != nil || tok.Token == "" {
			t.Fatalf("tokens create: %v %s %s", err, out, errs)
		}
		t.Setenv("SIGNOFF_TOKEN", tok.Token)
		code, _, errs := cli("pending")
		if code == 0 || !strings.Contains(errs, "lacks scope read:requests") || !strings.Contains(errs, "signoff tokens create --name me --scopes read:requests") {
			t.Errorf("pending with an admin-only token = %d:\n%s", code, errs)
		}
	})
}

// FuzzMissingScopes: the gateway's error text is outside input; the
// command printed from it never carries spaces or anything but scopes.
func FuzzMissingScopes(f *testing.F) {
	f.Add(`token "me" lacks scope read:requests`)
	f.Add(`token "me" lacks scope request or check or read:requests; ask an admin`)
	f.Add("lacks scope ")
	f.Fuzz(func(t *testing.T, msg string) {
		got := missingScopes(msg)
		if strings.ContainsAny(got, " \t\n") {
			t.Errorf("missingScopes(%q) = %q has spaces", msg, got)
		}
		if !strings.Contains(msg, "lacks scope ") && got != "" {
			t.Errorf("missingScopes(%q) = %q from a message naming no scope", msg, got)
		}
	})
}

// TestLogFormatJSON: SIGNOFF_LOG_FORMAT=json gives one JSON object a line;
// a value it cannot read is said, and text is used.
func TestLogFormatJSON(t *testing.T) {
	var b strings.Builder
	log, err := (&config{LogLevel: "info", LogFormat: "json"}).logger(&b)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("NEW REQUEST waiting for an answer", "id", "x")
	var line map[string]any
	if err := json.Unmarshal([]byte(b.String()), &line); err != nil || line["msg"] != "NEW REQUEST waiting for an answer" || line["id"] != "x" {
		t.Errorf("json log line %q: %v", b.String(), err)
	}
	if _, err := (&config{LogLevel: "info", LogFormat: "yaml"}).logger(&b); err == nil || !strings.Contains(err.Error(), "SIGNOFF_LOG_FORMAT") {
		t.Errorf("an unknown format: %v", err)
	}
}
