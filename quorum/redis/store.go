package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/quorum"
)

// MaxAnswers bounds the answers stored on one request: past it, ignored
// ones (strangers' reactions, which anyone on a relay can send) are judged
// but no longer stored or audited. Counted votes are always stored.
const MaxAnswers = 1000

// Store is the bot.Store on Redis. Every key of a request carries its id
// as a {hash tag}; votes are judged in Go (quorum.Judge) and tallied in one
// Lua script per vote.
type Store struct {
	rdb    goredis.UniversalClient
	prefix string
	refs   refCache // message → request, for requests made or posted here
	// Retention is how long a decided request is kept (default 30 days).
	Retention time.Duration

	// AfterDecide, when set, runs right after a step that decided a
	// request, before the Go side enqueues the decision (on Cluster, and
	// for decisions outside the audited vote) and before the deciding
	// gateway seals it. It is a test failpoint: serve
	// sets it only under SIGNOFF_TEST_CRASH_AFTER_DECIDE=1, to kill the
	// process exactly there (the outbox sweeper must then deliver it).
	AfterDecide func(id string)

	mu       sync.Mutex
	personas map[string]bot.Persona // request id → persona snapshot (immutable)

	// decoded keeps what reads decoded, so the next read of a request
	// decodes only its new votes; nil decodes every read afresh.
	decoded *decodeCache
	// notices is what the change notices WatchNotices handles have told.
	notices notices
	// kept is what Token and HasTokens read, while WatchTokens runs.
	kept tokenMemory
}

var _ bot.Store = (*Store)(nil)

// New returns a store on rdb whose keys start with prefix (default
// "signoff"); tests use their own prefix to share a server.
func New(rdb goredis.UniversalClient, prefix string) *Store {
	if prefix == "" {
		prefix = "signoff"
	}
	return &Store{rdb: rdb, prefix: prefix, Retention: 30 * 24 * time.Hour, personas: map[string]bot.Persona{}, decoded: newDecodeCache(maxDecoded, maxDecodedBytes)}
}

// Client returns the underlying client.
func (s *Store) Client() goredis.UniversalClient { return s.rdb }

func (s *Store) key(parts ...string) string { return s.prefix + ":" + strings.Join(parts, ":") }

// requestKeys are the keys of one request, in the order the scripts take:
// its hash, its answers, its voters and its deliveries, its posted
// messages. A request's voters ("v:<person>") and the deliveries it was
// sent ("d:<dedup key>") are fields of its hash, beside its members'
// approvals and denials so far ("ma", "md": names; "na", "nd", "mw":
// counts), so the vote script reads them in one call and a decision sets
// two TTLs. The voters and seen keys
// are a legacy request's: one made by a version before that (its hash has
// "deadline" where later ones have "due"), whose voters and deliveries are
// still read and written there, by every version. A request made since has
// a string at its seen key instead, so an older replica's vote script
// fails on it with nothing written (or, with no delivery id, at the
// missing "deadline"): during a rolling upgrade older replicas refuse
// votes on the newer requests, and nobody votes twice.
func (s *Store) requestKeys(id string) []string {
	t := "{" + id + "}"
	return []string{s.key("req", t), s.key("req", t, "votes"), s.key("req", t, "voters"), s.key("req", t, "seen"), s.key("req", t, "msgs")}
}

func (s *Store) channel() string { return s.key("decided") }

// finalChannel carries each decision's id, once, as it is made (the
// scripts that decide publish it there too); no votes, no seals.
func (s *Store) finalChannel() string { return s.channel() + ":final" }

// noticeChannel carries every change of a request, one message a change,
// in the forms notice.go parses: a vote that left it pending with the
// vote itself; added messages; a change to read. Decisions are on
// finalChannel, not here. The channel set, with the decision channel
// (each change's bare id, for replicas of earlier versions and Watch):
// WatchNotices follows this one and finalChannel.
func (s *Store) noticeChannel() string { return s.channel() + ":notice" }

// DecisionChannel is the pub/sub channel every decision is published on,
// and nothing else; a gateway's one subscription (WatchNotices) follows
// it and the notice channel.
func (s *Store) DecisionChannel() string { return s.finalChannel() }

func unavailable(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return bot.Errorf(bot.EUnavailable, "store failed (%s): %v", op, err)
}

// PutPersona stores p.
func (s *Store) PutPersona(ctx context.Context, p bot.Persona) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		pl.Set(ctx, s.key("persona", p.Name), b, 0)
		pl.SAdd(ctx, s.key("personas"), p.Name)
		return nil
	})
	if err != nil {
		return unavailable("put persona", err)
	}
	return nil
}

// SyncPersonas makes the stored personas exactly ps: each is stored, and
// any other one (its file was deleted) is removed, so a persona taken out
// of the folder cannot go on approving. It returns the names removed.
// Requests already made keep the snapshot they were created with.
func (s *Store) SyncPersonas(ctx context.Context, ps []bot.Persona) ([]string, error) {
	keep := map[string]bool{}
	for _, p := range ps {
		if err := s.PutPersona(ctx, p); err != nil {
			return nil, err
		}
		keep[p.Name] = true
	}
	names, err := s.rdb.SMembers(ctx, s.key("personas")).Result()
	if err != nil {
		return nil, unavailable("list personas", err)
	}
	var removed []string
	for _, n := range names {
		if keep[n] {
			continue
		}
		if _, err := s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
			pl.Del(ctx, s.key("persona", n))
			pl.SRem(ctx, s.key("personas"), n)
			return nil
		}); err != nil {
			return removed, unavailable("remove persona", err)
		}
		removed = append(removed, n)
	}
	sort.Strings(removed)
	return removed, nil
}

// Persona returns the persona called name.
func (s *Store) Persona(ctx context.Context, name string) (bot.Persona, error) {
	b, err := s.rdb.Get(ctx, s.key("persona", name)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return bot.Persona{}, bot.Errorf(bot.ENotFound, "unknown persona %q", name)
	}
	if err != nil {
		return bot.Persona{}, unavailable("get persona", err)
	}
	var p bot.Persona
	if err := json.Unmarshal(b, &p); err != nil {
		return bot.Persona{}, fmt.Errorf("decode persona %s: %w", name, err)
	}
	return p, nil
}

// Create stores r, pending, with a snapshot of p.
func (s *Store) Create(ctx context.Context, r *bot.Request, p bot.Persona) error {
	doc := *r
	doc.Votes, doc.Messages = nil, nil
	docJSON, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	pJSON, err := json.Marshal(p)
	if err != nil {
		return err
	}
	msgs := make([]any, 0, len(r.Messages))
	for _, m := range r.Messages {
		b, _ := json.Marshal(m)
		msgs = append(msgs, b)
	}
	keys := s.requestKeys(r.ID)
	ttl := time.Until(r.Deadline) + s.Retention
	request := func(pl goredis.Pipeliner) {
		pl.HSet(ctx, keys[0], map[string]any{
			"doc": docJSON, "persona": pJSON, "status": string(bot.Pending), "nk": newNoticeKey(),
			"due": r.Deadline.UnixMilli(), "aq": p.ApprovalQuorum, "dq": max(p.DenyQuorum, 1),
		})
		pl.Expire(ctx, keys[0], ttl)
		pl.Set(ctx, keys[3], "this request's deliveries are in its hash", ttl) // see requestKeys
		if len(msgs) > 0 {
			pl.RPush(ctx, keys[4], msgs...)
			pl.Expire(ctx, keys[4], ttl)
		}
	}
	indexes := func(pl goredis.Pipeliner) {
		pl.ZAdd(ctx, s.key("pending"), goredis.Z{Score: float64(r.Deadline.UnixMilli()), Member: r.ID})
		pl.ZAdd(ctx, s.key("recent"), goredis.Z{Score: float64(r.CreatedAt.UnixMilli()), Member: r.ID})
		pl.ZRemRangeByRank(ctx, s.key("recent"), 0, -10001)
		for _, m := range r.Messages {
			pl.Set(ctx, s.key("ref", m.Key()), r.ID, ttl)
		}
	}
	if _, cluster := s.rdb.(*goredis.ClusterClient); !cluster {
		// One server: the request and its indexes in one transaction, one
		// round trip.
		if _, err := s.rdb.TxPipelined(ctx, func(pl goredis.Pipeliner) error {
			request(pl)
			indexes(pl)
			return nil
		}); err != nil {
			return unavailable("create request", err)
		}
	} else {
		_, err = s.rdb.TxPipelined(ctx, func(pl goredis.Pipeliner) error {
			request(pl)
			return nil
		})
		if err != nil {
			return unavailable("create request", err)
		}
		// Indexes live outside the request's slot; a crash between the two
		// steps leaves a request that the sweeper cannot see, so it would
		// never be approved either: still closed.
		_, err = s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
			indexes(pl)
			return nil
		})
		if err != nil {
			return unavailable("index request", err)
		}
	}
	s.remember(r.ID, p)
	for _, m := range r.Messages {
		s.refs.put(m.Key(), r.ID)
	}
	return nil
}

func (s *Store) remember(id string, p bot.Persona) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.personas) >= 50000 {
		clear(s.personas)
	}
	s.personas[id] = p
}

// AddMessages records posted messages and indexes them for Lookup.
func (s *Store) AddMessages(ctx context.Context, id string, refs []bot.MessageRef) error {
	if len(refs) == 0 {
		return nil
	}
	keys := s.requestKeys(id)
	ttl := s.Retention + 7*24*time.Hour
	args := []any{s.noticeChannel(), id, int64(ttl / time.Second)}
	for _, m := range refs {
		b, _ := json.Marshal(m)
		args = append(args, b)
	}
	if err := addMessagesScript.Run(ctx, s.rdb, keys[4:5], args...).Err(); err != nil {
		return unavailable("add messages", err)
	}
	_, err := s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		for _, m := range refs {
			pl.Set(ctx, s.key("ref", m.Key()), id, ttl)
		}
		return nil
	})
	if err != nil {
		return unavailable("add messages", err)
	}
	for _, m := range refs {
		s.refs.put(m.Key(), id)
	}
	return nil
}

// Lookup finds the request a message belongs to.
func (s *Store) Lookup(ctx context.Context, ref bot.MessageRef) (string, error) {
	if id, ok := s.refs.get(ref.Key()); ok {
		return id, nil
	}
	id, err := s.rdb.Get(ctx, s.key("ref", ref.Key())).Result()
	if errors.Is(err, goredis.Nil) {
		return "", bot.Errorf(bot.ENotFound, "no request was posted as %s message %s", ref.Platform, ref.ID)
	}
	if err != nil {
		return "", unavailable("lookup", err)
	}
	s.refs.put(ref.Key(), id)
	return id, nil
}

// Get returns the request with its votes and messages.
func (s *Store) Get(ctx context.Context, id string) (*bot.Request, error) {
	rs, err := s.getMany(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	if rs[0] == nil {
		return nil, bot.Errorf(bot.ENotFound, "unknown request %q", id)
	}
	return rs[0], nil
}

// requestFields are the fields of a request's hash that a read decodes;
// getMany asks Redis for these only (HMGET), in this order, not for the
// persona snapshot and the outbox's bookkeeping beside them.
var requestFields = []string{"doc", "status", "decided_at", "decided_by", "reason", "always", "receipt", "nk"}

// fields is a request hash's requestFields ("" when absent); nk is the
// key its vote notices are signed with (see notice.go).
type fields struct {
	doc, status, decidedAt, decidedBy, reason, always, receipt, nk string
}

func fieldsOf(vals []any) fields {
	s := func(i int) string {
		if i < len(vals) {
			if v, ok := vals[i].(string); ok {
				return v
			}
		}
		return ""
	}
	return fields{doc: s(0), status: s(1), decidedAt: s(2), decidedBy: s(3), reason: s(4), always: s(5), receipt: s(6), nk: s(7)}
}

// getMany loads requests in one round trip; a missing one is nil. Each
// request's messages are read before its votes: a vote notice then
// extends the read only if no message was added between the two (its
// notice came first; see notices.applyVote).
func (s *Store) getMany(ctx context.Context, ids []string) ([]*bot.Request, error) {
	type cmds struct {
		h     *goredis.SliceCmd
		votes *goredis.StringSliceCmd
		msgs  *goredis.StringSliceCmd
	}
	all := make([]cmds, len(ids))
	epoch := s.notices.current()
	_, err := s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		for i, id := range ids {
			k := s.requestKeys(id)
			h, msgs := pl.HMGet(ctx, k[0], requestFields...), pl.LRange(ctx, k[4], 0, -1)
			all[i] = cmds{h, pl.LRange(ctx, k[1], 0, -1), msgs}
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, unavailable("get request", err)
	}
	out := make([]*bot.Request, len(ids))
	for i, c := range all {
		f := fieldsOf(c.h.Val())
		if f.doc == "" {
			s.decoded.drop(ids[i])
			continue
		}
		r, err := s.decoded.decodeAt(ids[i], f, c.votes.Val(), c.msgs.Val(), epoch)
		if err != nil {
			return nil, fmt.Errorf("decode request %s: %w", ids[i], err)
		}
		r.Seen = len(c.votes.Val())
		out[i] = r
	}
	return out, nil
}

// maxListed bounds the pending requests List reads.
const maxListed = 10000

// List returns pending requests by deadline, or with another status (or
// none) the most recent ones, oldest first.
func (s *Store) List(ctx context.Context, f bot.Filter) ([]*bot.Request, error) {
	var (
		ids []string
		err error
	)
	if f.Status == bot.Pending {
		if ids, err = s.PendingIDs(ctx); err != nil {
			return nil, err
		}
	} else if ids, err = s.rdb.ZRange(ctx, s.key("recent"), -1000, -1).Result(); err != nil {
		return nil, unavailable("list requests", err)
	}
	rs, err := s.getMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*bot.Request, 0, len(rs))
	for _, r := range rs {
		if r != nil && (f.Status == "" || r.Status == f.Status) {
			out = append(out, r)
		}
	}
	if f.Status != bot.Pending {
		sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	}
	return out, nil
}

// snapshot returns the persona a request was created under.
func (s *Store) snapshot(ctx context.Context, id string) (bot.Persona, error) {
	s.mu.Lock()
	p, ok := s.personas[id]
	s.mu.Unlock()
	if ok {
		return p, nil
	}
	b, err := s.rdb.HGet(ctx, s.requestKeys(id)[0], "persona").Bytes()
	if errors.Is(err, goredis.Nil) {
		return bot.Persona{}, bot.Errorf(bot.ENotFound, "unknown request %q", id)
	}
	if err != nil {
		return bot.Persona{}, unavailable("get persona snapshot", err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return bot.Persona{}, fmt.Errorf("decode persona snapshot: %w", err)
	}
	s.remember(id, p)
	return p, nil
}

// RecordVote judges b against the request's persona and tallies it.
func (s *Store) RecordVote(ctx context.Context, b bot.Ballot) (bot.VoteOutcome, error) {
	out, _, err := s.runVote(ctx, b, voteScript, nil, nil)
	return out, err
}

// runVote judges b and runs script (the vote script, alone or wrapped)
// with the request's keys and extra ones after them. It returns the
// outcome and the script's seventh value, when there is one.
func (s *Store) runVote(ctx context.Context, b bot.Ballot, script *goredis.Script, extraKeys []string, extraArgs []any) (bot.VoteOutcome, int64, error) {
	c, err := s.prepareVote(ctx, b, extraKeys)
	if err != nil {
		return bot.VoteOutcome{RequestID: b.RequestID}, 0, err
	}
	res, err := script.Run(ctx, s.rdb, c.keys, append(c.args, extraArgs...)...).Slice()
	if err != nil {
		return bot.VoteOutcome{RequestID: b.RequestID}, 0, unavailable("record vote", err)
	}
	return s.voteResult(ctx, b.RequestID, script, res)
}

// voteCall is a vote script's call, judged and ready to run: the
// request's keys and extra ones, and the vote script's arguments.
type voteCall struct {
	id   string
	keys []string
	args []any
}

// prepareVote judges b against the request's persona (read once, then
// remembered) and builds the vote script's call.
func (s *Store) prepareVote(ctx context.Context, b bot.Ballot, extraKeys []string) (voteCall, error) {
	p, err := s.snapshot(ctx, b.RequestID)
	if err != nil {
		return voteCall{}, err
	}
	v := quorum.Judge(p, b.Voter, b.Proof)
	at := b.At
	if at.IsZero() {
		at = time.Now()
	}
	voteJSON, err := json.Marshal(bot.Vote{Voter: b.Voter, Name: v.Person, Choice: b.Choice, Proof: b.Proof, At: at.UTC(), Reason: b.Reason})
	if err != nil {
		return voteCall{}, err
	}
	keys := append(s.requestKeys(b.RequestID)[:4:4], extraKeys...)
	args := []any{b.DedupKey, v.Person, string(v.Role), string(b.Choice), v.Why, voteJSON,
		at.UnixMilli(), s.channel(), b.RequestID, int64(s.Retention / time.Second), MaxAnswers}
	return voteCall{id: b.RequestID, keys: keys, args: args[:len(args):len(args)]}, nil
}

// voteResult reads a vote script's answer (script is the one that ran).
func (s *Store) voteResult(ctx context.Context, id string, script *goredis.Script, res []any) (bot.VoteOutcome, int64, error) {
	out := bot.VoteOutcome{RequestID: id}
	result, _ := res[0].(string)
	switch result {
	case "missing":
		return out, 0, bot.Errorf(bot.ENotFound, "unknown request %q", id)
	case "conflict":
		return out, 0, bot.ErrAuditConflict
	}
	out.Result = bot.Result(result)
	out.Notified = true // both vote scripts publish what they store
	out.Reason, _ = res[1].(string)
	st, _ := res[2].(string)
	out.Status = bot.Status(st)
	n, _ := res[3].(int64)
	out.Decided = n == 1
	if len(res) > 4 {
		rec, _ := res[4].(int64)
		out.Recorded = rec == 1
	}
	if len(res) > 5 {
		g, _ := res[5].(int64)
		out.Grant = g == 1
	}
	var extra int64
	if len(res) > 6 {
		extra, _ = res[6].(int64)
	}
	if out.Decided {
		// Enqueued before it leaves the pending index: a crash in between
		// leaves a decided request there, which the outbox sweeper finds
		// (SweepUnqueued) and enqueues.
		s.afterDecide(id)
		if script != auditedVoteScript { // that one enqueued it and left the index itself
			s.enqueue(ctx, id)
		}
	}
	return out, extra, nil
}

// Resolve decides a pending request; false when it was already decided.
// An expiry only takes effect once the deadline has passed.
func (s *Store) Resolve(ctx context.Context, id string, st bot.Status, reason string, at time.Time) (bool, error) {
	due := ""
	if st == bot.Expired {
		due = "due"
	}
	n, err := resolveScript.Run(ctx, s.rdb, s.requestKeys(id)[:4],
		string(st), reason, at.UnixMilli(), s.channel(), id, int64(s.Retention/time.Second), due).Int()
	if err != nil {
		return false, unavailable("resolve request", err)
	}
	if n == 1 {
		s.afterDecide(id)
		s.enqueue(ctx, id)
		return true, nil
	}
	// Not decided by this call. A request gone from the store leaves the
	// index; one decided by another step is removed by that step once it
	// has enqueued the decision, or by the outbox sweeper if it died
	// before: removing it here could lose its side effects.
	if err := s.rdb.HGet(ctx, s.requestKeys(id)[0], "status").Err(); errors.Is(err, goredis.Nil) {
		s.rdb.ZRem(ctx, s.key("pending"), id)
	}
	return false, nil
}

func (s *Store) afterDecide(id string) {
	if s.AfterDecide != nil {
		s.AfterDecide(id)
	}
}

// Due returns up to 1000 pending requests whose deadline has passed.
func (s *Store) Due(ctx context.Context, now time.Time) ([]string, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.key("pending"), &goredis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: 1000,
	}).Result()
	if err != nil {
		return nil, unavailable("due requests", err)
	}
	return ids, nil
}

// Watch subscribes once to decisions and calls fn("") whenever the
// subscription is (re)established — decisions published while it was down
// were missed, so waiters should look again — then fn(id) for each
// decision, until ctx ends.
func (s *Store) Watch(ctx context.Context, fn func(id string)) error {
	return s.watch(ctx, s.channel(), fn)
}

// WatchFinal is Watch for decisions alone: fn(id) once per request
// decided (approved, denied, expired or withdrawn), never for a vote that
// left it pending or for its seal; fn("") as the subscription is (re)made.
func (s *Store) WatchFinal(ctx context.Context, fn func(id string)) error {
	return s.watch(ctx, s.finalChannel(), fn)
}

func (s *Store) watch(ctx context.Context, channel string, fn func(id string)) error {
	return follow(ctx, s.rdb.Subscribe(ctx, channel), "", 4096,
		func(m *goredis.Message) { fn(m.Payload) },
		func(*goredis.Subscription) { fn("") })
}

// follow runs subscription ps until ctx ends or it closes: msg for each
// message, and resub once it is subscribed (with nil) and again at each
// channel's resubscription go-redis makes after a reconnect (messages sent
// meanwhile are lost: resub is where a caller makes up for them). what
// names the subscription in its errors ("" for the decisions'); size is
// its channel's buffer.
func follow(ctx context.Context, ps *goredis.PubSub, what string, size int, msg func(*goredis.Message), resub func(*goredis.Subscription)) error {
	defer ps.Close()
	name := "subscribe"
	if what != "" {
		name += " to " + what
	}
	if _, err := ps.Receive(ctx); err != nil {
		return unavailable(name, err)
	}
	resub(nil) // subscribed
	// With subscriptions in the channel, go-redis' resubscription after a
	// reconnect shows up as a *Subscription.
	ch := ps.ChannelWithSubscriptions(goredis.WithChannelSize(size))
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m, ok := <-ch:
			if !ok {
				return errors.New(strings.TrimSpace(what + " subscription closed"))
			}
			switch m := m.(type) {
			case *goredis.Message:
				msg(m)
			case *goredis.Subscription:
				if m.Kind == "subscribe" {
					resub(m)
				}
			}
		}
	}
}

// Ping checks that the store answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return unavailable("ping", err)
	}
	return nil
}
