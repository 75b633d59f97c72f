package signing

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
)

func TestParseKeyRefuses(t *testing.T) {
	g := loadNostrGolden(t)
	for _, s := range []string{
		"",
		"abcd",
		strings.Repeat("zz", 32),
		g.Key.Secret + "00",
		g.Key.Npub, // a public key is not a secret
		"nsec1qqqq",
		strings.Repeat("00", 32), // zero
		"FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141", // the curve order
		strings.Repeat("ff", 32), // above it
	} {
		if k, err := ParseKey(s); err == nil {
			t.Errorf("ParseKey(%q) = %s, want an error", s, k.PublicKey())
		}
	}
	// One below the order is the largest key.
	if _, err := ParseKey("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364140"); err != nil {
		t.Errorf("n-1: %v", err)
	}
}

func TestParsePublicKey(t *testing.T) {
	g := loadNostrGolden(t)
	for _, s := range []string{g.Key.Pubkey, g.Key.Npub, strings.ToUpper(g.Key.Pubkey), " " + g.Key.Npub + "\n"} {
		got, err := ParsePublicKey(s)
		if err != nil || got != g.Key.Pubkey {
			t.Errorf("ParsePublicKey(%q) = %q, %v; want %s", s, got, err, g.Key.Pubkey)
		}
	}
	for _, s := range []string{"", g.Key.Pubkey[:62], g.Key.Nsec, "npub1xyz", strings.Repeat("g", 64)} {
		if got, err := ParsePublicKey(s); err == nil {
			t.Errorf("ParsePublicKey(%q) = %q, want an error", s, got)
		}
	}
}

func TestKeyNeverShowsItsSecret(t *testing.T) {
	g := loadNostrGolden(t)
	k, err := ParseKey(g.Key.Secret)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("loaded", "key", k)
	for _, shown := range []string{buf.String(), k.String(), fmt.Sprint(k), fmt.Sprintf("%v %+v %s", k, k, k)} {
		if strings.Contains(shown, g.Key.Secret) || strings.Contains(shown, g.Key.Nsec) {
			t.Errorf("secret shown in %q", shown)
		}
	}
	if !strings.Contains(buf.String(), g.Key.Npub) {
		t.Errorf("log = %q, want the npub", buf.String())
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "gateway.key")
	k1, created, err := LoadOrCreateKey(path)
	if err != nil || !created {
		t.Fatalf("first load = %v, %v; want a new key", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("key file mode = %o, want 600", mode)
	}
	k2, created, err := LoadOrCreateKey(path)
	if err != nil || created {
		t.Fatalf("second load = %v, %v; want the same key", created, err)
	}
	if k1.PublicKey() != k2.PublicKey() {
		t.Errorf("reloaded key %s, want %s", k2.PublicKey(), k1.PublicKey())
	}
	if err := WriteKey(path, NewKey()); err == nil || !errors.Is(err, os.ErrExist) {
		t.Errorf("WriteKey over an existing key: err = %v, want it refused", err)
	}
	if err := os.WriteFile(path, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("garbage key file: err = %v, want one naming the file", err)
	}
}

func TestNewKeysDiffer(t *testing.T) {
	if a, b := NewKey(), NewKey(); a.PublicKey() == b.PublicKey() {
		t.Error("two new keys are the same")
	}
}

// TestUncheckedSignsTheSameBytes: a key that skips the check of its
// signatures makes the very signatures the checked key makes, and they
// verify.
func TestUncheckedSignsTheSameBytes(t *testing.T) {
	k := NewKey()
	at := time.Unix(1700000000, 0)
	target := strings.Repeat("ab", 32)
	checked, err := NewReaction(k, target, k.PublicKey(), bot.Approve, at)
	if err != nil {
		t.Fatal(err)
	}
	unchecked, err := NewReaction(k.Unchecked(), target, k.PublicKey(), bot.Approve, at)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(checked, unchecked) {
		t.Fatalf("unchecked signing made other bytes:\n%s\n%s", checked, unchecked)
	}
	if _, err := ParseReaction(unchecked, at); err != nil {
		t.Fatalf("the unchecked reaction does not verify: %v", err)
	}
	if k.fast {
		t.Fatal("Unchecked changed the key it was called on")
	}
}
