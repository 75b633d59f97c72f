package tokens

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/signoff/signoff/bot"
)

// Token is what the store keeps of a token: never the token itself.
type Token struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Hash     []byte    `json:"-"` // HMAC-SHA256(server secret, whole token)
	Scopes   []Scope   `json:"scopes"`
	Personas []string  `json:"personas,omitempty"` // empty: any persona
	Network  []string  `json:"network,omitempty"`  // host:port doors an extension declared
	Ext      string    `json:"extension,omitempty"`
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires,omitzero"` // zero: never
	LastUsed time.Time `json:"last_used,omitzero"`
}

// Has reports whether t carries any of need.
func (t *Token) Has(need ...Scope) bool {
	for _, s := range need {
		if slices.Contains(t.Scopes, s) {
			return true
		}
	}
	return false
}

// AllowsPersona reports whether t may act for persona p. A token bound to
// personas may act for those only: this, not a flag the agent passes, is
// what pins an agent to its persona.
func (t *Token) AllowsPersona(p string) bool {
	return len(t.Personas) == 0 || slices.Contains(t.Personas, p)
}

// PersonaError is the 403 for acting outside t's personas.
func (t *Token) PersonaError(p string) error {
	return bot.Errorf(bot.EForbidden, "token %q may act only for persona %s, not %q", t.Name, strings.Join(t.Personas, ", "), p)
}

// Expired reports whether t has expired at now.
func (t *Token) Expired(now time.Time) bool {
	return !t.Expires.IsZero() && !now.Before(t.Expires)
}

// Secret keys the tokens' hashes. It lives outside the store (the data dir
// or SIGNOFF_TOKEN_SECRET) so a Redis dump or write cannot yield or forge a
// token. Every replica sharing a store must have the same one.
type Secret []byte

// LogValue keeps the secret out of logs.
func (Secret) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// Hash is the keyed hash the store keeps for token.
func (k Secret) Hash(token string) []byte {
	m := hmac.New(sha256.New, k)
	m.Write([]byte(token))
	return m.Sum(nil)
}

// Fingerprint identifies the secret without revealing it, so a replica
// started with a different secret notices before it refuses every token.
func (k Secret) Fingerprint() string {
	return base64.RawURLEncoding.EncodeToString(k.Hash("signoff token secret fingerprint v1")[:12])
}

// Matches compares token's hash with t's in constant time.
func (k Secret) Matches(t *Token, token string) bool {
	return len(t.Hash) == sha256.Size && hmac.Equal(k.Hash(token), t.Hash)
}

// NewSecret returns a fresh random secret.
func NewSecret() Secret {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}

const prefix = "sgn_"

var (
	idEnc   = base32.StdEncoding.WithPadding(base32.NoPadding)
	nameRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	tokenRE = regexp.MustCompile(`^sgn_([A-Z2-7]{16})_([A-Za-z0-9_-]{43})$`)
)

// CheckName refuses a name that is not 1–64 of a-z, 0-9, '.', '_', '-'.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return bot.Errorf(bot.EInvalid, "token name %q must be 1–64 characters of a-z, 0-9, '.', '_', '-' starting with a letter or digit", name)
	}
	return nil
}

// Spec is what a person asks for when creating a token.
type Spec struct {
	Name     string        `json:"name"`
	Scopes   []Scope       `json:"scopes"`
	Personas []string      `json:"personas,omitempty"`
	Network  []string      `json:"network,omitempty"`
	Ext      string        `json:"extension,omitempty"`
	TTL      time.Duration `json:"ttl,omitempty"` // 0: never expires
}

// New makes a token from spec: the plaintext (shown once) and the record
// to store.
func New(k Secret, spec Spec, now time.Time) (string, *Token, error) {
	if err := CheckName(spec.Name); err != nil {
		return "", nil, err
	}
	if len(spec.Scopes) == 0 {
		return "", nil, bot.Errorf(bot.EInvalid, "a token needs at least one scope (scopes: %s)", Join(All))
	}
	for _, s := range spec.Scopes {
		if !s.Valid() {
			return "", nil, bot.Errorf(bot.EInvalid, "unknown scope %q (scopes: %s)", s, Join(All))
		}
	}
	if spec.TTL < 0 {
		return "", nil, bot.Errorf(bot.EInvalid, "expiry must be in the future")
	}
	idb := make([]byte, 10)
	sec := make([]byte, 32)
	rand.Read(idb)
	rand.Read(sec)
	id := idEnc.EncodeToString(idb)
	plain := prefix + id + "_" + base64.RawURLEncoding.EncodeToString(sec)
	t := &Token{
		ID: id, Name: spec.Name, Hash: k.Hash(plain),
		Scopes: slices.Clone(spec.Scopes), Personas: slices.Clone(spec.Personas),
		Network: slices.Clone(spec.Network), Ext: spec.Ext,
		Created: now.UTC().Truncate(time.Second),
	}
	if spec.TTL > 0 {
		t.Expires = now.Add(spec.TTL).UTC().Truncate(time.Second)
	}
	return plain, t, nil
}

// ErrNoToken is the 401 for a call that carries no token.
var ErrNoToken = bot.Errorf(bot.EUnauthorized, "this gateway requires a token: send Authorization: Bearer <token> (a person makes one with `signoff tokens create`; clients read SIGNOFF_TOKEN)")

var errBadToken = bot.Errorf(bot.EUnauthorized, "unknown or revoked token")

// ParseBearer reads an Authorization header's value: "Bearer sgn_…". It
// returns the token's id and the whole token.
func ParseBearer(header string) (id, token string, err error) {
	if header == "" {
		return "", "", ErrNoToken
	}
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", "", bot.Errorf(bot.EUnauthorized, "the Authorization header must be \"Bearer <token>\"")
	}
	tok = strings.Trim(tok, " ")
	m := tokenRE.FindStringSubmatch(tok)
	if m == nil {
		return "", "", bot.Errorf(bot.EUnauthorized, "the bearer token is not a signoff token (sgn_…)")
	}
	return m[1], tok, nil
}

// Lookup finds a token by id; it returns a bot.ENotFound error when none.
type Lookup interface {
	Token(ctx context.Context, id string) (*Token, error)
}

// Authenticate checks an Authorization header against the store: the
// token must exist now (nothing is cached here; a store that answers from
// memory must hear of every revocation, as quorum/redis does), match in
// constant time, and not have expired.
func Authenticate(ctx context.Context, store Lookup, k Secret, header string, now time.Time) (*Token, error) {
	id, tok, err := ParseBearer(header)
	if err != nil {
		return nil, err
	}
	t, err := store.Token(ctx, id)
	if bot.ErrorCode(err) == bot.ENotFound {
		// Spend the same HMAC as a hit, so timing does not say which ids exist.
		k.Matches(&Token{Hash: make([]byte, sha256.Size)}, tok)
		return nil, errBadToken
	}
	if err != nil {
		return nil, err
	}
	if !k.Matches(t, tok) {
		return nil, errBadToken
	}
	if t.Expired(now) {
		return t, bot.Errorf(bot.EUnauthorized, "token %q expired at %s", t.Name, t.Expires.Format(time.RFC3339))
	}
	return t, nil
}
