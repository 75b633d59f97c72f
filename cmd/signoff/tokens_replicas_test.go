package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/bot/tokens"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

// fleetKeys gives every replica on one Redis the same gateway key, as
// serve requires.
var fleetKeys sync.Map

func fleetKey(t *testing.T, redisURL string) {
	k, _ := fleetKeys.LoadOrStore(redisURL, signing.NewKey())
	t.Setenv("SIGNOFF_NOSTR_KEY", k.(*signing.Key).Nsec())
}

// replica runs one serve on redisURL with its own data dir and returns its URL.
func replica(t *testing.T, redisURL, secret string) string {
	t.Helper()
	serveEnv(t, "127.0.0.1:0")
	t.Setenv("SIGNOFF_REDIS_URL", redisURL)
	t.Setenv("SIGNOFF_TOKEN_SECRET", secret)
	fleetKey(t, redisURL)
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	logs := &syncBuffer{}
	done := make(chan int, 1)
	a := &app{stdout: logs, stderr: logs, ready: func(s string) { addr <- s }}
	go func() { done <- a.run(ctx, []string{"serve"}) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case s := <-addr:
		return "http://" + s
	case code := <-done:
		done <- code // for the cleanup
		t.Fatalf("serve exited %d:\n%s", code, logs)
	case <-time.After(10 * time.Second):
		t.Fatalf("serve not listening after 10s:\n%s", logs)
	}
	return ""
}

// TestTokenRevokedOnOneReplicaIsRefusedByAnother: two real `signoff serve`
// processes' wiring on one real Redis; the agent's token is revoked through
// replica B and replica A refuses it on the next call.
func TestTokenRevokedOnOneReplicaIsRefusedByAnother(t *testing.T) {
	url := startRedis(t)
	secret := strings.Repeat("s3cr3t", 8)
	a := replica(t, url, secret)
	b := replica(t, url, secret)
	t.Setenv("SIGNOFF_REDIS_URL", "") // the CLI below goes through the API

	t.Setenv("SIGNOFF_URL", a)
	code, out, errs := cli("tokens", "create", "--name", "admin", "--scopes", "admin")
	if code != 0 {
		t.Fatalf("first token on A = %d %q", code, errs)
	}
	adminOut := out
	t.Setenv("SIGNOFF_TOKEN", lastLine(adminOut))
	_, out, _ = cli("tokens", "create", "--name", "agent", "--scopes", "read:requests")
	agent := lastLine(out)

	// A has just answered the agent's token (and may answer it from
	// memory, for up to TokenMemoryFor, while it follows the token channel).
	t.Setenv("SIGNOFF_URL", a)
	t.Setenv("SIGNOFF_TOKEN", agent)
	if code, _, errs := cli("pending"); code != 0 {
		t.Fatalf("the agent's token on A before its revocation = %d %q", code, errs)
	}
	t.Setenv("SIGNOFF_URL", b)
	t.Setenv("SIGNOFF_TOKEN", lastLine(adminOut))
	if code, _, errs := cli("tokens", "revoke", "agent"); code != 0 {
		t.Fatalf("revoke on B = %d %q", code, errs)
	}
	// The revocation's message reaches A in milliseconds; without it A
	// would go on answering from memory for most of TokenMemoryFor.
	t.Setenv("SIGNOFF_URL", a)
	t.Setenv("SIGNOFF_TOKEN", agent)
	deadline := time.Now().Add(qredis.TokenMemoryFor / 2)
	for {
		code, _, errs := cli("pending")
		if code == 2 && strings.Contains(errs, "unknown or revoked token") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A %s after the revocation on B still answers the agent's token: %d %q", qredis.TokenMemoryFor/2, code, errs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReplicaWithAnotherTokenSecretRefusesToStart: a replica whose token
// secret differs would refuse every token; it says so at start instead.
func TestReplicaWithAnotherTokenSecretRefusesToStart(t *testing.T) {
	url := startRedis(t)
	replica(t, url, strings.Repeat("a", 32))
	serveEnv(t, "127.0.0.1:0")
	t.Setenv("SIGNOFF_REDIS_URL", url)
	t.Setenv("SIGNOFF_TOKEN_SECRET", strings.Repeat("b", 32))
	fleetKey(t, url)
	var out, errb syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code := (&app{stdout: &out, stderr: &errb}).run(ctx, []string{"serve"})
	if code != 2 || !strings.Contains(errb.String(), "is not the one the store's tokens were made with") {
		t.Errorf("serve with another secret = %d:\n%s", code, errb.String())
	}
	// And `tokens create` straight on the store with the wrong secret too.
	if code, _, errs := cli("tokens", "create", "--name", "x", "--scopes", "admin"); code != 2 || !strings.Contains(errs, "SIGNOFF_TOKEN_SECRET") {
		t.Errorf("tokens create on the store with another secret = %d %q", code, errs)
	}
}

// TestFirstAdminTokenOnTheStoreOpensANetworkListen: `tokens create` with
// SIGNOFF_REDIS_URL goes through the tokens service on the store: signed
// by the persona's owner, held to the first-token rule, audited in the
// store's chain; and serve's rule for a non-loopback address then holds
// (checked without binding one).
func TestFirstAdminTokenOnTheStoreOpensANetworkListen(t *testing.T) {
	url := startRedis(t)
	secret := strings.Repeat("c", 32)
	replica(t, url, secret) // a gateway on loopback: the chain the command continues
	serveEnv(t, "0.0.0.0:8080")
	t.Setenv("SIGNOFF_REDIS_URL", url)
	t.Setenv("SIGNOFF_TOKEN_SECRET", secret)
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	rdb, _ := qredis.Open(url)
	defer rdb.Close()
	store := qredis.New(rdb, "signoff")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	if _, err := serveAuth(ctx, cfg, store, nil, nil, quiet); err == nil || !strings.Contains(err.Error(), "no admin token exists") {
		t.Fatalf("0.0.0.0 with no admin token: %v", err)
	}
	if code, out, errs := cli("tokens", "create", "--name", "agent", "--scopes", "request"); code != 2 || !strings.Contains(errs, "the first token must carry the admin scope") {
		t.Fatalf("a first non-admin token on the store = %d %q %q, want the API's first-token rule", code, out, errs)
	}
	// The agent, without the person's key, cannot make one on the store.
	keyFile := os.Getenv("SIGNOFF_KEY")
	t.Setenv("SIGNOFF_KEY", filepath.Join(t.TempDir(), "no-key"))
	if code, out, errs := cli("tokens", "create", "--name", "agent", "--scopes", "admin"); code != 2 || !strings.Contains(errs, "managed by a person") {
		t.Fatalf("tokens create on the store without the person's key = %d %q %q", code, out, errs)
	}
	// Nor with a key of its own.
	stranger := filepath.Join(t.TempDir(), "stranger.key")
	signing.WriteKey(stranger, signing.NewKey())
	t.Setenv("SIGNOFF_KEY", stranger)
	if code, out, errs := cli("tokens", "create", "--name", "agent", "--scopes", "admin"); code != 2 || !strings.Contains(errs, "owns no loaded persona") {
		t.Fatalf("tokens create on the store signed by a stranger = %d %q %q", code, out, errs)
	}
	t.Setenv("SIGNOFF_KEY", keyFile)
	if code, _, errs := cli("tokens", "create", "--name", "admin", "--scopes", "admin", "--expires", "1h"); code != 0 {
		t.Fatalf("admin on the store = %d %q", code, errs)
	}
	au, err := serveAuth(ctx, cfg, store, nil, nil, quiet)
	if err != nil || !au.Require {
		t.Errorf("0.0.0.0 with an admin token: %v (require %v)", err, au != nil && au.Require)
	}
	ts, _ := store.Tokens(ctx)
	if len(ts) != 1 || !ts[0].Has(tokens.Admin) {
		t.Errorf("tokens on the store: %v", ts)
	}
	// Audited in the store's chain, with the person's signed proof.
	seq, _, _ := store.AuditHead(ctx)
	lines, _ := store.AuditRecords(ctx, 0, int(seq))
	var found bool
	for _, l := range lines {
		found = found || (strings.Contains(string(l), `"type":"token"`) && strings.Contains(string(l), `"action":"created"`) && strings.Contains(string(l), ownerKey(t).PublicKey()))
	}
	if !found {
		t.Errorf("no token record with the person's proof in the store's chain (%d records)", len(lines))
	}
	if closed, _ := store.TokensClosed(ctx); !closed {
		t.Error("the store's closed mark is not set")
	}
}
