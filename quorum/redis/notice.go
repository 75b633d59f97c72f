package redis

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
)

// Change notices. Every change of a request is published on the notice
// channel, one message a change, in one of three forms:
//
//	v\n<tag>\n<id>\n<index>\n<line>   a vote stored that left the request pending
//	m\n<id>\n<count>                  messages added (count: the list's length after)
//	r\n<hash>\n<id>\n<votes>\n<msgs>    a receipt kept (hash: its SHA-1 in hex), the lists' lengths then
//	c\n<id>                           any other change: read the request
//
// and each decision on the final channel, as its bare id. A vote notice's
// index is the votes list's length after its RPUSH and its line the text
// pushed; its tag is SHA-1(k2 ‖ hex SHA-1(k1 ‖ id\nindex\nline)) in hex,
// where k1 and k2 (one SHA-1 block each: HMAC's construction, with two
// independent keys instead of one key XORed with two pads) are the halves
// of the request's notice key, 128 random hex characters stored in its
// hash at Create and read with it. Anyone who may publish on the server
// can send anything on the channel; only the scripts can sign.
//
// A replica whose decode cache holds the request as it was just before a
// vote answers its waiters with the vote added and reads nothing. Just
// before means: the entry was read (messages before votes) in this
// subscription's epoch, is pending, holds index−1 votes, and holds every
// message the notices have announced so far. Then no change came between
// its read and the vote: status only leaves pending (and the vote found it
// pending), the doc never changes, a vote would be at index−1 or before,
// and messages added after the read was sent are announced before the
// vote, in the same step that adds them. An entry read after the vote (a
// late notice) answers as it is: what Redis held when read. Everything
// else — no entry, a bad tag, a replay, a gap, a decision, a change to
// read, a malformed message — wakes the waiters to read, as does every
// (re)subscription, which also forgets what the notices told (go-redis
// resubscribes after a reconnect and the messages in between are lost).
// Edits made by hand, outside the scripts, are not announced: an answer
// from a notice shows them after the next read.
//
// A receipt's notice is answered without a read on the replica that
// saved it: before sending the receipt, the save leaves in the request's
// mark its last read of the request with the receipt added, and the first
// receipt notice of the request takes it, answering from it when the
// notice's hash is that receipt's and its lengths are the read's (the
// receipt was kept, and nothing was added since the read; the doc and the
// decision do not change). Otherwise, or with no such mark, it reads. The
// notice may come before the save's own reply: the mark is there already.
// Anyone who may publish can send one: a forged notice that matches can
// only hand out the receipt this store saved, which the store kept.

const (
	noticeVote     = "v\n"
	noticeMessages = "m\n"
	noticeChange   = "c\n"
	noticeReceipt  = "r\n"

	noticeKeyLen = 128 // hex characters: k1 and k2, 64 each
	noticeTagLen = 40  // hex SHA-1
	// maxNoticeIndex bounds an index or count a notice may carry (a
	// request stores far fewer answers: MaxAnswers and its persona).
	maxNoticeIndex = 1 << 30
	// maxNoticed bounds the requests notices keep marks for; past it
	// they are all forgotten, as at a resubscription.
	maxNoticed = 50000
)

// newNoticeKey is a request's notice key.
func newNoticeKey() string {
	b := make([]byte, noticeKeyLen/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// noticeTag is a vote notice's tag under key (see above).
func noticeTag(key, msg string) string {
	in := sha1.Sum([]byte(key[:noticeKeyLen/2] + msg))
	out := sha1.Sum([]byte(key[noticeKeyLen/2:] + hex.EncodeToString(in[:])))
	return hex.EncodeToString(out[:])
}

// notice is one message of the notice channel, parsed.
type notice struct {
	kind  string // noticeVote, noticeMessages, noticeChange or noticeReceipt
	id    string
	index int    // a vote's index, or the messages' count
	tag   string // a vote's; a receipt's hash
	msgs  int    // a receipt notice's messages count (index: its votes')
	line  string // a vote's, as stored
	vote  bot.Vote
}

// signed is the part of a vote notice its tag signs.
func (n notice) signed() string { return n.id + "\n" + strconv.Itoa(n.index) + "\n" + n.line }

// String is n as published.
func (n notice) String() string {
	switch n.kind {
	case noticeVote:
		return noticeVote + n.tag + "\n" + n.signed()
	case noticeMessages:
		return noticeMessages + n.id + "\n" + strconv.Itoa(n.index)
	case noticeReceipt:
		return noticeReceipt + n.tag + "\n" + n.id + "\n" + strconv.Itoa(n.index) + "\n" + strconv.Itoa(n.msgs)
	}
	return noticeChange + n.id
}

var errNotice = errors.New("malformed notice")

// parseNotice parses a notice strictly: nothing it accepts prints back
// (String) other than as it came. A change to read takes its id as it is
// (as the decision channel's bare id is taken): reading is always safe.
// A vote's line must be one the vote script stores: a counted or ignored
// answer whose vote decodes. When a notice does not parse but names a
// request, the id is returned with the error (its waiters should read).
func parseNotice(s string) (notice, error) {
	kind, rest, ok := cutKind(s)
	if !ok {
		return notice{}, errNotice
	}
	if kind == noticeChange {
		if rest == "" {
			return notice{}, errNotice
		}
		return notice{kind: kind, id: rest}, nil
	}
	var tag string
	if kind == noticeVote || kind == noticeReceipt {
		if tag, rest, ok = strings.Cut(rest, "\n"); !ok {
			return notice{}, errNotice
		}
	}
	id, rest, ok := strings.Cut(rest, "\n")
	if id == "" {
		return notice{}, errNotice
	}
	bad := notice{id: id}
	if !ok || !validID(id) {
		return bad, errNotice
	}
	n := notice{kind: kind, id: id, tag: tag}
	if kind == noticeMessages {
		if n.index, ok = parseIndex(rest, 0); !ok {
			return bad, errNotice
		}
		return n, nil
	}
	if kind == noticeReceipt {
		votes, msgs, ok := strings.Cut(rest, "\n")
		if !ok || !isHex(tag, noticeTagLen) {
			return bad, errNotice
		}
		if n.index, ok = parseIndex(votes, 0); !ok {
			return bad, errNotice
		}
		if n.msgs, ok = parseIndex(msgs, 0); !ok {
			return bad, errNotice
		}
		return n, nil
	}
	index, line, ok := strings.Cut(rest, "\n")
	if !ok || !isHex(tag, noticeTagLen) {
		return bad, errNotice
	}
	if n.index, ok = parseIndex(index, 1); !ok {
		return bad, errNotice
	}
	if result, _, _ := strings.Cut(line, "\n"); result != string(bot.Counted) && result != string(bot.Ignored) {
		return bad, errNotice
	}
	if n.vote, ok = decodeVote(line); !ok {
		return bad, errNotice
	}
	n.line = line
	return n, nil
}

func cutKind(s string) (string, string, bool) {
	if len(s) < 2 {
		return "", "", false
	}
	switch k := s[:2]; k {
	case noticeVote, noticeMessages, noticeChange, noticeReceipt:
		return k, s[2:], true
	}
	return "", "", false
}

// validID: a request id as NewID makes them and as tests name them
// (letters, digits, '-', '_'), at most 64 characters.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// parseIndex parses a decimal at least least, with no sign or leading zero.
func parseIndex(s string, least int) (int, bool) {
	if s == "" || len(s) > 10 || s[0] == '0' && len(s) > 1 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < least || n > maxNoticeIndex {
		return 0, false
	}
	return n, true
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// notices is what a Store's notice watch has learnt. An entry of the
// decode cache may be extended by a vote notice only if it was read in
// the current epoch (a read records the epoch as it begins; every
// (re)subscription starts a new one).
type notices struct {
	mu       sync.Mutex
	watching int  // notice watches running on this Store
	shared   bool // two ran at once: notices teach nothing (see WatchNotices)
	epoch    uint64
	marks    map[string]*noticeMark
}

// noticeMark is what the notices of the current epoch told of a request.
type noticeMark struct {
	// last: the last message about the request was a signed vote notice,
	// and it (or a read this epoch that came after its vote) found the
	// request pending with last answers: Unchanged may answer from it.
	// 0: none.
	last int
	// high is the highest index of a signed vote notice this epoch: one
	// at or below it is a replay.
	high int
	// msgs is the most messages a notice announced: an entry with fewer
	// misses one.
	msgs int
	// closed: a decision, a change to read or a bad notice came: last
	// stays 0 this epoch (one replayed, older than a read, might
	// otherwise set it from that read after the decision).
	closed bool
	// saving: this store's last read of the request with the receipt it
	// is saving added, and that receipt's hash, for the receipt's notice
	// (see the comment at the top).
	saving *savingReceipt
}

type savingReceipt struct {
	entry *decodedEntry
	hash  string
}

// current is the epoch a read beginning now belongs to.
func (n *notices) current() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.epoch
}

// markLocked returns id's mark, forgetting all of them past maxNoticed.
func (n *notices) markLocked(id string) *noticeMark {
	m := n.marks[id]
	if m == nil {
		if len(n.marks) >= maxNoticed {
			n.resetLocked()
		}
		if n.marks == nil {
			n.marks = map[string]*noticeMark{}
		}
		m = &noticeMark{}
		n.marks[id] = m
	}
	return m
}

// resetLocked forgets every mark and begins a new epoch, so no entry read
// before can be extended.
func (n *notices) resetLocked() {
	n.epoch++
	clear(n.marks)
}

// unchanged reports whether the notices say id is pending with seen
// answers (see Store.Unchanged).
func (n *notices) unchanged(id string, seen int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.watching != 1 || n.shared || seen <= 0 {
		return false
	}
	m := n.marks[id]
	return m != nil && m.last == seen
}

// WatchNotices subscribes once to the notice and final channels and calls
// fn("", nil) whenever the subscription is (re)established (what was
// published meanwhile was missed: waiters read again), then fn(id, known)
// for each change of a request: known, when not nil, returns a fresh copy
// of the request exactly as the store held it just after the change, so
// its waiters need not read it. Messages added call nothing (a read shows
// them; no waiter is woken for them today).
//
// What the notices teach belongs to the one watch that heard them: while
// two run on one Store at once (a Store shared by two gateways) neither
// answers from them, for good.
func (s *Store) WatchNotices(ctx context.Context, fn func(id string, known func() *bot.Request)) error {
	s.notices.mu.Lock()
	s.notices.watching++
	if s.notices.watching > 1 {
		s.notices.shared = true
	}
	s.notices.resetLocked()
	s.notices.mu.Unlock()
	defer func() {
		s.notices.mu.Lock()
		s.notices.watching--
		s.notices.resetLocked()
		s.notices.mu.Unlock()
	}()
	resubscribed := func() {
		s.notices.mu.Lock()
		s.notices.resetLocked()
		s.notices.mu.Unlock()
		fn("", nil)
	}
	return follow(ctx, s.rdb.Subscribe(ctx, s.noticeChannel(), s.finalChannel()), "", 4096,
		func(m *goredis.Message) {
			if m.Channel == s.finalChannel() {
				s.forget(m.Payload)
				fn(m.Payload, nil)
				return
			}
			if id, known := s.heard(m.Payload); id != "" {
				fn(id, known)
			}
		},
		func(m *goredis.Subscription) {
			// One SUBSCRIBE makes both (go-redis resubscribes so too): the
			// notice channel's confirmation, the first, stands for the two.
			if m == nil || m.Channel == s.noticeChannel() {
				resubscribed()
			}
		})
}

// forget: something other than a vote notice changed id, or a notice
// named it that no script sent.
func (s *Store) forget(id string) {
	s.notices.mu.Lock()
	defer s.notices.mu.Unlock()
	m := s.notices.markLocked(id)
	m.last, m.closed = 0, true
}

// heard handles one message of the notice channel and returns the request
// whose waiters should look ("" for none) and, when the notice itself
// shows the request as it now is, a way to have it without a read.
func (s *Store) heard(payload string) (string, func() *bot.Request) {
	n, err := parseNotice(payload)
	if err != nil {
		if n.id != "" {
			s.forget(n.id)
		}
		return n.id, nil
	}
	switch n.kind {
	case noticeChange:
		s.forget(n.id)
		return n.id, nil
	case noticeReceipt:
		s.notices.mu.Lock()
		defer s.notices.mu.Unlock()
		m := s.notices.markLocked(n.id)
		sv := m.saving
		m.saving, m.last, m.closed = nil, 0, true
		if sv == nil || sv.hash != n.tag || len(sv.entry.votes) != n.index || len(sv.entry.msgs) != n.msgs {
			return n.id, nil
		}
		return n.id, sv.entry.known
	case noticeMessages:
		s.notices.mu.Lock()
		if m := s.notices.markLocked(n.id); n.index > m.msgs {
			m.msgs = n.index
		}
		s.notices.mu.Unlock()
		return "", nil
	}
	return n.id, s.applyVote(n)
}

// applyVote extends the decode cache's entry of a vote notice's request
// with its vote when the entry is the request just before it (see the
// comment at the top), and returns the request after it; nil: read.
func (s *Store) applyVote(n notice) func() *bot.Request {
	var e *decodedEntry
	if s.decoded != nil {
		e = s.decoded.get(n.id)
	}
	if e == nil {
		s.notices.mu.Lock()
		if m := s.notices.marks[n.id]; m != nil {
			m.last = 0
		}
		s.notices.mu.Unlock()
		return nil // not known here: read
	}
	if len(e.f.nk) != noticeKeyLen || !hmac.Equal([]byte(noticeTag(e.f.nk, n.signed())), []byte(n.tag)) {
		s.forget(n.id) // not from a script
		return nil
	}
	s.notices.mu.Lock()
	defer s.notices.mu.Unlock()
	m := s.notices.markLocked(n.id)
	m.last = 0
	if n.index <= m.high {
		return nil // a replay
	}
	m.high = n.index
	fresh := s.notices.watching == 1 && !s.notices.shared && e.epoch == s.notices.epoch && e.f.status == string(bot.Pending)
	// A signed notice, or a read this epoch that came after it, is the
	// latest word on the request: every later change is yet to come on
	// this subscription. (A notice replayed ahead of the read would be at
	// or below high: the one it copies came after that read, and so
	// before it. One replayed behind the read only prompts a look at the
	// read, unless a decision came since: closed.)
	if fresh && !m.closed {
		m.last = max(n.index, len(e.votes))
	}
	if !fresh || len(e.msgs) < m.msgs {
		return nil
	}
	if len(e.votes) >= n.index {
		// A late notice: the entry's read came after its vote, so the
		// entry is newer news, and what Redis held when read.
		return e.known
	}
	if len(e.votes) != n.index-1 {
		return nil // a gap
	}
	next := e.withVote(n.line, n.vote)
	s.decoded.replace(e, next)
	return func() *bot.Request {
		r := next.request()
		r.Seen = n.index
		return r
	}
}
