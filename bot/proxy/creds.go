package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/netpolicy"
	"github.com/signoff/signoff/bot/tokens"
)

// TokenCheck asks the gateway for the record of token (GET
// /v1/tokens/self sent with that token). An unknown, revoked or expired
// token is an error with code bot.EUnauthorized.
type TokenCheck func(ctx context.Context, token string) (*tokens.Token, error)

// DefaultTokenTTL is how long a token's record is believed before the
// gateway is asked again: a revoked token stops opening its doors at most
// this long after the revocation, on its next connection or request.
const DefaultTokenTTL = 2 * time.Second

// errBadCredentials is a Proxy-Authorization the proxy cannot read.
var errBadCredentials = errors.New("the Proxy-Authorization header must be Basic base64(name:sgn_…) or Bearer sgn_… (set HTTPS_PROXY=http://ext:<token>@host:port)")

// ProxyToken reads a Proxy-Authorization header: "Basic base64(user:pass)"
// gives the password, or the user name when the password is empty;
// "Bearer tok" gives tok. The token must look like a signoff token
// (sgn_…). An empty header is ("", nil): no credentials.
func ProxyToken(header string) (string, error) {
	if header == "" {
		return "", nil
	}
	scheme, rest, ok := strings.Cut(header, " ")
	if !ok {
		return "", errBadCredentials
	}
	rest = strings.Trim(rest, " ")
	var tok string
	switch {
	case strings.EqualFold(scheme, "Basic"):
		if len(rest) > 1024 {
			return "", errBadCredentials
		}
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return "", errBadCredentials
		}
		user, pass, _ := strings.Cut(string(raw), ":")
		tok = pass
		if tok == "" {
			tok = user
		}
	case strings.EqualFold(scheme, "Bearer"):
		tok = rest
	default:
		return "", errBadCredentials
	}
	// Exactly a token: no space or anything else around it.
	if _, t, err := tokens.ParseBearer("Bearer " + tok); err != nil || t != tok || tok == "" {
		return "", errBadCredentials
	}
	return tok, nil
}

// holder is what the proxy believes of one token, until checked.
type holder struct {
	name    string // the extension's name, else the token's
	doors   netpolicy.Policy
	err     error
	checked time.Time
}

// tokenCache remembers token checks for TTL, keyed by the token's
// SHA-256 (the token itself is not kept).
type tokenCache struct {
	mu sync.Mutex
	m  map[[32]byte]*holder
}

const maxCachedTokens = 4096

// credentials finds the token r carries and what it opens. It returns
// (nil, nil) for a client without credentials. A bad, revoked or expired
// token is an error with code bot.EUnauthorized; a gateway that cannot
// be asked, bot.EUnavailable.
func (p *Proxy) credentials(r *http.Request) (*holder, error) {
	tok, err := ProxyToken(r.Header.Get("Proxy-Authorization"))
	if err != nil {
		return nil, bot.Errorf(bot.EUnauthorized, "%v", err)
	}
	if tok == "" {
		return nil, nil
	}
	if p.CheckToken == nil {
		return nil, bot.Errorf(bot.EUnauthorized, "this proxy does not take tokens (it was started without a gateway to check them)")
	}
	ttl := p.TokenTTL
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	key := sha256.Sum256([]byte(tok))
	now := time.Now()
	p.tokens.mu.Lock()
	h := p.tokens.m[key]
	p.tokens.mu.Unlock()
	if h != nil && now.Sub(h.checked) < ttl {
		return h, h.err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	t, err := p.CheckToken(ctx, tok)
	h = &holder{checked: now}
	switch code := bot.ErrorCode(err); {
	case err == nil:
		h.name = t.Name
		if t.Ext != "" {
			h.name = t.Ext
		}
		h.doors = doorPolicy(t.Network, p.log(), h.name)
	// rate_limited: the gateway answers 429 only to a run of bad tokens.
	case code == bot.EUnauthorized || code == bot.ENotFound || code == bot.EForbidden || code == "rate_limited":
		h.err = bot.Errorf(bot.EUnauthorized, "the token in the proxy credentials was refused by the gateway (%s)", bot.ErrorMessage(err))
	default:
		// Not believed either way, and not remembered: asked again next time.
		return nil, bot.Errorf(bot.EUnavailable, "cannot check the token in the proxy credentials with the gateway: %s", bot.ErrorMessage(err))
	}
	p.tokens.mu.Lock()
	if p.tokens.m == nil || len(p.tokens.m) >= maxCachedTokens {
		p.tokens.m = map[[32]byte]*holder{}
	}
	p.tokens.m[key] = h
	p.tokens.mu.Unlock()
	return h, h.err
}

// doorPolicy is the policy entries of a token's declared doors, each
// exactly its host:port (every method). A door that cannot be one entry
// (any host, any port) opens nothing and is logged.
func doorPolicy(doors []string, log interface{ Warn(string, ...any) }, who string) netpolicy.Policy {
	out := netpolicy.Policy{Hosts: []netpolicy.Entry{}}
	for _, d := range doors {
		one, err := netpolicy.DoorPolicy([]string{d})
		if err != nil {
			log.Warn("a declared door opens nothing at the proxy", "extension", who, "err", err)
			continue
		}
		out = out.With(one)
	}
	return out
}

// policyFor is what r may reach: the revision's policy, plus its token's
// declared doors when it carries one, and the name drafts are filed
// under ("" without a token). A client with bad credentials gets 407 (or
// 503 when the gateway cannot be asked) and ok is false.
func (p *Proxy) policyFor(w http.ResponseWriter, r *http.Request, rev *netpolicy.Revision) (pol netpolicy.Policy, who string, ok bool) {
	h, err := p.credentials(r)
	if err != nil {
		status := http.StatusProxyAuthRequired
		if bot.ErrorCode(err) == bot.EUnavailable {
			status = http.StatusServiceUnavailable
		} else {
			w.Header().Set("Proxy-Authenticate", `Basic realm="signoff"`)
		}
		p.log().Info("refused proxy credentials", "dest", clip(r.Host), "status", status, "err", err)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(status)
		io.WriteString(w, "signoff proxy: "+bot.ErrorMessage(err)+"; nothing is let through with these credentials.\n")
		return netpolicy.Policy{}, "", false
	}
	if h == nil {
		return rev.Policy, "", true
	}
	return rev.Policy.With(h.doors), h.name, true
}

// watchToken closes a and b once the token r carries is refused by the
// gateway (revoked, expired), checking every TokenTTL until done.
func (p *Proxy) watchToken(r *http.Request, done <-chan struct{}, a, b io.Closer) {
	ttl := p.TokenTTL
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	tick := time.NewTicker(ttl)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		if _, err := p.credentials(r); err != nil && bot.ErrorCode(err) == bot.EUnauthorized {
			p.log().Info("tunnel closed: its token no longer holds", "dest", clip(r.Host), "err", err)
			a.Close()
			b.Close()
			return
		}
	}
}
