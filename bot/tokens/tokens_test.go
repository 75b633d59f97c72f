package tokens_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/tokens"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestNewTokenRoundTrip(t *testing.T) {
	k := tokens.NewSecret()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	plain, tok, err := tokens.New(k, tokens.Spec{Name: "ci-agent", Scopes: []tokens.Scope{tokens.Request}, TTL: 30 * 24 * time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	id, whole, err := tokens.ParseBearer("Bearer " + plain)
	if err != nil || id != tok.ID || whole != plain {
		t.Fatalf("ParseBearer(%q) = %q, %q, %v", plain, id, whole, err)
	}
	if !k.Matches(tok, plain) {
		t.Error("the token does not match its own record")
	}
	if tokens.NewSecret().Matches(tok, plain) {
		t.Error("the token matches under another server secret")
	}
	if strings.Contains(string(tok.Hash), plain) || len(tok.Hash) != 32 {
		t.Errorf("the record keeps %d bytes, want a 32-byte MAC only", len(tok.Hash))
	}
	if !tok.Expires.Equal(now.Add(30 * 24 * time.Hour)) {
		t.Errorf("expires %s", tok.Expires)
	}
	if tok.Expired(now.Add(29*24*time.Hour)) || !tok.Expired(now.Add(30*24*time.Hour)) {
		t.Error("expiry is not at the TTL")
	}
}

func TestNewTokenRejectsBadSpecs(t *testing.T) {
	k := tokens.NewSecret()
	for _, tc := range []struct {
		name string
		spec tokens.Spec
	}{
		{"no name", tokens.Spec{Scopes: []tokens.Scope{tokens.Request}}},
		{"bad name", tokens.Spec{Name: "Robert'); DROP", Scopes: []tokens.Scope{tokens.Request}}},
		{"no scope", tokens.Spec{Name: "x"}},
		{"unknown scope", tokens.Spec{Name: "x", Scopes: []tokens.Scope{"vote"}}},
		{"negative ttl", tokens.Spec{Name: "x", Scopes: []tokens.Scope{tokens.Request}, TTL: -time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := tokens.New(k, tc.spec, time.Now()); bot.ErrorCode(err) != bot.EInvalid {
				t.Errorf("got %v, want an invalid error", err)
			}
		})
	}
}

func TestParseScopes(t *testing.T) {
	got, err := tokens.ParseScopes("check, request,check")
	if err != nil || tokens.Join(got) != "request,check" {
		t.Errorf("got %v %v", got, err)
	}
	if _, err := tokens.ParseScopes("request,vote"); err == nil || !strings.Contains(err.Error(), `unknown scope "vote"`) {
		t.Errorf("unknown scope: %v", err)
	}
	for _, s := range tokens.All {
		if s.Words() == "" {
			t.Errorf("scope %s has no plain words", s)
		}
	}
}

func TestParseBearerRejects(t *testing.T) {
	good := "sgn_ABCDEFGHIJKLMNOP_" + strings.Repeat("a", 43)
	if _, _, err := tokens.ParseBearer("bearer " + good); err != nil {
		t.Errorf("scheme is case-insensitive: %v", err)
	}
	for _, h := range []string{
		"", "Bearer", "Bearer ", "Basic " + good, good, "Bearer " + good + "x", "Bearer " + good[:len(good)-1],
		"Bearer sgn_abcdefghijklmnop_" + strings.Repeat("a", 43), "Bearer " + good + " " + good,
		"Bearer " + strings.Replace(good, "_a", "_\x00", 1), "Bearer\t" + good,
	} {
		if _, _, err := tokens.ParseBearer(h); bot.ErrorCode(err) != bot.EUnauthorized {
			t.Errorf("ParseBearer(%q) = %v, want unauthorized", h, err)
		}
	}
}

// TestMatchesComparesWholeMACs: the comparison is of two 32-byte HMACs
// with hmac.Equal (constant time); a wrong first byte, a wrong last byte,
// and a short stored hash are all refused. BenchmarkMatches shows the first-
// and last-byte cases side by side.
func TestMatchesComparesWholeMACs(t *testing.T) {
	k := tokens.NewSecret()
	plain, tok, _ := tokens.New(k, tokens.Spec{Name: "x", Scopes: []tokens.Scope{tokens.Request}}, time.Now())
	first, last := *tok, *tok
	first.Hash = append([]byte{tok.Hash[0] ^ 1}, tok.Hash[1:]...)
	last.Hash = append(append([]byte{}, tok.Hash[:31]...), tok.Hash[31]^1)
	short := *tok
	short.Hash = tok.Hash[:16]
	for name, rec := range map[string]*tokens.Token{"first byte": &first, "last byte": &last, "short hash": &short, "no hash": {}} {
		if k.Matches(rec, plain) {
			t.Errorf("%s differs, yet it matches", name)
		}
	}
}

func BenchmarkMatches(b *testing.B) {
	k := tokens.NewSecret()
	plain, tok, _ := tokens.New(k, tokens.Spec{Name: "x", Scopes: []tokens.Scope{tokens.Request}}, time.Now())
	first, last := *tok, *tok
	first.Hash = append([]byte{tok.Hash[0] ^ 1}, tok.Hash[1:]...)
	last.Hash = append(append([]byte{}, tok.Hash[:31]...), tok.Hash[31]^1)
	for _, c := range []struct {
		name string
		rec  *tokens.Token
	}{{"equal", tok}, {"first-byte-differs", &first}, {"last-byte-differs", &last}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				k.Matches(c.rec, plain)
			}
		})
	}
}

type mapLookup map[string]*tokens.Token

func (m mapLookup) Token(_ context.Context, id string) (*tokens.Token, error) {
	if t, ok := m[id]; ok {
		return t, nil
	}
	return nil, bot.Errorf(bot.ENotFound, "no such token")
}

func TestAuthenticate(t *testing.T) {
	k := tokens.NewSecret()
	now := time.Now()
	plain, tok, _ := tokens.New(k, tokens.Spec{Name: "agent", Scopes: []tokens.Scope{tokens.Request}, TTL: time.Hour}, now)
	store := mapLookup{tok.ID: tok}
	if got, err := tokens.Authenticate(context.Background(), store, k, "Bearer "+plain, now); err != nil || got.Name != "agent" {
		t.Fatalf("valid: %v %v", got, err)
	}
	forged := plain[:len(plain)-1] + string("AB"[0+boolInt(plain[len(plain)-1] == 'A')])
	for name, c := range map[string]struct {
		header string
		at     time.Time
	}{
		"forged secret, real id": {"Bearer " + forged, now},
		"unknown id":             {"Bearer sgn_AAAAAAAAAAAAAAAA_" + strings.Repeat("a", 43), now},
		"expired":                {"Bearer " + plain, now.Add(time.Hour)},
	} {
		if _, err := tokens.Authenticate(context.Background(), store, k, c.header, c.at); bot.ErrorCode(err) != bot.EUnauthorized {
			t.Errorf("%s: %v, want unauthorized", name, err)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestParseTTL(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "never": 0, "30d": 30 * 24 * time.Hour, "12h": 12 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := tokens.ParseTTL(in); err != nil || got != want {
			t.Errorf("ParseTTL(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0d", "-1h", "soon", "1e9d", "d", "0"} {
		if _, err := tokens.ParseTTL(in); err == nil {
			t.Errorf("ParseTTL(%q) accepted", in)
		}
	}
}

func TestDoors(t *testing.T) {
	for _, tc := range []struct {
		door  string
		host  string
		port  int
		allow bool
	}{
		{"pypi.org:443", "pypi.org", 443, true},
		{"pypi.org:443", "PyPI.org.", 443, true},
		{"pypi.org:443", "pypi.org", 80, false},
		{"pypi.org:443", "evil-pypi.org", 443, false},
		{"*.pypi.org:443", "files.pypi.org", 443, true},
		{"*.pypi.org:443", "pypi.org.evil.com", 443, false},
		{"*:443", "anything.example", 443, true},
		{"github.com:*", "github.com", 22, true},
	} {
		d, err := tokens.ParseDoor(tc.door)
		if err != nil {
			t.Fatalf("%s: %v", tc.door, err)
		}
		if got := d.Allows(tc.host, tc.port); got != tc.allow {
			t.Errorf("%s allows %s:%d = %v", tc.door, tc.host, tc.port, got)
		}
	}
	for _, bad := range []string{"pypi.org", "pypi.org:0", "pypi.org:65536", "pypi.org:443:1", "py pi.org:443", "http://pypi.org:443", ":443", "pypi.org:0443", "a..b:1", "*.*.x:1"} {
		if _, err := tokens.ParseDoor(bad); err == nil {
			t.Errorf("ParseDoor(%q) accepted", bad)
		}
	}
}

func TestManifestDefaultsAndRejects(t *testing.T) {
	m, err := tokens.ParseManifest([]byte(`{"name":"quiet"}`))
	if err != nil || tokens.Join(m.Scopes) != "read:requests" {
		t.Fatalf("a manifest declaring nothing: %v %v, want read:requests only", m, err)
	}
	for name, in := range map[string]string{
		"misspelt field":      `{"name":"x","scope":["admin"]}`,
		"unknown scope":       `{"name":"x","scopes":["vote"]}`,
		"bad name":            `{"name":"../../etc"}`,
		"escape in text":      `{"name":"x","description":"nice \u001b[2J\u001b[H all good"}`,
		"bidi in text":        `{"name":"x","description":"safe \u202e nimda"}`,
		"newline in text":     `{"name":"x","description":"line\n⚠ admin is fine"}`,
		"bad door":            `{"name":"x","network":["pypi.org"]}`,
		"trailing data":       `{"name":"x"} {"name":"y"}`,
		"not json":            `name: x`,
		"bad persona":         `{"name":"x","personas":["Demo Persona"]}`,
		"scopes not an array": `{"name":"x","scopes":"admin"}`,
	} {
		if _, err := tokens.ParseManifest([]byte(in)); bot.ErrorCode(err) != bot.EInvalid {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.WriteFile(path, []byte(got), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("consent block differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestConsentPlain(t *testing.T) {
	m, err := tokens.ParseManifest([]byte(`{"name":"pypi-audit","description":"checks new dependencies against PyPI advisories","scopes":["classify","read:requests"],"network":["pypi.org:443","files.pythonhosted.org:443"],"personas":["demo"]}`))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "consent-plain.golden", m.Consent())
	if m.RiskyCount() != 0 {
		t.Errorf("%d risky lines, want none", m.RiskyCount())
	}
}

func TestConsentRisky(t *testing.T) {
	m, err := tokens.ParseManifest([]byte(`{"name":"release-bot","description":"publishes releases and manages tokens","scopes":["request","net:request","publish","admin"],"network":["*:443","github.com:*","*.com:443","api.github.com:443"]}`))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "consent-risky.golden", m.Consent())
	// publish, admin, net:request for any host, *:443, github.com:*, *.com:443
	if m.RiskyCount() != 6 {
		t.Errorf("%d risky lines, want 6:\n%s", m.RiskyCount(), m.Consent())
	}
}

// TestConsentExtension is the block `signoff ext install` shows for the
// manifest in cmd/signoff's tests (the golden file both read).
func TestConsentExtension(t *testing.T) {
	m, err := tokens.ParseManifest([]byte(`{"name":"release-bot","description":"publishes releases","scopes":["request","publish","admin"],"network":["*:443","api.github.com:443"],"personas":["demo"]}`))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "consent-ext.golden", m.Consent())
}

func FuzzParseManifest(f *testing.F) {
	for _, s := range []string{
		`{"name":"x"}`,
		`{"name":"pypi-audit","description":"d","scopes":["classify"],"network":["pypi.org:443"],"personas":["demo"]}`,
		`{"name":"x","network":["*:*","*.a.b:1"]}`,
		`{"name":"x","description":"\u202e"}`,
		`{"name":"x"}{}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := tokens.ParseManifest(data)
		if err != nil {
			if bot.ErrorCode(err) != bot.EInvalid {
				t.Fatalf("error without the invalid code: %v", err)
			}
			return
		}
		if len(m.Scopes) == 0 {
			t.Fatal("a parsed manifest with no scope")
		}
		for _, s := range m.Scopes {
			if !s.Valid() {
				t.Fatalf("invalid scope %q accepted", s)
			}
		}
		c := m.Consent()
		for _, r := range c {
			if r != '\n' && r < 0x20 {
				t.Fatalf("control character %U in the consent block", r)
			}
		}
		lines := len(m.Scopes) + len(m.Network) + 3
		if m.Description != "" {
			lines++
		}
		if strings.Count(c, "\n") != lines {
			t.Fatalf("consent block has extra lines (a field smuggled a newline):\n%s", c)
		}
		if _, _, err := tokens.New(tokens.NewSecret(), m.Spec(), time.Now()); err != nil {
			t.Fatalf("a parsed manifest's spec is refused: %v", err)
		}
	})
}

func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{"Bearer sgn_ABCDEFGHIJKLMNOP_" + strings.Repeat("a", 43), "Basic x", "", "Bearer  sgn_", "bearer sgn_A_b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		id, tok, err := tokens.ParseBearer(h)
		if err != nil {
			if bot.ErrorCode(err) != bot.EUnauthorized {
				t.Fatalf("error without the unauthorized code: %v", err)
			}
			return
		}
		if !strings.HasPrefix(tok, "sgn_"+id+"_") || len(tok) != 4+16+1+43 || !strings.Contains(h, tok) {
			t.Fatalf("ParseBearer(%q) = %q, %q", h, id, tok)
		}
	})
}
