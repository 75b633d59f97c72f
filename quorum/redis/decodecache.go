package redis

import (
	"container/list"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/signoff/signoff/bot"
)

// The decode cache's bound: at most maxDecoded requests, and at most
// maxDecodedBytes of their raw doc, vote and message lines counted twice
// (the raw text is kept to compare, its decoded strings are about as big),
// least recently read dropped first. A request whose lines alone pass the
// byte bound is not kept, and one a read finds gone from Redis (deleted,
// expired) is dropped.
const (
	maxDecoded      = 10000
	maxDecodedBytes = 64 << 20
)

// decodeCache remembers, per request id, the raw doc and vote and message
// lines last read and what each decoded to. A request is read after every
// vote on it (the waiter, the agent's re-poll), its doc never changes after
// it is created and its lists only grow, so most of a read is text decoded
// before. A line is reused only when it is byte for byte the one decoded
// (anything else is decoded again), so the cache cannot be stale; what a
// read hands out is always a fresh copy.
//
// Entries are immutable once stored: a read that saw new lines stores a new
// entry in place of the old one, so readers decode outside the lock.
type decodeCache struct {
	max, maxBytes int // the bound: maxDecoded and maxDecodedBytes

	mu    sync.Mutex
	m     map[string]*list.Element // id → *decodedEntry in lru
	lru   list.List                // most recently read first
	bytes int
}

func newDecodeCache(max, maxBytes int) *decodeCache {
	return &decodeCache{max: max, maxBytes: maxBytes, m: make(map[string]*list.Element)}
}

type decodedEntry struct {
	id    string
	doc   string
	f     fields      // the hash's fields as read (or as a notice left them)
	epoch uint64      // the notices' epoch when the read began (see notices)
	req   bot.Request // doc decoded, Votes and Messages unset; only copies leave
	docMs bool        // doc had a non-nil messages list (see decode)
	votes []decodedLine[bot.Vote]
	msgs  []decodedLine[bot.MessageRef]
	size  int
}

// decodedLine is one raw line and what it decoded to; ok is false for a
// malformed line, which a read skips.
type decodedLine[T any] struct {
	raw string
	v   T
	ok  bool
}

func (c *decodeCache) get(id string) *decodedEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[id]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*decodedEntry)
}

func (c *decodeCache) put(e *decodedEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(e)
}

func (c *decodeCache) putLocked(e *decodedEntry) {
	c.removeLocked(e.id)
	if e.size > c.maxBytes {
		return
	}
	c.m[e.id] = c.lru.PushFront(e)
	c.bytes += e.size
	for len(c.m) > c.max || c.bytes > c.maxBytes {
		c.removeLocked(c.lru.Back().Value.(*decodedEntry).id)
	}
}

// drop forgets a request (gone from Redis: deleted or expired).
func (c *decodeCache) drop(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(id)
}

func (c *decodeCache) removeLocked(id string) {
	if el, ok := c.m[id]; ok {
		c.bytes -= el.Value.(*decodedEntry).size
		c.lru.Remove(el)
		delete(c.m, id)
	}
}

// held is the number of requests kept and their counted bytes.
func (c *decodeCache) held() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m), c.bytes
}

// decode builds request id from its hash fields, vote lines and message
// lines, decoding only text it has not decoded before. On a nil cache it
// decodes everything. The doc decodes as it is (a malformed doc is an
// error); then the hash's fields overwrite the decision's; a vote line is
// "result\nwhy\njson" and a malformed one is skipped, as is a malformed
// message.
func (c *decodeCache) decode(id string, f fields, votes, msgs []string) (*bot.Request, error) {
	return c.decodeAt(id, f, votes, msgs, 0)
}

// decodeAt is decode for a read that began in the notices' epoch epoch,
// which the entry it leaves keeps.
func (c *decodeCache) decodeAt(id string, f fields, votes, msgs []string, epoch uint64) (*bot.Request, error) {
	var old *decodedEntry
	if c != nil {
		old = c.get(id)
	}
	e := old
	switch {
	case old != nil && old.epoch == epoch && old.doc == f.doc && old.f == f && len(votes) < len(old.votes) &&
		sameLines(old.votes[:len(votes)], votes) && sameLines(old.msgs, msgs):
		// A read older than the entry (a vote notice extended it while
		// the read was on its way): answer it, keep the entry.
		cp := *old
		cp.votes = old.votes[:len(votes):len(votes)]
		e = &cp
	case old == nil || old.doc != f.doc || !sameLines(old.votes, votes) || !sameLines(old.msgs, msgs):
		var err error
		if e, err = newEntry(id, f.doc, votes, msgs, old); err != nil {
			if old != nil {
				c.drop(id)
			}
			return nil, err
		}
		e.f, e.epoch = f, epoch
		if c != nil {
			c.put(e)
		}
	case old.f != f || old.epoch != epoch:
		cp := *old
		cp.f, cp.epoch = f, epoch
		e = &cp
		c.put(e)
	}
	return e.request(), nil
}

// request is a fresh copy of the request e holds.
func (e *decodedEntry) request() *bot.Request {
	f := e.f
	r := copyRequest(&e.req)
	r.Status = bot.Status(f.status)
	if ms, err := strconv.ParseInt(f.decidedAt, 10, 64); err == nil {
		t := time.UnixMilli(ms).UTC()
		r.DecidedAt = &t
	}
	if f.decidedBy != "" {
		r.DecidedBy = strings.Split(f.decidedBy, "\n")
	}
	r.DecisionReason = f.reason
	r.Always = f.always == "1"
	if f.receipt != "" {
		r.Receipt = json.RawMessage(f.receipt)
	}
	r.Votes = make([]bot.Vote, 0, len(e.votes))
	for _, l := range e.votes {
		if l.ok {
			r.Votes = append(r.Votes, l.v)
		}
	}
	// The doc's own messages (none when Create wrote it) are replaced by
	// the list's, but whether the slice is nil follows the doc.
	if e.docMs {
		r.Messages = make([]bot.MessageRef, 0, len(e.msgs))
	}
	for _, l := range e.msgs {
		if l.ok {
			r.Messages = append(r.Messages, l.v)
		}
	}
	return r
}

// known is a fresh copy of the request e holds, with Seen as a read of
// it sets.
func (e *decodedEntry) known() *bot.Request {
	r := e.request()
	r.Seen = len(e.votes)
	return r
}

// withVote is e with one more vote line (raw, decoded to v) at its end.
func (e *decodedEntry) withVote(raw string, v bot.Vote) *decodedEntry {
	cp := *e
	cp.votes = append(slices.Clip(e.votes), decodedLine[bot.Vote]{raw: raw, v: v, ok: true})
	cp.size += 2*len(raw) + 64
	return &cp
}

// replace puts e in place of old, unless a read has put another entry
// for its request since old was taken (then that one stays).
func (c *decodeCache) replace(old, e *decodedEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[e.id]; ok && el.Value.(*decodedEntry) == old {
		c.putLocked(e)
	}
}

// newEntry decodes a request's text, reusing from old whatever is the same.
func newEntry(id, doc string, votes, msgs []string, old *decodedEntry) (*decodedEntry, error) {
	e := &decodedEntry{id: id, doc: doc}
	if old != nil && old.doc == doc {
		e.req, e.docMs = old.req, old.docMs
	} else {
		if err := json.Unmarshal([]byte(doc), &e.req); err != nil {
			return nil, err
		}
		e.docMs = e.req.Messages != nil
		e.req.Votes, e.req.Messages = nil, nil
	}
	var oldVotes []decodedLine[bot.Vote]
	var oldMsgs []decodedLine[bot.MessageRef]
	if old != nil {
		oldVotes, oldMsgs = old.votes, old.msgs
	}
	e.votes = decodeLines(oldVotes, votes, decodeVote)
	e.msgs = decodeLines(oldMsgs, msgs, decodeMessage)
	e.size = len(id) + 2*len(doc)
	for _, l := range e.votes {
		e.size += 2*len(l.raw) + 64
	}
	for _, l := range e.msgs {
		e.size += 2*len(l.raw) + 64
	}
	return e, nil
}

// decodeLines decodes lines, reusing old's decoding of a line at the same
// place that is the same text (lists only grow, so that is every line but
// the new ones).
func decodeLines[T any](old []decodedLine[T], lines []string, dec func(string) (T, bool)) []decodedLine[T] {
	out := make([]decodedLine[T], len(lines))
	for i, raw := range lines {
		if i < len(old) && old[i].raw == raw {
			out[i] = old[i]
			continue
		}
		v, ok := dec(raw)
		out[i] = decodedLine[T]{raw: raw, v: v, ok: ok}
	}
	return out
}

func sameLines[T any](old []decodedLine[T], lines []string) bool {
	if len(old) != len(lines) {
		return false
	}
	for i, raw := range lines {
		if old[i].raw != raw {
			return false
		}
	}
	return true
}

func decodeVote(line string) (bot.Vote, bool) {
	parts := strings.SplitN(line, "\n", 3)
	if len(parts) != 3 {
		return bot.Vote{}, false
	}
	var v bot.Vote
	if err := json.Unmarshal([]byte(parts[2]), &v); err != nil {
		return bot.Vote{}, false
	}
	v.Result, v.Why = bot.Result(parts[0]), parts[1]
	return v, true
}

func decodeMessage(line string) (bot.MessageRef, bool) {
	var ref bot.MessageRef
	if json.Unmarshal([]byte(line), &ref) != nil {
		return bot.MessageRef{}, false
	}
	return ref, true
}

// copyRequest is a copy of r that shares nothing a caller may change:
// every slice, pointer and raw message is its own. Votes and Messages are
// left to the caller. TestCopyRequestSharesNothing fills every field of a
// Request, so a field added without a copy here fails it.
func copyRequest(r *bot.Request) *bot.Request {
	c := *r
	c.Votes, c.Messages = nil, nil
	c.Reasons = slices.Clone(r.Reasons)
	c.Event = slices.Clone(r.Event)
	c.DecidedBy = slices.Clone(r.DecidedBy)
	c.Receipt = slices.Clone(r.Receipt)
	if r.DecidedAt != nil {
		t := *r.DecidedAt
		c.DecidedAt = &t
	}
	if r.Electorate != nil {
		e := *r.Electorate
		e.Members = slices.Clone(e.Members)
		e.Approvals = slices.Clone(e.Approvals)
		e.Denials = slices.Clone(e.Denials)
		e.Undecided = slices.Clone(e.Undecided)
		c.Electorate = &e
	}
	if r.GrantScope != nil {
		c.GrantScope = r.GrantScope.Clone()
	}
	if r.Escalated != nil {
		x := *r.Escalated
		x.To = slices.Clone(x.To)
		for i := range x.To {
			x.To[i].Identities = slices.Clone(x.To[i].Identities)
		}
		c.Escalated = &x
	}
	return &c
}

// KnownKind is request id's kind when this store has it decoded, with no
// round trip (a request's doc, and so its kind, never changes).
func (s *Store) KnownKind(id string) (bot.Kind, bool) {
	if s.decoded == nil {
		return "", false
	}
	e := s.decoded.get(id)
	if e == nil {
		return "", false
	}
	return e.req.Kind, true
}
