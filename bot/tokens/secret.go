package tokens

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/signoff/signoff/bot"
)

// ParseSecret reads SIGNOFF_TOKEN_SECRET: at least 32 characters.
func ParseSecret(s string) (Secret, error) {
	s = strings.TrimSpace(s)
	if len(s) < 32 {
		return nil, fmt.Errorf("the token secret must be at least 32 characters (make one with: openssl rand -hex 32)")
	}
	return Secret(s), nil
}

// LoadOrCreateSecret reads the secret kept at path, or makes one there
// (mode 0600) on first use. created reports the latter.
func LoadOrCreateSecret(path string) (Secret, bool, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		k, err := ParseSecret(string(b))
		if err != nil {
			return nil, false, fmt.Errorf("token secret file %s: %w", path, err)
		}
		return k, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("read token secret: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("create data dir: %w", err)
	}
	k := Secret(hex.EncodeToString(NewSecret()))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) { // another process made it first
		return LoadOrCreateSecret(path)
	}
	if err != nil {
		return nil, false, fmt.Errorf("write token secret: %w", err)
	}
	if _, err := f.Write(append([]byte(k), '\n')); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("write token secret: %w", err)
	}
	return k, true, f.Close()
}

// ReadTokenFile reads a token a person wrote to a file. The file must be
// readable by its owner only (0600 or stricter): a token other users can
// read is a token they have.
func ReadTokenFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s is readable by others (mode %04o): chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if _, _, err := ParseBearer("Bearer " + tok); err != nil {
		return "", fmt.Errorf("token file %s does not hold a signoff token (sgn_…)", path)
	}
	return tok, nil
}

// ParseTTL reads an expiry such as 30d, 12h or 90m; "" or "never" is 0.
func ParseTTL(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "never" {
		return 0, nil
	}
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
		if n > 100*365 {
			err = errors.New("too long")
		}
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, bot.Errorf(bot.EInvalid, "expiry %q is not a positive duration such as 30d, 12h or 90m", s)
	}
	return d, nil
}
