package tokens

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/signoff/signoff/bot"
)

// Store is what the service needs of the store.
type Store interface {
	Lookup
	// HasTokens reports whether any token exists.
	HasTokens(ctx context.Context) (bool, error)
	// CreateToken stores a new token (EConflict when the name is taken)
	// and, in the same step, the store's closed mark.
	CreateToken(ctx context.Context, t *Token) error
	// Tokens lists every token by name.
	Tokens(ctx context.Context) ([]*Token, error)
	// RevokeToken removes a token by name (ENotFound when none).
	RevokeToken(ctx context.Context, name string) (*Token, error)
	// TokensClosed reports the store's closed mark: a token was made on it
	// (lost with the rest when the store is emptied).
	TokensClosed(ctx context.Context) (bool, error)
	// MarkTokensClosed sets the store's closed mark.
	MarkTokensClosed(ctx context.Context) error
}

// Owners finds the persona a public key (hex) owns.
type Owners interface {
	// OwnerOf returns the name of a loaded persona that pubkey owns; ok
	// is false when it owns none.
	OwnerOf(ctx context.Context, pubkey string) (persona string, ok bool, err error)
}

// OwnersOf is the Owners of a fixed set of personas (those serve loaded).
func OwnersOf(ps []bot.Persona) Owners { return personaOwners(slices.Clone(ps)) }

type personaOwners []bot.Persona

func (ps personaOwners) OwnerOf(_ context.Context, pubkey string) (string, bool, error) {
	for _, p := range ps {
		if p.Owner == nil {
			continue
		}
		for _, id := range p.Owner.Identities {
			if id.Platform == bot.Nostr && id.ID == pubkey {
				return p.Name, true, nil
			}
		}
	}
	return "", false, nil
}

// Caller is who asks the service for something: an admin token, or a
// person who signed the call (Service.Person made it).
type Caller struct {
	Token   *Token
	Person  *PersonProof
	Persona string // the persona Person owns
}

// Name is how the caller appears in logs and the audit.
func (c Caller) Name() string {
	switch {
	case c.Person != nil:
		return fmt.Sprintf("%s (owner of persona %s, NIP-98)", npubOf(c.Person.PubKey), c.Persona)
	case c.Token != nil:
		return c.Token.Name
	}
	return "nobody"
}

// Admin reports whether c may manage tokens: a person, or an admin token.
func (c Caller) Admin() bool {
	return c.Person != nil || (c.Token != nil && c.Token.Has(Admin))
}

// ErrNotAPerson is the 401 for a token call made without a person's
// proof or an admin token.
var ErrNotAPerson = bot.Errorf(bot.EUnauthorized, "tokens are made by a person: sign the call with your key (`signoff tokens create` does, with SIGNOFF_KEY or your signer) as an owner of a loaded persona, or send an admin token")

// Service holds the rules for making and revoking tokens, and the mark
// that says tokens exist or existed. The HTTP API and `signoff tokens`
// (on the gateway, or on the store itself with SIGNOFF_REDIS_URL) both
// call it; nothing else writes a token.
//
// The closed mark is kept in four places, any one of which closes the
// API to callers without a token: this process's memory, the store
// (written with each token), the replica's data dir (ClosedMark, a file)
// and the audit chain (a "token" record, History). Emptying the store or
// deleting the file reopens nothing; the store then holding no token
// while one of the marks stands is TOKENS LOST, logged when seen and
// failing Ready until a person makes a token again.
type Service struct {
	Store  Store
	Secret Secret
	Owners Owners
	// Audit records every token made or revoked (nil: not recorded, tests).
	Audit bot.Auditor
	// History reports whether the audit chain holds a token record.
	History func() bool
	// ClosedMark is the file written once a token exists ("": none).
	ClosedMark string
	Logger     *slog.Logger
	Now        func() time.Time

	closed      atomic.Bool
	storeMarked atomic.Bool
	mu          sync.Mutex
	lost        string    // why Ready fails; "" while tokens are there
	unmarkedAt  time.Time // when marked last said no
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// Person checks that a verified NIP-98 proof comes from the owner of a
// loaded persona and returns the caller it makes.
func (s *Service) Person(ctx context.Context, p *PersonProof) (Caller, error) {
	if s.Owners == nil {
		return Caller{}, authErr("this gateway knows no persona owners")
	}
	name, ok, err := s.Owners.OwnerOf(ctx, p.PubKey)
	if err != nil {
		return Caller{}, err
	}
	if !ok {
		return Caller{}, authErr("signed by %s, who owns no loaded persona (only a persona's owner may manage tokens)", npubOf(p.PubKey))
	}
	return Caller{Person: p, Persona: name}, nil
}

// Create makes a token from spec for by, and returns it (shown once) and
// its record. The first token must carry admin, so tokens can still be
// managed with a token once the API is closed. It is audited; a token
// whose record cannot be written is taken back.
func (s *Service) Create(ctx context.Context, by Caller, spec Spec) (string, *Token, error) {
	if !by.Admin() {
		return "", nil, ErrNotAPerson
	}
	plain, t, err := New(s.Secret, spec, s.now())
	if err != nil {
		return "", nil, err
	}
	if !slices.Contains(spec.Scopes, Admin) {
		any, err := s.Store.HasTokens(ctx)
		if err != nil {
			return "", nil, err
		}
		if !any {
			return "", nil, bot.Errorf(bot.EInvalid, "the first token must carry the admin scope, so tokens can still be managed with a token (e.g. --name me --scopes admin)")
		}
	}
	if err := s.Store.CreateToken(ctx, t); err != nil {
		return "", nil, err
	}
	s.markClosed(ctx)
	if err := s.audit(ctx, "created", t, by); err != nil {
		if _, rerr := s.Store.RevokeToken(context.WithoutCancel(ctx), t.Name); rerr != nil {
			s.log().Error("a token whose audit record failed could not be taken back", "name", t.Name, "err", rerr)
		}
		return "", nil, bot.Errorf(bot.EUnavailable, "the audit log cannot be written, so token %q is not made: %v", t.Name, err)
	}
	s.log().Info("token created", "name", t.Name, "scopes", Join(t.Scopes), "by", by.Name())
	s.check(ctx)
	return plain, t, nil
}

// Revoke ends the token called name at once, for by, and audits it. The
// token is gone even when its record could not be written (the error
// says so): a revocation is never held back.
func (s *Service) Revoke(ctx context.Context, by Caller, name string) (*Token, error) {
	if !by.Admin() {
		return nil, ErrNotAPerson
	}
	t, err := s.Store.RevokeToken(ctx, name)
	if err != nil {
		return nil, err
	}
	s.log().Info("token revoked", "name", t.Name, "by", by.Name())
	if err := s.audit(ctx, "revoked", t, by); err != nil {
		return t, bot.Errorf(bot.EUnavailable, "token %q is revoked, but its audit record could not be written: %v", t.Name, err)
	}
	return t, nil
}

// List is every token, for by.
func (s *Service) List(ctx context.Context, by Caller) ([]*Token, error) {
	if !by.Admin() {
		return nil, ErrNotAPerson
	}
	return s.Store.Tokens(ctx)
}

// Change is the audit record of a token made or revoked.
type Change struct {
	Action string `json:"action"`
	Token  *Token `json:"token"`
	By     string `json:"by"`
}

// TypeToken is the audit record type of a token change.
const TypeToken = "token"

func (s *Service) audit(ctx context.Context, action string, t *Token, by Caller) error {
	if s.Audit == nil {
		return nil
	}
	e := bot.AuditEntry{Type: TypeToken, Data: Change{Action: action, Token: t, By: by.Name()}}
	if by.Person != nil {
		e.Evidence = by.Person.Event
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var err error
	for backoff := 50 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		if err = s.Audit.Append(actx, e); err == nil {
			return nil
		}
		select {
		case <-actx.Done():
			s.log().Error("cannot audit a token change", "action", action, "name", t.Name, "err", err)
			return err
		case <-time.After(backoff):
		}
	}
}

// Closed reports whether callers without a token are refused: a token
// exists, or one of the marks says one did.
func (s *Service) Closed(ctx context.Context) (bool, error) {
	if s.closed.Load() {
		return true, nil
	}
	any, err := s.Store.HasTokens(ctx)
	if err != nil {
		return false, err
	}
	if any || s.markedRecently(ctx) {
		s.markClosed(ctx)
		return true, nil
	}
	return false, nil
}

// unmarkedFor is how long "no mark outside memory" is believed: an open
// gateway's tokenless calls do not each read the file, the chain and the
// store (a token made anywhere is seen by HasTokens at once).
const unmarkedFor = time.Second

// markedRecently is marked, its "no" kept for unmarkedFor.
func (s *Service) markedRecently(ctx context.Context) bool {
	now := time.Now()
	s.mu.Lock()
	fresh := now.Sub(s.unmarkedAt) < unmarkedFor
	s.mu.Unlock()
	if fresh {
		return false
	}
	if s.marked(ctx) {
		return true
	}
	s.mu.Lock()
	s.unmarkedAt = now
	s.mu.Unlock()
	return false
}

// marked reports a closed mark outside memory: the file, the store's, the
// audit chain's.
func (s *Service) marked(ctx context.Context) bool {
	if s.ClosedMark != "" {
		if _, err := os.Stat(s.ClosedMark); err == nil {
			return true
		}
	}
	if s.History != nil && s.History() {
		return true
	}
	ok, err := s.Store.TokensClosed(ctx)
	return err == nil && ok
}

// markClosed writes every mark that is missing.
func (s *Service) markClosed(ctx context.Context) {
	s.closed.Store(true)
	if s.ClosedMark != "" {
		if _, err := os.Stat(s.ClosedMark); errors.Is(err, os.ErrNotExist) {
			if err := os.WriteFile(s.ClosedMark, []byte(closedMarkText), 0o600); err != nil {
				s.log().Error("cannot write the tokens' closed mark", "path", s.ClosedMark, "err", err)
			}
		}
	}
	if !s.storeMarked.Load() {
		if err := s.Store.MarkTokensClosed(ctx); err == nil {
			s.storeMarked.Store(true)
		}
	}
}

const closedMarkText = `This gateway has had API tokens. Callers without a token are refused from
now on, whatever the store holds: the same mark is in the store and in the
audit chain, so deleting this file reopens nothing. A person makes tokens
with their key (signoff tokens create), never a caller without one.
`

// Lost is why Ready fails: the store holds no token although tokens
// existed ("" when it is not so).
func (s *Service) Lost() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// Ready fails while tokens are lost (for /readyz). It looks again first.
func (s *Service) Ready(ctx context.Context) error {
	s.check(ctx)
	if l := s.Lost(); l != "" {
		return bot.Errorf(bot.EUnavailable, "%s", l)
	}
	return nil
}

// Watch looks every every (default 1s) until ctx ends: a token seen
// writes the marks (a replica that never served a tokenless call learns
// of the first token this way); no token while a mark stands is TOKENS
// LOST, logged once when it happens.
func (s *Service) Watch(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// LostMessage is what TOKENS LOST says.
const LostMessage = "TOKENS LOST: this gateway had API tokens and its store holds none (Redis emptied, or restarted without persistence): the API stays closed to callers without a token and /readyz fails until a person makes one with their key (signoff tokens create --name me --scopes admin)"

func (s *Service) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	any, err := s.Store.HasTokens(cctx)
	if err != nil {
		return // the store's own readiness says it is unreachable
	}
	if any {
		s.markClosed(cctx)
		s.mu.Lock()
		was := s.lost
		s.lost = ""
		s.mu.Unlock()
		if was != "" {
			s.log().Info("tokens restored: the store holds tokens again")
		}
		return
	}
	if !s.closed.Load() && !s.marked(cctx) {
		return
	}
	s.closed.Store(true)
	// The store lost its mark with the rest: put it back, so the CLI on
	// the store and replicas started now see it.
	if ok, err := s.Store.TokensClosed(cctx); err == nil && !ok {
		s.Store.MarkTokensClosed(cctx)
	}
	s.mu.Lock()
	was := s.lost
	s.lost = LostMessage
	s.mu.Unlock()
	if was == "" {
		s.log().Error(LostMessage)
	}
}

func npubOf(hex string) string {
	if n, err := encodeNpub(hex); err == nil {
		return n
	}
	return hex
}
