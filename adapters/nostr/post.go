package nostr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// Post publishes r to every relay of c and returns the event it published
// (the request's own event in mode "note"). A relay refusing it or down is
// logged; Post fails only when no relay accepted it.
func (a *Adapter) Post(ctx context.Context, r *bot.Request, p bot.Persona, c bot.ChannelConfig) ([]bot.MessageRef, error) {
	relays, err := a.channelRelays(c)
	if err != nil {
		return nil, err
	}
	mode := c.Mode
	if mode == "" {
		mode = ModeNote
	}
	ev, err := a.requestEvent(r, mode, c, relays[0])
	if err != nil {
		return nil, err
	}
	// Listen before publishing: a reaction may beat Post's return.
	a.ensureRelays(relays)
	a.watch(r, uniq(r.EventID, ev.ID))
	a.mu.Lock()
	if rec := a.requests[r.ID]; rec != nil {
		rec.local = true // replies go under what this adapter posted, if anything
	}
	a.mu.Unlock()
	accepted, err := a.publish(ctx, relays, ev)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if rec := a.requests[r.ID]; rec != nil {
		i := slices.IndexFunc(rec.posts, func(p post) bool { return p.id == ev.ID })
		if i < 0 {
			rec.posts = append(rec.posts, post{id: ev.ID, mode: mode, root: c.Root, group: c.Group, relays: relays})
		} else { // the same note on another channel's relays
			rec.posts[i].relays = uniq(append(rec.posts[i].relays, relays...)...)
		}
	}
	a.mu.Unlock()
	a.log.Info("nostr: posted request", "id", r.ID, "event", ev.ID, "kind", ev.Kind, "accepted", accepted, "relays", len(relays))
	return []bot.MessageRef{{Platform: bot.Nostr, ID: ev.ID}}, nil
}

// channelRelays are c's relays, or the configured ones when c names none.
func (a *Adapter) channelRelays(c bot.ChannelConfig) ([]string, error) {
	relays, err := normalizeRelays(c.Relays)
	if err != nil {
		return nil, err
	}
	if len(relays) == 0 {
		relays = a.knownRelays()
	}
	if len(relays) == 0 {
		return nil, errors.New("nostr: the channel names no relay")
	}
	return relays, nil
}

func (a *Adapter) knownRelays() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.relays))
	for u := range a.relays {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// requestEvent is the event announcing r in the channel's mode. Kind-42
// and kind-9 posts are stamped with r's creation time, so posting twice
// makes the same event, and carry the request id so two identical asks
// are still two events.
func (a *Adapter) requestEvent(r *bot.Request, mode string, c bot.ChannelConfig, hint string) (gonostr.Event, error) {
	own, err := ownEvent(r)
	if err != nil {
		return gonostr.Event{}, err
	}
	var tags gonostr.Tags
	kind := 0
	switch mode {
	case ModeNote:
		if r.Escalated == nil {
			return own, nil
		}
		// A note of its own under the request's event, so it can ping.
		kind = gonostr.KindTextNote
		tags = gonostr.Tags{{"e", own.ID, hint, "root"}}
	case ModeNIP28:
		if !isEventID(c.Root) {
			return gonostr.Event{}, fmt.Errorf("nostr: nip28 channel root %q is not an event id", c.Root)
		}
		kind = gonostr.KindChannelMessage
		tags = gonostr.Tags{{"e", strings.ToLower(c.Root), hint, "root"}}
	case ModeNIP29:
		if c.Group == "" {
			return gonostr.Event{}, errors.New("nostr: nip29 channel names no group")
		}
		kind = gonostr.KindSimpleGroupChatMessage
		tags = gonostr.Tags{{"h", c.Group}}
	default:
		return gonostr.Event{}, fmt.Errorf("nostr: unknown channel mode %q (want note, nip28 or nip29)", mode)
	}
	tags = append(tags, gonostr.Tag{"t", "signoff"}, gonostr.Tag{"signoff", r.ID})
	if e := r.Escalated; e != nil {
		// Tags exactly the people the escalation calls on, and names them
		// (nostr:npub…) in the text; once, so stamped now.
		var ps gonostr.Tags
		line := e.Line(func(p bot.Person) (string, bool) {
			key, ok := p.IdentityOn(bot.Nostr)
			if !ok || len(key) != 64 || !isHexID(key) {
				return "", false
			}
			npub, err := nip19.EncodePublicKey(strings.ToLower(key))
			if err != nil {
				return "", false
			}
			ps = append(ps, gonostr.Tag{"p", strings.ToLower(key)})
			return "nostr:" + npub, true
		}, nil)
		return a.sign(kind, own.Content+"\n"+line, append(tags, ps...), time.Now())
	}
	tags = append(tags, own.Tags.GetAll([]string{"p"})...)
	return a.sign(kind, own.Content, tags, r.CreatedAt)
}

// ownEvent is r's own event, signed by the gateway when r was created.
func ownEvent(r *bot.Request) (gonostr.Event, error) {
	var ev gonostr.Event
	if err := json.Unmarshal(r.Event, &ev); err != nil {
		return ev, fmt.Errorf("nostr: request %s has no valid event: %w", r.ID, err)
	}
	if ev.ID != r.EventID || len(ev.ID) != 64 || !ev.CheckID() {
		return ev, fmt.Errorf("nostr: request %s event does not match its id", r.ID)
	}
	return ev, nil
}

func (a *Adapter) sign(kind int, content string, tags gonostr.Tags, at time.Time) (gonostr.Event, error) {
	ev := gonostr.Event{Kind: kind, Content: content, Tags: tags, CreatedAt: gonostr.Timestamp(at.Unix())}
	if err := a.cfg.Key.Sign(&ev); err != nil {
		return ev, fmt.Errorf("nostr: sign: %w", err)
	}
	return ev, nil
}

// Update publishes, under every event posted for r, a reply stating its
// outcome, and stops listening for reactions to r. A post no relay
// accepted the reply for is an error (the gateway retries; the replies are
// the same events, stamped with the decision time).
func (a *Adapter) Update(ctx context.Context, r *bot.Request, refs []bot.MessageRef) error {
	a.unwatch(r.ID)
	if !r.Status.Final() {
		return nil
	}
	a.mu.Lock()
	var posts []post
	local := false
	if rec := a.requests[r.ID]; rec != nil {
		posts, local = slices.Clone(rec.posts), rec.local
	}
	a.mu.Unlock()
	if !local {
		// Posted before a restart (or by another replica): reply with a
		// note to each ref on every relay known.
		relays := a.knownRelays()
		for _, ref := range refs {
			if ref.Platform == bot.Nostr && isEventID(ref.ID) && !slices.ContainsFunc(posts, func(p post) bool { return p.id == ref.ID }) {
				posts = append(posts, post{id: ref.ID, mode: ModeNote, relays: relays})
			}
		}
	}
	at := a.cfg.Now()
	if r.DecidedAt != nil {
		at = *r.DecidedAt
	}
	var pTags gonostr.Tags
	if own, err := ownEvent(r); err == nil {
		pTags = own.Tags.GetAll([]string{"p"})
	}
	content := bot.Outcome(r) + "\n" + bot.Headline(r)
	var errs []error
	for _, p := range posts {
		if len(p.relays) == 0 {
			continue
		}
		ev, err := a.sign(replyKind(p.mode), content, replyTags(r, p, pTags), at)
		if err != nil {
			return err
		}
		if _, err := a.publish(ctx, p.relays, ev); err != nil {
			errs = append(errs, fmt.Errorf("reply to %s: %w", p.id, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	a.mu.Lock()
	delete(a.requests, r.ID)
	a.mu.Unlock()
	return nil
}

func replyKind(mode string) int {
	switch mode {
	case ModeNIP28:
		return gonostr.KindChannelMessage
	case ModeNIP29:
		return gonostr.KindSimpleGroupChatMessage
	}
	return gonostr.KindTextNote
}

// replyTags thread the reply under the post: NIP-10 marked e tags (a
// direct reply to a note names it as root; in a NIP-28 channel the channel
// is the root and the post the reply), `h` for a NIP-29 group.
func replyTags(r *bot.Request, p post, pTags gonostr.Tags) gonostr.Tags {
	hint := p.relays[0]
	var tags gonostr.Tags
	switch p.mode {
	case ModeNIP28:
		tags = gonostr.Tags{{"e", p.root, hint, "root"}, {"e", p.id, hint, "reply"}}
	case ModeNIP29:
		tags = gonostr.Tags{{"h", p.group}, {"e", p.id, hint, "reply"}}
	default:
		tags = gonostr.Tags{{"e", p.id, hint, "root"}}
	}
	tags = append(tags, gonostr.Tag{"t", "signoff"}, gonostr.Tag{"signoff", r.ID}, gonostr.Tag{"status", string(r.Status)})
	return append(tags, pTags...)
}

// publish sends ev to every relay at once, over the relay loop's
// connection when it has one, else a connection of its own. It returns the
// relays that accepted it and fails only when none did.
func (a *Adapter) publish(ctx context.Context, relays []string, ev gonostr.Event) ([]string, error) {
	return publishAll(ctx, relays, ev, a.cfg.PublishTimeout, a.cfg.DialTimeout, a.liveConn, a.log)
}

func (a *Adapter) liveConn(url string) *relayConn {
	a.mu.Lock()
	rl := a.relays[url]
	a.mu.Unlock()
	if rl == nil {
		return nil
	}
	if r := rl.current(); r != nil && r.alive() {
		return r
	}
	return nil
}

func publishAll(ctx context.Context, relays []string, ev gonostr.Event, publishTimeout, dialTimeout time.Duration,
	live func(string) *relayConn, log interface {
		Warn(string, ...any)
	}) ([]string, error) {
	var (
		mu       sync.Mutex
		accepted []string
		errs     []string
		wg       sync.WaitGroup
	)
	for _, u := range relays {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := publishOne(ctx, u, ev, publishTimeout, dialTimeout, live)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				log.Warn("nostr: relay did not accept event", "relay", u, "event", ev.ID, "kind", ev.Kind, "err", err)
				errs = append(errs, u+": "+err.Error())
				return
			}
			accepted = append(accepted, u)
		}()
	}
	wg.Wait()
	if len(accepted) == 0 {
		slices.Sort(errs)
		return nil, bot.Errorf(bot.EUnavailable, "nostr: no relay accepted event %s (%s)", ev.ID, strings.Join(errs, "; "))
	}
	slices.Sort(accepted)
	return accepted, nil
}

func publishOne(ctx context.Context, url string, ev gonostr.Event, publishTimeout, dialTimeout time.Duration, live func(string) *relayConn) error {
	if live != nil {
		if r := live(url); r != nil {
			pctx, cancel := context.WithTimeout(ctx, publishTimeout)
			err := r.Publish(pctx, ev)
			cancel()
			if err == nil || isRefusal(err) {
				return err
			}
			// The loop's connection broke under us: try a fresh one.
		}
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	c, err := dialRelay(dctx, url, relayHandlers{})
	cancel()
	if err != nil {
		return err
	}
	defer c.Close()
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	return c.Publish(pctx, ev)
}

// PublishEvent publishes a signed event (a reaction made by `signoff
// approve --relay`) to each relay and waits for their OK. It verifies the
// event first, returns the relays that accepted it, and fails only when
// none did.
func PublishEvent(ctx context.Context, relays []string, raw json.RawMessage) (accepted []string, err error) {
	ev, err := signing.VerifyEvent(raw)
	if err != nil {
		return nil, err
	}
	urls, err := normalizeRelays(relays)
	if err != nil {
		return nil, bot.Errorf(bot.EInvalid, "%v", err)
	}
	if len(urls) == 0 {
		return nil, bot.Errorf(bot.EInvalid, "nostr: no relay to publish to")
	}
	return publishAll(ctx, urls, *ev, 10*time.Second, 10*time.Second, nil, discardLog{})
}

type discardLog struct{}

func (discardLog) Warn(string, ...any) {}

func uniq(ids ...string) []string {
	var out []string
	for _, id := range ids {
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func isEventID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
