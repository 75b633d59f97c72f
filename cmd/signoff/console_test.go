package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/signing"
)

// The console's tests drive a real Chromium (Debian's `chromium`)
// against the real `signoff serve` wiring. A machine without it fails
// them: they never skip.

const chromiumMissing = "chromium is not installed: the console's tests need a real browser " +
	"(apt-get install -y chromium; .ci/run installs it)"

// browser starts a headless Chromium of the given window size with a
// NIP-07 stand-in (window.nostr) that signs with secretHex, injected
// before any script of any page runs; "" injects none.
func browser(t testing.TB, width, height int, secretHex string) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal(chromiumMissing)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:0:0],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // as root in CI
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(width, height),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	acts := []chromedp.Action[chromedp.Void]{chromedp.EmulateViewport(int64(width), int64(height))}
	if secretHex != "" {
		acts = append(acts, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: fmt.Sprintf(nip07StandIn, secretHex)})
			return err
		}))
	}
	if err := chromedp.Do(ctx, acts...); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	// What the page says (errors, CSP refusals) goes into the test's log.
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			t.Logf("browser console: %v", m)
		}
	}()
	return ctx
}

// nip07StandIn is a signer extension's window.nostr, signing with the
// vendored noble library the console itself loads. window.__signCalls
// counts the events it was asked to sign.
const nip07StandIn = `(() => {
  const SK = '%s';
  window.__signCalls = 0;
  let lib = null;
  const load = () => lib || (lib = Promise.all([
    import('/console/vendor/noble-curves/secp256k1.js'),
    import('/console/vendor/noble-hashes/sha2.js'),
    import('/console/vendor/noble-hashes/utils.js')]));
  const pub = async () => { const [c, , u] = await load(); return u.bytesToHex(c.schnorr.getPublicKey(u.hexToBytes(SK))); };
  window.nostr = {
    getPublicKey: pub,
    async signEvent(ev) {
      window.__signCalls++;
      const [c, h, u] = await load();
      const e = { pubkey: await pub(), created_at: ev.created_at, kind: ev.kind, tags: ev.tags, content: ev.content };
      const id = u.bytesToHex(h.sha256(new TextEncoder().encode(JSON.stringify([0, e.pubkey, e.created_at, e.kind, e.tags, e.content]))));
      const sig = u.bytesToHex(c.schnorr.sign(u.hexToBytes(id), u.hexToBytes(SK)));
      return Object.assign(e, { id, sig });
    },
  };
})();`

// ownerSecret is the hex secret of the key file startGateway wrote.
func ownerSecret(t testing.TB, keyFile string) string {
	t.Helper()
	k, _, err := signing.LoadOrCreateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	_, v, err := nip19.Decode(k.Nsec())
	if err != nil {
		t.Fatal(err)
	}
	return v.(string)
}

// consoleLink runs `signoff console` and returns the link it prints.
func consoleLink(t testing.TB, args ...string) string {
	t.Helper()
	code, out, errs := cli(append([]string{"console", "--no-open"}, args...)...)
	if code != 0 {
		t.Fatalf("signoff console = %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	link := strings.TrimSpace(lastLine(out))
	if !strings.Contains(link, "/console/#") {
		t.Fatalf("signoff console printed %q, want a /console/# link", link)
	}
	return link
}

// openConsole navigates to link and waits until the feed's first list is
// shown.
func openConsole(t testing.TB, ctx context.Context, link string) {
	t.Helper()
	inBrowser(t, ctx, chromedp.Navigate(link), chromedp.WaitVisible(css(`body[data-loaded]`)))
}

// inBrowser runs steps in the page, failing the test (with the page's
// text) if one fails or all take over 20s.
func inBrowser(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, steps...); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`body`)))
		t.Fatalf("browser: %v\npage text:\n%s", err, body)
	}
}

// read runs a that returns a value.
func read[T any](t testing.TB, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, a)
	if err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`body`)))
		t.Fatalf("browser: %v\npage text:\n%s", err, body)
	}
	return v
}

// css is a CSS selector.
func css(s string) chromedp.CSS { return chromedp.CSS(s) }

func apiClient() *httpapi.Client {
	c := httpapi.NewClient(os.Getenv("SIGNOFF_URL"))
	c.Token = os.Getenv("SIGNOFF_TOKEN")
	return c
}

func pendingCard(id string) string { return `#pending-list article[data-id="` + id + `"]` }
func historyCard(id string) string { return `#history-list article[data-id="` + id + `"]` }

func TestConsoleApprovesLiveAndTheAgentGetsItsReceipt(t *testing.T) {
	keyFile := gateway(t, demoPersona)
	link := consoleLink(t)
	ctx := browser(t, 1280, 900, ownerSecret(t, keyFile))
	openConsole(t, ctx, link)

	// Filed after the page loaded: it must arrive through the feed.
	id, result, code := startRequest(t, "--persona", "demo", "--reason", "clean the scratch space", "--", "rm", "-rf", "/tmp/scratch")
	inBrowser(t, ctx, chromedp.WaitVisible(css(pendingCard(id))))
	text := read(t, ctx, chromedp.Text(css(pendingCard(id))))
	for _, want := range []string{"DANGEROUS", "rm -rf /tmp/scratch", "clean the scratch space", "demo", "left", "the owner"} {
		if !strings.Contains(text, want) {
			t.Errorf("the card lacks %q:\n%s", want, text)
		}
	}
	if i, j := strings.Index(text, "recursive"), strings.Index(text, "rm -rf"); i < 0 || i > j {
		t.Errorf("the level's reasons do not come before the action:\n%s", text)
	}
	inBrowser(t, ctx, chromedp.Click(css(pendingCard(id)+` button.approve`)))
	select {
	case got := <-code:
		res := <-result
		if got != 0 || !strings.Contains(res[1], "✅ approved by alice") {
			t.Fatalf("the agent's request exited %d (want 0: approved, with a receipt from the pinned key):\n%s", got, res[1])
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the agent still waits 15s after Approve was clicked")
	}
	inBrowser(t, ctx, chromedp.WaitReady(css(historyCard(id))))
	r, err := apiClient().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Votes) != 1 || r.Votes[0].Proof != bot.ProofSigned || r.Votes[0].Name != "alice" {
		t.Fatalf("the vote is not alice's own signed reaction: %+v", r.Votes)
	}
	if err := signing.CheckApproval(r.GatewayKey, bot.NewRequest{Persona: "demo", Kind: r.Kind, Action: r.Action, Nonce: r.Nonce}, r); err != nil {
		t.Fatalf("the approval's receipt does not check: %v", err)
	}
}

func TestConsoleDeniesWithAReason(t *testing.T) {
	keyFile := gateway(t, demoPersona)
	id, result, code := startRequest(t, "--persona", "demo", "--reason", "tidy", "--", "git", "push", "--force")
	ctx := browser(t, 1280, 900, ownerSecret(t, keyFile))
	openConsole(t, ctx, consoleLink(t))
	inBrowser(t, ctx, chromedp.WaitVisible(css(pendingCard(id))))
	// Deny without a reason is refused by the page (nothing signed).
	inBrowser(t, ctx, chromedp.Click(css(pendingCard(id)+` button.deny`)),
		chromedp.WaitVisible(css(`#message.error`)))
	inBrowser(t, ctx,
		chromedp.SendKeys(css(pendingCard(id)+` input.vote-reason-input`), "push to a branch instead"),
		chromedp.Click(css(pendingCard(id)+` button.deny`)))
	select {
	case got := <-code:
		res := <-result
		if got != 1 || !strings.Contains(res[1], "push to a branch instead") {
			t.Fatalf("request exited %d, want 1 (denied) with the reason:\n%s", got, res[1])
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the agent still waits 15s after Deny was clicked")
	}
	inBrowser(t, ctx, chromedp.WaitReady(css(historyCard(id))))
}

// An agent's action with terminal controls, bidi overrides and markup is
// shown inert: every hidden character as a visible escape, the markup as
// text, nothing run.
func TestAgentCannotHideOrRunAnythingInTheConsole(t *testing.T) {
	keyFile := gateway(t, demoPersona)
	ctx := browser(t, 1280, 900, ownerSecret(t, keyFile))
	openConsole(t, ctx, consoleLink(t))
	action := "echo safe \u202Efdp.exe\u202C\x1b[2K\x1b[1A<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\"> rm -rf ~"
	r, err := apiClient().Submit(context.Background(), bot.NewRequest{Persona: "demo", Kind: bot.KindText, Action: action, Reason: "<b>trust me</b>\u2066"})
	if err != nil {
		t.Fatal(err)
	}
	inBrowser(t, ctx, chromedp.WaitVisible(css(pendingCard(r.ID))))
	shown := read(t, ctx, chromedp.TextContent(css(pendingCard(r.ID)+` pre.action`)))
	html := read(t, ctx, chromedp.InnerHTML(css(pendingCard(r.ID))))
	pwned := read(t, ctx, chromedp.Evaluate[bool](`!!window.__pwned`))
	scripts := read(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#pending-list script').length`))
	imgs := read(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#pending-list img').length`))
	want := `echo safe \u202efdp.exe\u202c\x1b[2K\x1b[1A<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> rm -rf ~`
	if shown != want {
		t.Errorf("the action is shown as\n%q\nwant\n%q", shown, want)
	}
	if bot.Escape(action) != want {
		t.Errorf("the console's escaping differs from the CLI's: %q", bot.Escape(action))
	}
	if pwned || scripts != 0 || imgs != 0 {
		t.Fatalf("the agent's markup ran or became elements (pwned %v, scripts %d, imgs %d)", pwned, scripts, imgs)
	}
	for _, c := range []string{"\u202e", "\u202c", "\u2066", "\x1b"} {
		if strings.Contains(html, c) {
			t.Errorf("the card's HTML holds the raw character %q", c)
		}
	}
	if !strings.Contains(html, `\u2066`) || !strings.Contains(html, "&lt;b&gt;trust me&lt;/b&gt;") {
		t.Errorf("the agent's reason is not shown escaped:\n%s", html)
	}
}

// A gateway that shows a request whose event is not signed by the pinned
// key gets nothing signed: the page refuses before the extension is asked.
func TestConsoleRefusesARequestNotSignedByThePinnedKey(t *testing.T) {
	keyFile := gateway(t, demoPersona)
	id, _, _ := startRequest(t, "--persona", "demo", "--", "rm", "-rf", "/srv")
	link := consoleLink(t)
	// The same link with another key pinned: as if this gateway were a
	// swapped one, whose key the person never pinned.
	other := signing.NewKey().PublicKey()
	u, _ := url.Parse(link)
	frag, _ := url.ParseQuery(u.Fragment)
	frag.Set("pin", other)
	u.Fragment = frag.Encode()
	ctx := browser(t, 1280, 900, ownerSecret(t, keyFile))
	openConsole(t, ctx, u.String())
	inBrowser(t, ctx, chromedp.WaitVisible(css(pendingCard(id))),
		chromedp.Click(css(pendingCard(id)+` button.approve`)),
		chromedp.WaitVisible(css(`#message.error`)))
	msg := read(t, ctx, chromedp.Text(css(`#message`)))
	calls := read(t, ctx, chromedp.Evaluate[int](`window.__signCalls`))
	if !strings.Contains(msg, "not the pinned gateway key") || calls != 0 {
		t.Fatalf("message %q, signer asked %d times: want a refusal before any signing", msg, calls)
	}
	if r, _ := apiClient().Get(context.Background(), id); r == nil || len(r.Votes) != 0 || r.Status != bot.Pending {
		t.Fatalf("a vote reached the gateway: %+v", r)
	}
	note := read(t, ctx, chromedp.Text(css(`#signer-note`)))
	if !strings.Contains(note, "WARNING") {
		t.Errorf("the page does not warn that the gateway's key is not the pinned one: %q", note)
	}
}

// The console without a token shows nothing but how to get one.
func TestConsoleWithoutATokenShowsOnlyHowToGetOne(t *testing.T) {
	gateway(t, demoPersona)
	id, _, _ := startRequest(t, "--persona", "demo", "--", "rm", "-rf", "/srv")
	ctx := browser(t, 1280, 900, "")
	inBrowser(t, ctx, chromedp.Navigate(os.Getenv("SIGNOFF_URL")+"/console/"), chromedp.WaitVisible(css(`#login`)))
	text := read(t, ctx, chromedp.Text(css(`body`)))
	if !strings.Contains(text, "signoff console") || strings.Contains(text, id) || strings.Contains(text, "/srv") {
		t.Fatalf("without a token the page shows:\n%s", text)
	}
	// And the feed itself answers nothing without one.
	resp, err := http.Get(os.Getenv("SIGNOFF_URL") + "/v1/console/feed")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("feed without a token = %d, want 401", resp.StatusCode)
	}
}

// A page of another origin can neither read the console's data nor act:
// no CORS header is ever given, the token is a header a page cannot
// attach for another origin without a preflight the gateway refuses, and
// no cookie exists to ride along.
func TestAnotherOriginCannotReadOrActThroughTheConsole(t *testing.T) {
	keyFile := gateway(t, demoPersona)
	id, _, _ := startRequest(t, "--persona", "demo", "--", "rm", "-rf", "/srv")
	gw := os.Getenv("SIGNOFF_URL")
	tok := os.Getenv("SIGNOFF_TOKEN")
	evil := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>evil</title><body>evil</body>`)
	})}
	ln := listenLoopback(t)
	go evil.Serve(ln)
	t.Cleanup(func() { evil.Close() })

	ctx := browser(t, 1280, 900, ownerSecret(t, keyFile))
	// The console loaded once in this browser, so its session storage
	// holds the token (for its own origin only).
	openConsole(t, ctx, consoleLink(t))
	inBrowser(t, ctx, chromedp.Navigate("http://"+ln.Addr().String()+"/"), chromedp.WaitVisible(css(`body`)))
	script := fmt.Sprintf(`(async () => {
	  const out = {};
	  const try_ = async (name, f) => { try { const r = await f(); out[name] = 'read ' + r.status + ' ' + (await r.text()).slice(0, 80); } catch (e) { out[name] = 'blocked'; } };
	  await try_('feed', () => fetch(%[1]q + '/v1/console/feed', { headers: { Authorization: 'Bearer ' + %[2]q } }));
	  await try_('list', () => fetch(%[1]q + '/v1/requests?status=pending', { headers: { Authorization: 'Bearer ' + %[2]q } }));
	  await try_('plain', () => fetch(%[1]q + '/v1/requests?status=pending', { credentials: 'include' }));
	  await try_('withdraw', () => fetch(%[1]q + '/v1/requests/%[3]s/withdraw', { method: 'POST', mode: 'no-cors', credentials: 'include', body: '{}' }).then(r => ({ status: r.type, text: async () => '' })));
	  out.storage = String(sessionStorage.getItem('signoff.token'));
	  return out;
	})()`, gw, tok, id)
	got := read(t, ctx, chromedp.Evaluate[map[string]string](script, chromedp.EvalAwaitPromise))
	for _, k := range []string{"feed", "list", "plain"} {
		if got[k] != "blocked" {
			t.Errorf("another origin's %s call was not blocked: %s", k, got[k])
		}
	}
	if got["storage"] != "null" {
		t.Errorf("another origin sees the console's token: %s", got["storage"])
	}
	if r, _ := apiClient().Get(context.Background(), id); r == nil || r.Status != bot.Pending {
		t.Fatalf("another origin's blind POST changed the request: %+v", r)
	}
	// What the browser was told: no CORS header, the call refused.
	req, _ := http.NewRequest(http.MethodGet, gw+"/v1/console/feed", nil)
	req.Header.Set("Origin", "http://"+ln.Addr().String())
	req.Header.Set("Sec-Fetch-Site", "same-site")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("a cross-origin feed call = %d, ACAO %q; want 403 and no CORS header", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	// And the console's page may not be framed by it.
	resp, err = http.Get(gw + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Fatalf("the console's CSP is %q", csp)
	}
}

func TestConsoleCommandNeedsAReadToken(t *testing.T) {
	gateway(t, demoPersona)
	t.Setenv("SIGNOFF_TOKEN", "")
	code, _, errs := cli("console", "--no-open")
	if code == 0 || !strings.Contains(errs, "signoff tokens create --name console --scopes read:requests") {
		t.Fatalf("console without a token = %d, %q", code, errs)
	}
}

func listenLoopback(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// Always from the page makes the grant its card showed; the grants view
// lists it and revokes it with the admin token.
func TestConsoleAlwaysMakesAGrantAndRevokesIt(t *testing.T) {
	keyFile := gateway(t, rulesPersona)
	script := "rm -rf /nonexistent-signoff-console-test/*"
	done := background(nil, "exec", "--", "sh", "-c", script)
	r := awaitPending(t)
	ctx := browser(t, 1280, 900, ownerSecret(t, keyFile))
	openConsole(t, ctx, consoleLink(t, "--admin"))
	inBrowser(t, ctx, chromedp.WaitVisible(css(pendingCard(r.ID))))
	if text := read(t, ctx, chromedp.Text(css(pendingCard(r.ID)+` dd.grant`))); !strings.Contains(text, "exactly `sh -c '"+script+"'`") || !strings.Contains(text, "for 3h") {
		t.Fatalf("the card shows the grant as %q", text)
	}
	inBrowser(t, ctx, chromedp.Click(css(pendingCard(r.ID)+` button.always`)))
	if res := finished(t, done); res.code != 0 {
		t.Fatalf("exec after Always = %d %q", res.code, res.err)
	}
	grant := `#grant-list article[data-id="` + r.ID + `"]`
	inBrowser(t, ctx, chromedp.Click(css(`#tabs button[data-tab="access"]`)), chromedp.WaitVisible(css(grant)))
	inBrowser(t, ctx, chromedp.Click(css(grant+` button.revoke`)), chromedp.WaitNotPresent(css(grant)))
	code, out, _ := cli("grants", "--json")
	if code != 0 || strings.Contains(out, r.ID) {
		t.Fatalf("after revoking in the console, grants = %d %s", code, out)
	}
}

// Approve and save shows the revision's diff, the file's line diff and
// its check before anything is written; confirming approves with the
// person's signed reaction and writes the file.
func TestConsoleApprovesAndSavesANetworkRequest(t *testing.T) {
	policyFile, _, _ := netWorld(t)
	out := mustCLI(t, 0, "net", "request", "--host", "files.pythonhosted.org", "--port", "443", "--method", "PUT", "--path", "/up", "--reason", "upload the wheel")
	id := netIDRE.FindStringSubmatch(out)[1]
	before, _ := os.ReadFile(policyFile)
	keyFile := os.Getenv("SIGNOFF_KEY")
	ctx := browser(t, 1280, 900, ownerSecret(t, keyFile))
	openConsole(t, ctx, consoleLink(t, "--admin"))
	card := `#net-list article[data-id="` + id + `"]`
	inBrowser(t, ctx, chromedp.Click(css(`#tabs button[data-tab="network"]`)), chromedp.WaitVisible(css(card)))
	if text := read(t, ctx, chromedp.Text(css(card))); !strings.Contains(text, "upload the wheel") {
		t.Fatalf("the network card lacks the agent's reason:\n%s", text)
	}
	inBrowser(t, ctx, chromedp.Click(css(card+` button.save`)), chromedp.WaitVisible(css(card+` button.confirm-save`)))
	preview := read(t, ctx, chromedp.Text(css(card+` .preview`)))
	for _, want := range []string{"revision 1 would be revision 2", "files.pythonhosted.org:443", "+", policyFile + " would change", "check of the edited file: ok", "Nothing has been approved or written yet"} {
		if !strings.Contains(preview, want) {
			t.Errorf("the preview lacks %q:\n%s", want, preview)
		}
	}
	if now, _ := os.ReadFile(policyFile); string(now) != string(before) {
		t.Fatal("the preview changed the policy file")
	}
	if out := mustCLI(t, 0, "net", "requests"); !strings.Contains(out, id+"  pending") {
		t.Fatalf("the preview decided the request:\n%s", out)
	}
	inBrowser(t, ctx, chromedp.Click(css(card+` button.confirm-save`)), chromedp.WaitVisible(css(`#message.ok`)))
	if msg := read(t, ctx, chromedp.Text(css(`#message`))); !strings.Contains(msg, "wrote "+policyFile) {
		t.Fatalf("after approve and save the page says %q", msg)
	}
	now, _ := os.ReadFile(policyFile)
	if !strings.Contains(string(now), "PUT") || !strings.Contains(string(now), "# wheels and sdists") {
		t.Fatalf("the policy file was not saved with the rule, comments kept:\n%s", now)
	}
	if out := mustCLI(t, 0, "net", "requests"); !strings.Contains(out, id+"  approved") {
		t.Fatalf("the request is not approved:\n%s", out)
	}
	// The revisions view shows the new one with its diff.
	inBrowser(t, ctx, chromedp.Click(css(`#tabs button[data-tab="history"]`)), chromedp.Click(css(`#tabs button[data-tab="network"]`)))
	inBrowser(t, ctx, chromedp.WaitVisible(css(`#net-revisions article`)))
	if revs := read(t, ctx, chromedp.Text(css(`#net-revisions`))); !strings.Contains(revs, "revision 2") {
		t.Fatalf("revisions view:\n%s", revs)
	}
}

// The audit view shows the chain's state, verified against the published
// checkpoint, and a request's whole history with the signed evidence.
func TestConsoleShowsTheAuditChainAndARequestsHistory(t *testing.T) {
	keyFile := gateway(t, demoPersona)
	id, _, code := startRequest(t, "--persona", "demo", "--reason", "clean up", "--", "rm", "-rf", "/tmp/scratch")
	if c, out, errs := cli("approve", "--reason", "fine today", id); c != 0 {
		t.Fatalf("approve = %d %q %q", c, out, errs)
	}
	<-code
	ctx := browser(t, 1280, 900, ownerSecret(t, keyFile))
	openConsole(t, ctx, consoleLink(t))
	inBrowser(t, ctx, chromedp.Click(css(`#tabs button[data-tab="audit"]`)), chromedp.WaitVisible(css(`#audit-state h3`)))
	state := read(t, ctx, chromedp.Text(css(`#audit-state`)))
	if !strings.Contains(state, "verified: the chain is intact") || !strings.Contains(state, "records") {
		t.Fatalf("the audit state shows:\n%s", state)
	}
	inBrowser(t, ctx, chromedp.SendKeys(css(`#audit-id`), id), chromedp.Click(css(`#audit-form button`)), chromedp.WaitVisible(css(`#audit-history ol.records li.decision`)))
	hist := read(t, ctx, chromedp.Text(css(`#audit-history`)))
	for _, want := range []string{"request", "vote", "decision", "fine today", `"sig"`, "evidence (as received, signed)"} {
		if !strings.Contains(hist, want) {
			t.Errorf("the history lacks %q:\n%s", want, hist)
		}
	}
}

var shotsDir = flag.String("console.shots", "", "write the console's screenshots here (docs/console to refresh the docs' own)")

// TestConsoleScreenshots takes the docs' screenshots — the pending list,
// a request, the network diff, the audit view — at desktop and phone
// widths, and checks each is a PNG of the page as it should look.
func TestConsoleScreenshots(t *testing.T) {
	dir := *shotsDir
	if dir == "" {
		dir = t.TempDir()
	}
	netWorld(t)
	keyFile := os.Getenv("SIGNOFF_KEY")
	c := apiClient()
	ctx0 := context.Background()
	for _, n := range []bot.NewRequest{
		{Persona: "demo", Action: "terraform destroy -auto-approve -target=module.staging", Reason: "staging is being rebuilt from scratch this afternoon"},
		{Persona: "demo", Action: "git push --force origin main", Reason: "rewrite the last commit's message"},
		{Persona: "demo", Kind: bot.KindText, Action: "echo ok \u202Egnp.exe\u202C\x1b[1A <script>alert(1)</script>", Reason: "looks harmless"},
	} {
		if _, err := c.Submit(ctx0, n); err != nil {
			t.Fatal(err)
		}
	}
	id, _, code := startRequest(t, "--persona", "demo", "--reason", "free disk space", "--", "rm", "-rf", "/var/cache/build")
	if c, out, errs := cli("approve", "--reason", "the cache rebuilds", id); c != 0 {
		t.Fatalf("approve = %d %q %q", c, out, errs)
	}
	<-code
	out := mustCLI(t, 0, "net", "request", "--host", "files.pythonhosted.org", "--port", "443", "--method", "PUT", "--path", "/upload/wheel", "--reason", "publish the wheel we built")
	netID := netIDRE.FindStringSubmatch(out)[1]
	link := consoleLink(t, "--admin")
	secret := ownerSecret(t, keyFile)

	for _, size := range []struct {
		name string
		w, h int
	}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
		ctx := browser(t, size.w, size.h, secret)
		openConsole(t, ctx, link)
		shots := map[string][]byte{}
		shots["pending"] = read(t, ctx, chromedp.CaptureScreenshot())
		shots["request"] = read(t, ctx, chromedp.Screenshot(css(`#pending-list article:nth-child(3)`)))
		card := `#net-list article[data-id="` + netID + `"]`
		inBrowser(t, ctx, chromedp.Click(css(`#tabs button[data-tab="network"]`)), chromedp.WaitVisible(css(card)),
			chromedp.Click(css(card+` button.save`)), chromedp.WaitVisible(css(card+` button.confirm-save`)))
		shots["network"] = read(t, ctx, chromedp.Screenshot(css(card)))
		inBrowser(t, ctx, chromedp.Click(css(`#tabs button[data-tab="audit"]`)), chromedp.WaitVisible(css(`#audit-state h3`)),
			chromedp.SendKeys(css(`#audit-id`), id), chromedp.Click(css(`#audit-form button`)), chromedp.WaitVisible(css(`#audit-history ol.records li.decision`)))
		shots["audit"] = read(t, ctx, chromedp.CaptureScreenshot())
		for name, png := range shots {
			if len(png) < 1000 || string(png[1:4]) != "PNG" {
				t.Fatalf("%s %s: not a PNG (%d bytes)", size.name, name, len(png))
			}
			if err := os.WriteFile(filepath.Join(dir, size.name+"-"+name+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The page escapes agent text exactly as the CLI does (bot.Escape and
// bot.EscapeLines), checked in the browser on strings of every kind of
// character a display acts on.
func TestConsoleEscapesAsTheCLIDoes(t *testing.T) {
	gateway(t, demoPersona)
	ctx := browser(t, 1280, 900, "")
	openConsole(t, ctx, consoleLink(t))
	alphabet := []rune("aZ09 -_/\\\"'<>&;|$`~!" + "é漢字🙂\u0301\u00a0\u3000")
	alphabet = append(alphabet, '\t', '\n', '\r', 0, 7, 8, 0x0b, 0x0c, 0x1b, 0x1f, 0x7f, 0x80, 0x85, 0x9b, 0x9f,
		0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2060, 0x2066, 0x2067, 0x2068, 0x2069,
		0x2028, 0x2029, 0xfeff, 0xfff9, 0xe000, 0xf8ff, 0xf0000, 0x10fffd, 0xe0001, 0xe007f, 0x00ad, 0x061c, 0x180e)
	rng := rand.New(rand.NewPCG(31, 31))
	var cases []string
	for range 400 {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, r := range alphabet {
		cases = append(cases, string(r), "x"+string(r)+string(r)+string(r)+"y")
	}
	in, _ := json.Marshal(cases)
	got := read(t, ctx, chromedp.Evaluate[[][2]string](`(async () => {
	  const m = await import('/console/app.js');
	  const shown = (s, lines) => m.putText(document.createElement('pre'), s, lines).textContent;
	  return `+string(in)+`.flatMap(s => [[m.escText(s, false), m.escText(s, true)], [shown(s, false), shown(s, true)]]);
	})()`, chromedp.EvalAwaitPromise))
	if len(got) != 2*len(cases) {
		t.Fatalf("%d answers for %d cases", len(got), len(cases))
	}
	for i, s := range cases {
		for j, how := range []string{"escaped", "rendered"} {
			g := got[2*i+j]
			if want := bot.Escape(s); g[0] != want {
				t.Errorf("the page (%s) shows %q as %q; the CLI as %q", how, s, g[0], want)
			}
			if want := bot.EscapeLines(s); g[1] != want {
				t.Errorf("the page (%s) shows %q (lines kept) as %q; the CLI as %q", how, s, g[1], want)
			}
		}
	}
}

// The link carries a token that can only read, made for it, and the key
// the CLI pinned; --admin adds the admin token.
func TestConsoleLinkCarriesAReadOnlyTokenAndThePin(t *testing.T) {
	gateway(t, demoPersona)
	u, err := url.Parse(consoleLink(t, "--admin"))
	if err != nil {
		t.Fatal(err)
	}
	frag, _ := url.ParseQuery(u.Fragment)
	if u.RawQuery != "" || u.Path != "/console/" {
		t.Fatalf("link %s: the token must be in the fragment only", u)
	}
	c := httpapi.NewClient(os.Getenv("SIGNOFF_URL"))
	c.Token = frag.Get("token")
	self, err := c.SelfToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(self.Scopes) != 1 || self.Scopes[0] != "read:requests" || self.Expires.IsZero() {
		t.Fatalf("the link's token has scopes %v, expires %v; want read:requests alone, expiring", self.Scopes, self.Expires)
	}
	r, err := apiClient().Submit(context.Background(), bot.NewRequest{Persona: "demo", Action: "ls"})
	if err != nil {
		t.Fatal(err)
	}
	if frag.Get("pin") != r.GatewayKey {
		t.Fatalf("the link pins %q, the gateway's key is %q", frag.Get("pin"), r.GatewayKey)
	}
	if frag.Get("admin") != os.Getenv("SIGNOFF_TOKEN") {
		t.Fatal("--admin did not carry the admin token")
	}
}

// Deny on a network request takes a reason, signed with the person's ❌,
// and the agent's request keeps it.
func TestConsoleDeniesANetworkRequestWithAReason(t *testing.T) {
	policyFile, _, _ := netWorld(t)
	out := mustCLI(t, 0, "net", "request", "--host", "pypi.org", "--port", "443", "--reason", "everything on pypi")
	id := netIDRE.FindStringSubmatch(out)[1]
	before, _ := os.ReadFile(policyFile)
	ctx := browser(t, 1280, 900, ownerSecret(t, os.Getenv("SIGNOFF_KEY")))
	openConsole(t, ctx, consoleLink(t, "--admin"))
	card := `#net-list article[data-id="` + id + `"]`
	inBrowser(t, ctx, chromedp.Click(css(`#tabs button[data-tab="network"]`)), chromedp.WaitVisible(css(card)),
		chromedp.SendKeys(css(card+` input.vote-reason-input`), "ask for the index only, read-only"),
		chromedp.Click(css(card+` button.deny`)), chromedp.WaitVisible(css(`#message.ok`)))
	if out := mustCLI(t, 0, "net", "requests"); !strings.Contains(out, id+"  denied") || !strings.Contains(out, "ask for the index only, read-only") {
		t.Fatalf("after Deny in the console:\n%s", out)
	}
	if now, _ := os.ReadFile(policyFile); string(now) != string(before) {
		t.Fatal("a denial changed the policy file")
	}
}
