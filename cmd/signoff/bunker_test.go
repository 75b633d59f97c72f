package main

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip04"
	"github.com/nbd-wtf/go-nostr/nip19"
	"github.com/nbd-wtf/go-nostr/nip44"
	"github.com/nbd-wtf/go-nostr/nip46"

	"github.com/signoff/signoff/adapters/nostr/relaytest"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/signing"
)

// testSigner is a NIP-46 remote signer as a person's phone runs one:
// go-nostr's StaticKeySigner answering kind-24133 requests read from a
// relay. lie, when set, rewrites the event it is asked to sign before
// signing it, as a compromised signer (or app) would.
type testSigner struct {
	key    *signing.Key
	url    string
	lie    func(*nostr.Event)
	refuse bool   // answer sign_event with "unauthorized", as when the person taps reject
	garble string // when set, every answer's content (still signed by the signer)

	signRequests atomic.Int32
}

func hexSecret(k *signing.Key) string {
	_, sk, err := nip19.Decode(k.Nsec())
	if err != nil {
		panic(err)
	}
	return sk.(string)
}

// startSigner runs s on relay until the test ends and sets s.url to its
// bunker:// URL (with a secret).
func startSigner(t *testing.T, relay *relaytest.Relay, s *testSigner) {
	t.Helper()
	sk := hexSecret(s.key)
	signer := nip46.NewStaticKeySigner(sk)
	if s.refuse {
		signer.AuthorizeRequest = func(harmless bool, from, secret string) bool { return harmless }
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, closeRelay, err := relaytest.Connect(ctx, relay.URL())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	since := nostr.Now()
	sub, err := r.Subscribe(ctx, nostr.Filters{{Kinds: []int{nostr.KindNostrConnect}, Tags: nostr.TagMap{"p": {s.key.PublicKey()}}, Since: &since}})
	if err != nil {
		cancel()
		closeRelay()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev := range sub.Events {
			req, _, out, err := signer.HandleRequest(ev)
			if err != nil {
				continue
			}
			if req.Method == "sign_event" {
				s.signRequests.Add(1)
				if s.lie != nil {
					var asked nostr.Event
					if json.Unmarshal([]byte(req.Params[0]), &asked) != nil {
						continue
					}
					s.lie(&asked)
					if asked.Sig == "" {
						asked.Sign(sk)
					}
					session, _ := signer.GetSession(ev.PubKey)
					_, out, _ = session.MakeResponse(req.ID, ev.PubKey, asked.String(), nil)
					out.Sign(sk)
				}
			}
			if s.garble != "" {
				out.Content, out.ID, out.Sig = s.garble, "", ""
				out.Sign(sk)
			}
			// Not on this loop: go-nostr hands the OK to Publish on the
			// goroutine that also delivers the next request.
			wg.Go(func() { r.Publish(ctx, out) })
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		closeRelay()
	})
	s.url = "bunker://" + s.key.PublicKey() + "?relay=" + url.QueryEscape(relay.URL()) + "&secret=s3cret"
}

// noKeyOnThisMachine removes the owner's key file the gateway helper
// wrote and SIGNOFF_KEY, and gives the CLI an empty config dir: whatever
// signs must come from elsewhere.
func noKeyOnThisMachine(t *testing.T, ownerKeyFile string) (owner *signing.Key, configDir string) {
	t.Helper()
	raw, err := os.ReadFile(ownerKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if owner, err = signing.ParseKey(string(raw)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(ownerKeyFile); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SIGNOFF_KEY", "")
	os.Unsetenv("SIGNOFF_KEY")
	t.Setenv("SIGNOFF_BUNKER", "")
	configDir = t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", configDir)
	return owner, configDir
}

func gatewayClient() *httpapi.Client {
	c := httpapi.NewClient(os.Getenv("SIGNOFF_URL"))
	c.Token = os.Getenv("SIGNOFF_TOKEN")
	return c
}

func submitForBunker(t *testing.T, action string) *bot.Request {
	t.Helper()
	r, err := gatewayClient().Submit(context.Background(), bot.NewRequest{Persona: "demo", Action: action})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestApproveOnARemoteSignerWithNoKeyOnTheMachine: the owner's key is only
// in their signer; approve --bunker decides the request, and the gateway
// counts it as the owner's vote.
func TestApproveOnARemoteSignerWithNoKeyOnTheMachine(t *testing.T) {
	ownerFile := gateway(t, demoPersona)
	owner, configDir := noKeyOnThisMachine(t, ownerFile)
	relay := relaytest.Start(t)
	phone := &testSigner{key: owner}
	startSigner(t, relay, phone)

	id, result, code := startRequest(t, "--persona", "demo", "--reason", "clean up", "--", "rm", "-rf", "/tmp/scratch")
	c, out, errs := cli("approve", "--bunker", phone.url, id)
	if c != 0 || !strings.Contains(out, "counted; request "+id+" is approved") {
		t.Fatalf("approve --bunker = %d %q, stderr:\n%s", c, out, errs)
	}
	for _, want := range []string{"approve as " + owner.Npub(), "rm -rf /tmp/scratch", "waiting for your signer to confirm"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "s3cret") {
		t.Errorf("stderr shows the bunker secret:\n%s", errs)
	}
	select {
	case got := <-code:
		if res := <-result; got != 0 || !strings.Contains(res[1], "✅ approved by alice") {
			t.Fatalf("request exited %d, want 0 approved by alice:\n%s", got, res[1])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("request still waiting 10s after approve --bunker")
	}
	r := getRequest(t, id)
	if len(r.Votes) != 1 || r.Votes[0].Voter.ID != owner.PublicKey() || r.Votes[0].Proof != bot.ProofSigned || r.Votes[0].Name != "alice" {
		t.Errorf("votes = %+v, want one signed vote by alice's key", r.Votes)
	}
	if n := phone.signRequests.Load(); n != 1 {
		t.Errorf("the signer was asked to sign %d times, want 1", n)
	}
	// What stayed on this machine: the session key, 0600, and no vote key.
	fi, err := os.Stat(filepath.Join(configDir, "signoff", "bunker-client.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("session key: %v %v, want a 0600 file", fi, err)
	}
	if _, err := os.Stat(filepath.Join(configDir, "signoff", "key")); err == nil {
		t.Error("a vote key was written to the config dir")
	}
}

// TestRemoteSignerDenyAlwaysAndRelay: deny (from SIGNOFF_BUNKER, with a
// reason), approve --always and --relay compose with the remote signer.
func TestRemoteSignerDenyAlwaysAndRelay(t *testing.T) {
	ownerFile := gateway(t, demoPersona)
	owner, _ := noKeyOnThisMachine(t, ownerFile)
	relay := relaytest.Start(t)
	phone := &testSigner{key: owner}
	startSigner(t, relay, phone)

	t.Run("deny from SIGNOFF_BUNKER with a reason", func(t *testing.T) {
		r := submitForBunker(t, "drop table users")
		t.Setenv("SIGNOFF_BUNKER", phone.url)
		c, out, errs := cli("deny", "--reason", "use the staging db", r.ID)
		if c != 0 || !strings.Contains(out, "is denied") {
			t.Fatalf("deny = %d %q, stderr:\n%s", c, out, errs)
		}
		got := getRequest(t, r.ID)
		if got.Status != bot.Denied || len(got.Votes) != 1 || got.Votes[0].Reason != "use the staging db" {
			t.Errorf("request = %s %+v, want denied with the signed reason", got.Status, got.Votes)
		}
	})
	t.Run("always", func(t *testing.T) {
		r := submitForBunker(t, "terraform apply")
		c, out, errs := cli("approve", "--always", "--bunker", phone.url, r.ID)
		if c != 0 || !strings.Contains(out, "is approved") {
			t.Fatalf("approve --always = %d %q, stderr:\n%s", c, out, errs)
		}
		if got := getRequest(t, r.ID); len(got.Votes) != 1 || got.Votes[0].Choice != bot.Always {
			t.Errorf("votes = %+v, want one ♾️", got.Votes)
		}
	})
	t.Run("published to a relay", func(t *testing.T) {
		r := submitForBunker(t, "git push --force")
		c, out, errs := cli("approve", "--bunker", phone.url, "--relay", relay.URL(), r.ID)
		if c != 0 || !strings.Contains(out, "published to") {
			t.Fatalf("approve --relay = %d %q, stderr:\n%s", c, out, errs)
		}
		evs := relay.Events(nostr.Filter{Kinds: []int{nostr.KindReaction}, Authors: []string{owner.PublicKey()}, Tags: nostr.TagMap{"e": {r.EventID}}})
		if len(evs) != 1 || evs[0].Content != "✅" {
			t.Errorf("relay holds %v, want the owner's ✅ to %s", evs, r.EventID)
		}
	})
	t.Run("--key and --bunker", func(t *testing.T) {
		r := submitForBunker(t, "rm -rf /")
		c, _, errs := cli("approve", "--bunker", phone.url, "--key", "/nonexistent", r.ID)
		if c != 2 || !strings.Contains(errs, "not both") {
			t.Errorf("approve --key --bunker = %d %q, want refused", c, errs)
		}
	})
}

// TestBunkerWithAStrangersKeyDoesNotApprove: a signer holding a key that
// is not the owner's signs; the gateway does not count it.
func TestBunkerWithAStrangersKeyDoesNotApprove(t *testing.T) {
	ownerFile := gateway(t, demoPersona)
	noKeyOnThisMachine(t, ownerFile)
	relay := relaytest.Start(t)
	stranger := &testSigner{key: signing.NewKey()}
	startSigner(t, relay, stranger)

	r := submitForBunker(t, "rm -rf ~/work")
	c, out, errs := cli("approve", "--bunker", stranger.url, r.ID)
	if c != 1 || strings.Contains(out, "counted") {
		t.Fatalf("approve --bunker (stranger) = %d %q, stderr:\n%s; want not counted", c, out, errs)
	}
	if got := getRequest(t, r.ID); got.Status != bot.Pending {
		t.Errorf("request is %s, want still pending", got.Status)
	}
}

// TestLyingBunkerIsRefused: a signer that returns another event than the
// one asked — naming another pending request, ✅ for a ❌, an extra tag,
// someone else's signature — gets nothing posted anywhere.
func TestLyingBunkerIsRefused(t *testing.T) {
	ownerFile := gateway(t, demoPersona)
	owner, _ := noKeyOnThisMachine(t, ownerFile)
	other := submitForBunker(t, "rm -rf ~/prod")
	otherOwnerKey := signing.NewKey()
	for _, tc := range []struct {
		name string
		verb string
		lie  func(*nostr.Event)
	}{
		{"names another request", "approve", func(e *nostr.Event) {
			for i, tag := range e.Tags {
				if tag[0] == "e" {
					e.Tags[i] = nostr.Tag{"e", other.EventID}
				}
			}
		}},
		{"approves when asked to deny", "deny", func(e *nostr.Event) { e.Content = "✅" }},
		{"always when asked to approve", "approve", func(e *nostr.Event) { e.Content = "♾️" }},
		{"adds an e tag naming another request", "approve", func(e *nostr.Event) { e.Tags = append(e.Tags, nostr.Tag{"e", other.EventID}) }},
		{"signed by another key than it holds", "approve", func(e *nostr.Event) { otherOwnerKey.Sign(e) }},
		{"forged signature", "approve", func(e *nostr.Event) {
			otherOwnerKey.Sign(e)
			e.PubKey = owner.PublicKey()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			relay := relaytest.Start(t)
			liar := &testSigner{key: owner, lie: tc.lie}
			startSigner(t, relay, liar)
			r := submitForBunker(t, "rm -rf ~/work")
			for _, args := range [][]string{
				{tc.verb, "--bunker", liar.url, r.ID},
				{tc.verb, "--bunker", liar.url, "--relay", relay.URL(), r.ID},
			} {
				c, out, errs := cli(args...)
				if c != 2 || !strings.Contains(errs, "refused what your signer returned") || !strings.Contains(errs, "nothing sent") {
					t.Errorf("%v = %d %q, stderr:\n%s; want refused, nothing sent", args, c, out, errs)
				}
			}
			if liar.signRequests.Load() != 2 {
				t.Errorf("the signer was asked %d times, want 2", liar.signRequests.Load())
			}
			for _, id := range []string{r.ID, other.ID} {
				if got := getRequest(t, id); got.Status != bot.Pending || len(got.Votes) != 0 {
					t.Errorf("request %s = %s %+v, want pending with no vote", id, got.Status, got.Votes)
				}
			}
			if evs := relay.Events(nostr.Filter{Kinds: []int{nostr.KindReaction}}); len(evs) != 0 {
				t.Errorf("reactions published to the relay: %v", evs)
			}
		})
	}
}

// TestSignerRejectionIsShown: the person taps reject on their phone.
func TestSignerRejectionIsShown(t *testing.T) {
	ownerFile := gateway(t, demoPersona)
	owner, _ := noKeyOnThisMachine(t, ownerFile)
	relay := relaytest.Start(t)
	phone := &testSigner{key: owner, refuse: true}
	startSigner(t, relay, phone)
	r := submitForBunker(t, "rm -rf ~/work")
	c, _, errs := cli("approve", "--bunker", phone.url, r.ID)
	if c != 2 || !strings.Contains(errs, "your signer refused to sign: unauthorized") || !strings.Contains(errs, "nothing sent") {
		t.Fatalf("approve = %d, stderr:\n%s; want the signer's refusal", c, errs)
	}
	if got := getRequest(t, r.ID); got.Status != bot.Pending || len(got.Votes) != 0 {
		t.Errorf("request = %s %+v, want pending with no vote", got.Status, got.Votes)
	}
}

// TestSilentBunkerTimesOut: the relay is up, no signer answers: a clear
// error after --bunker-timeout, with the wait shown.
func TestSilentBunkerTimesOut(t *testing.T) {
	ownerFile := gateway(t, demoPersona)
	noKeyOnThisMachine(t, ownerFile)
	relay := relaytest.Start(t)
	silent := "bunker://" + signing.NewKey().PublicKey() + "?relay=" + url.QueryEscape(relay.URL())
	r := submitForBunker(t, "rm -rf ~/work")
	defer func(d time.Duration) { bunkerProgress = d }(bunkerProgress)
	bunkerProgress = 200 * time.Millisecond
	start := time.Now()
	c, _, errs := cli("approve", "--bunker", silent, "--bunker-timeout", "1s", r.ID)
	if c != 2 || !strings.Contains(errs, "waiting for your signer to accept this connection") ||
		!strings.Contains(errs, "your signer did not answer in time") || !strings.Contains(errs, "nothing sent") {
		t.Fatalf("approve = %d, stderr:\n%s; want a timeout after showing the wait", c, errs)
	}
	if !strings.Contains(errs, "still waiting for your signer to accept this connection… ") || !strings.Contains(errs, "left") {
		t.Errorf("stderr shows no progress while waiting:\n%s", errs)
	}
	if waited := time.Since(start); waited > 30*time.Second {
		t.Errorf("gave up after %s with --bunker-timeout 1s", waited)
	}
	if got := getRequest(t, r.ID); got.Status != bot.Pending || len(got.Votes) != 0 {
		t.Errorf("request = %s %+v, want pending with no vote", got.Status, got.Votes)
	}
}

// TestUnreachableBunkerRelay: nothing listens where the URL says.
func TestUnreachableBunkerRelay(t *testing.T) {
	ownerFile := gateway(t, demoPersona)
	noKeyOnThisMachine(t, ownerFile)
	relay := relaytest.Start(t)
	relay.Stop()
	gone := "bunker://" + signing.NewKey().PublicKey() + "?relay=" + url.QueryEscape(relay.URL())
	r := submitForBunker(t, "rm -rf ~/work")
	c, _, errs := cli("approve", "--bunker", gone, r.ID)
	if c != 2 || !strings.Contains(errs, "cannot reach your signer's relay") || !strings.Contains(errs, relay.URL()) {
		t.Fatalf("approve = %d, stderr:\n%s; want cannot reach the relay", c, errs)
	}
}

// TestMalformedBunkerURLIsRefusedBeforeAnything: a bad URL (or wait) is
// refused before the request is fetched, anything is signed or a file is
// written.
func TestMalformedBunkerURLIsRefusedBeforeAnything(t *testing.T) {
	ownerFile := gateway(t, demoPersona)
	_, configDir := noKeyOnThisMachine(t, ownerFile)
	r := submitForBunker(t, "rm -rf ~/work")
	pk := signing.NewKey().PublicKey()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nip05 name, never looked up", []string{"--bunker", "alice@example.com"}, "NIP-05"},
		{"https", []string{"--bunker", "https://" + pk + "?relay=wss://r.example"}, "starts with bunker://"},
		{"short key", []string{"--bunker", "bunker://" + pk[:10] + "?relay=wss://r.example"}, "64 hex"},
		{"no relay", []string{"--bunker", "bunker://" + pk}, "no relay"},
		{"http relay", []string{"--bunker", "bunker://" + pk + "?relay=http://r.example"}, "ws:// or wss://"},
		{"escape in relay", []string{"--bunker", "bunker://" + pk + "?relay=wss%3A%2F%2Fr%1b%5B2J"}, "bunker URL relay"},
		{"zero wait", []string{"--bunker", "bunker://" + pk + "?relay=wss://r.example", "--bunker-timeout", "0s"}, "--bunker-timeout"},
		{"wait past the replay window", []string{"--bunker", "bunker://" + pk + "?relay=wss://r.example", "--bunker-timeout", "1h"}, "--bunker-timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, out, errs := cli(append(append([]string{"approve"}, tc.args...), r.ID)...)
			if c != 2 || !strings.Contains(errs, tc.want) || strings.ContainsRune(errs, '\x1b') {
				t.Errorf("approve %v = %d %q, stderr %q; want exit 2 saying %q", tc.args, c, out, errs, tc.want)
			}
			if strings.Contains(errs, "reaching your signer") {
				t.Errorf("tried to reach a signer: %s", errs)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(configDir, "signoff")); err == nil {
		t.Error("a refused URL left files in the config dir")
	}
	if got := getRequest(t, r.ID); got.Status != bot.Pending || len(got.Votes) != 0 {
		t.Errorf("request = %s %+v, want pending with no vote", got.Status, got.Votes)
	}
}

// A remote signer is needed only to approve: without a bunker, approve
// still says where the key was looked for and offers --bunker.
func TestNoKeyAndNoBunkerSaysSo(t *testing.T) {
	ownerFile := gateway(t, demoPersona)
	noKeyOnThisMachine(t, ownerFile)
	r := submitForBunker(t, "rm -rf ~/work")
	c, _, errs := cli("approve", r.ID)
	if c != 2 || !strings.Contains(errs, "cannot read your key") || !strings.Contains(errs, "--bunker") {
		t.Errorf("approve = %d %q, want it to say the key is missing and offer --bunker", c, errs)
	}
}

// TestMalformedSignerAnswerDoesNotCrashApprove: a signer (or whoever holds
// its key) answers with NIP-04 content whose IV is not one AES block, on
// which go-nostr's Decrypt panics. approve must treat it as no answer.
func TestMalformedSignerAnswerDoesNotCrashApprove(t *testing.T) {
	ownerFile := gateway(t, demoPersona)
	owner, _ := noKeyOnThisMachine(t, ownerFile)
	relay := relaytest.Start(t)
	for _, garble := range []string{"AAAAAAAAAAAAAAAAAAAAAA==?iv=AAAA", "AAAA?iv=AAAAAAAAAAAAAAAAAAAAAA==", "?iv=", "not encrypted"} {
		phone := &testSigner{key: owner, garble: garble}
		startSigner(t, relay, phone)
		r := submitForBunker(t, "rm -rf ~/work")
		c, _, errs := cli("approve", "--bunker", phone.url, "--bunker-timeout", "1s", r.ID)
		if c != 2 || !strings.Contains(errs, "did not answer in time") {
			t.Errorf("answer %q: approve = %d, stderr:\n%s; want no answer", garble, c, errs)
		}
	}
}

// FuzzBunkerAnswer: whatever content a signer's answer carries, reading
// it returns (or fails) without a panic.
func FuzzBunkerAnswer(f *testing.F) {
	client, signer := signing.NewKey(), signing.NewKey()
	s := &bunkerSession{}
	csk := hexSecret(client)
	s.shared, _ = nip04.ComputeSharedSecret(signer.PublicKey(), csk)
	s.conv, _ = nip44.GenerateConversationKey(signer.PublicKey(), csk)
	good, _ := nip04.Encrypt(`{"id":"x-1","result":"ack"}`, s.shared)
	good44, _ := nip44.Encrypt(`{"id":"x-1","result":"ack"}`, s.conv)
	for _, seed := range []string{good, good44, "AAAA?iv=AAAA", "?iv=", "", strings.Repeat("A", 200)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, content string) {
		s.decrypt(content)
	})
}
