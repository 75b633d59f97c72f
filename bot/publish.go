package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"
)

// MaxPublishLen caps the text of POST /v1/publish, in characters.
const MaxPublishLen = 4000

// Publishing is limited per persona on each replica: a burst of
// PublishBurst messages, then one every PublishEvery, so an agent cannot
// flood its people's channels (nor get the bot rate-limited or banned by
// the platform).
const (
	PublishBurst = 10
	PublishEvery = 6 * time.Second
)

// publishLimits holds one limiter per persona (personas are few: only
// loaded ones get here).
type publishLimits struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func (l *publishLimits) allow(persona string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*rate.Limiter{}
	}
	lim := l.m[persona]
	if lim == nil {
		lim = rate.NewLimiter(rate.Every(PublishEvery), PublishBurst)
		l.m[persona] = lim
	}
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// PublishResult is where a published message went.
type PublishResult struct {
	Posted []MessageRef    `json:"posted"`
	Failed []PublishFailed `json:"failed"`
}

// PublishFailed is a channel that did not take the message.
type PublishFailed struct {
	Platform Platform `json:"platform"`
	Channel  string   `json:"channel,omitempty"`
	Error    string   `json:"error"`
}

// PublishText is the message as posted: marked as from the agent of
// persona, with the agent's text escaped so it hides nothing.
func PublishText(persona, text string) string {
	return "📣 from agent " + Escape(persona) + ": " + EscapeLines(text)
}

// Publish posts text as a plain message on every channel of persona whose
// adapter can (Publisher), and audits it (type publish) with who asked
// (by, a token name), the text's digest and where it went.
func (g *Gateway) Publish(ctx context.Context, persona, text, by string) (PublishResult, error) {
	res := PublishResult{Posted: []MessageRef{}, Failed: []PublishFailed{}}
	if strings.TrimSpace(text) == "" {
		return res, Errorf(EInvalid, "text is empty: nothing to publish")
	}
	if !utf8.ValidString(text) {
		return res, Errorf(EInvalid, "text is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(text); n > MaxPublishLen {
		return res, Errorf(EInvalid, "text is %d characters, more than %d", n, MaxPublishLen)
	}
	if persona == "" {
		return res, Errorf(EInvalid, "persona is empty")
	}
	p, err := g.Store.Persona(ctx, persona)
	if err != nil {
		return res, err
	}
	if ok, wait := g.publishLimits.allow(p.Name, g.now()); !ok {
		// Refused before anything is posted or audited: a retry is safe.
		e := Errorf(ERateLimited, "persona %s published %d messages lately: at most one every %s after a burst of %d; try again in %s", p.Name, PublishBurst, PublishEvery, PublishBurst, max(time.Second, (wait+time.Second-1).Truncate(time.Second)))
		e.RetryAfter = wait
		return res, e
	}
	msg := PublishText(p.Name, text)
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, c := range p.Channels {
		fail := func(e string) {
			mu.Lock()
			defer mu.Unlock()
			res.Failed = append(res.Failed, PublishFailed{Platform: c.Platform, Channel: c.Target, Error: e})
		}
		if c.Platform == Terminal {
			continue // nothing to post on: the terminal lists requests only
		}
		pub := g.Channels[c.Platform]
		if pub == nil {
			fail("not configured on this gateway")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, g.postTimeout())
			defer cancel()
			ref, err := pub.Publish(pctx, p.Name, c, msg)
			if err != nil {
				g.log().Warn("publish", "persona", p.Name, "platform", c.Platform, "err", err)
				fail(err.Error())
				return
			}
			mu.Lock()
			res.Posted = append(res.Posted, ref)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sum := sha256.Sum256([]byte(text))
	g.audit(ctx, AuditEntry{Type: "publish", Data: map[string]any{
		"token":   by,
		"persona": p.Name,
		"sha256":  hex.EncodeToString(sum[:]),
		"chars":   utf8.RuneCountInString(text),
		"posted":  res.Posted,
		"failed":  res.Failed,
	}})
	return res, nil
}

func (g *Gateway) postTimeout() time.Duration {
	if g.PostTimeout > 0 {
		return g.PostTimeout
	}
	return 15 * time.Second
}
