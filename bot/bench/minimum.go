package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	qredis "github.com/signoff/signoff/quorum/redis"
	"github.com/signoff/signoff/signing"
)

// The floor's pieces are measured apart and summed; a vote does them one
// after another in one handler, and must also run the vote script. Two
// more handlers on the floor's server measure that, beside the floor and
// the gateway's vote in the same run:
//
//   - series: the floor's own pieces in one handler — read the body,
//     verify it, PING Redis, answer. What the floor costs done as a vote
//     does it.
//   - minimum: the least a vote can do by the design — read the body,
//     verify it, run the audited vote script (the tally and its audit
//     record in one Redis step) on a scratch request, answer. Votes that
//     wait for the chain at once go in one round trip, as the gateway's
//     group commit sends them (qredis.Store.CommitAuditBatch; one at a
//     time with RecordVoteAudited on Cluster, as there). No audit file,
//     no waiters, no notices heard, no metrics.
//
// The minimum's requests and audit chain live under a prefix of their own
// on the gateway's Redis, deleted when the run ends. After the loaded
// phase, the minimum runs again under the same load (minimumLoaded): each
// client votes on scratch requests of its own, at /minimum/{client}, all
// on the one chain.
const (
	seriesPath  = "/series"
	minimumPath = "/minimum"
)

// scratchPrefix is the start of every key the minimum writes in a run.
func scratchPrefix() string { return "signoff-bench-minimum-" + bot.NewID()[:8] }

// minimum is the minimum handler's state: a scratch store, its persona
// (the bench's voters as members, all of them needed to decide, as the
// bench's own persona), each client's request and the scratch chain.
type minimum struct {
	store   *qredis.Store
	batch   bool // the store commits a batch in one round trip (not Cluster)
	persona bot.Persona
	voters  []*signing.Key
	gateway string // the p tag of its reactions (any key: the handler reads only the e tag)

	cmu     sync.Mutex
	clients []*minClient

	// The chain: seq and prev belong to the committer (the leader of
	// the group commit, or whoever holds chain on Cluster).
	chain sync.Mutex
	seq   uint64
	prev  string
	qmu   sync.Mutex
	queue []*minVote
	lead  bool
}

// minClient is one client's request being voted on.
type minClient struct {
	mu      sync.Mutex
	id      string
	eventID string
	next    int // the voter who votes next; 0: a new request first
}

// minVote is one vote waiting for the chain.
type minVote struct {
	c    *bot.AuditCommit
	line []byte
	done chan struct{} // closed once committed
	turn chan struct{} // closed when it is to lead the next batch
	err  error
}

func newMinimum(rdb goredis.UniversalClient, prefix string, voters []*signing.Key) *minimum {
	m := &minimum{store: qredis.New(rdb, prefix), voters: voters, gateway: signing.NewKey().PublicKey()}
	m.batch = m.store.CanBatchAudit()
	m.persona = bot.Persona{
		Name:  "bench-minimum",
		Owner: &bot.Person{Name: "owner", Identities: []bot.Identity{{Platform: bot.Nostr, ID: signing.NewKey().PublicKey()}}},
		// As `bench --votes K`: K members, all needed; one voter decides alone.
		ApprovalQuorum: len(voters), DenyQuorum: 1, Proof: bot.ProofAny, Timeout: time.Hour,
	}
	for i, k := range voters {
		m.persona.Members = append(m.persona.Members, bot.Person{Name: fmt.Sprint("voter", i), Identities: []bot.Identity{{Platform: bot.Nostr, ID: k.PublicKey()}}})
	}
	m.clients = []*minClient{{}}
	return m
}

// grow makes sure clients 0…n-1 exist (0 is the unloaded phase's).
func (m *minimum) grow(n int) {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	for len(m.clients) < n {
		m.clients = append(m.clients, &minClient{})
	}
}

func (m *minimum) client(i int) *minClient {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	if i < 0 || i >= len(m.clients) {
		return nil
	}
	return m.clients[i]
}

// reaction returns client i's next vote to post, making a scratch request
// first when its last one was decided (outside the timing).
func (m *minimum) reaction(ctx context.Context, i int) ([]byte, error) {
	c := m.client(i)
	if c == nil {
		return nil, fmt.Errorf("bench: the minimum has no client %d", i)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == 0 {
		now := time.Now().UTC().Truncate(time.Millisecond)
		ev := bot.NewID() + bot.NewID()
		sum := sha256.Sum256([]byte(ev))
		r := &bot.Request{
			ID: bot.NewID(), Persona: m.persona.Name, Kind: bot.KindCommand, Action: "deploy --bench-minimum", Reason: "signoff bench",
			Status: bot.Pending, Level: bot.Dangerous, Reasons: []string{}, CreatedAt: now, Deadline: now.Add(time.Hour),
			EventID: hex.EncodeToString(sum[:]),
		}
		r.Messages = []bot.MessageRef{{Platform: bot.Nostr, ID: r.EventID}}
		if err := m.store.Create(ctx, r, m.persona); err != nil {
			return nil, fmt.Errorf("bench: the minimum's scratch request: %w", err)
		}
		c.id, c.eventID = r.ID, r.EventID
	}
	k := m.voters[c.next]
	c.next = (c.next + 1) % len(m.voters)
	return signing.NewReactionWithReason(k, c.eventID, m.gateway, bot.Approve, "", time.Now())
}

// handler is the minimum handler of client i (negative: the client in the
// path, /minimum/{client}).
func (m *minimum) handler(i int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n := i
		if n < 0 {
			var err error
			if n, err = strconv.Atoi(r.PathValue("client")); err != nil {
				n = -1
			}
		}
		c := m.client(n)
		if c == nil {
			http.Error(w, "no such client of the minimum", http.StatusNotFound)
			return
		}
		m.vote(w, r, c)
	}
}

// vote is the minimum: verify, tally with the record, answer.
func (m *minimum) vote(w http.ResponseWriter, r *http.Request, c *minClient) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	re, err := signing.ParseReaction(body, time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	id, eventID := c.id, c.eventID
	c.mu.Unlock()
	if re.Target != eventID {
		http.Error(w, "not the minimum's request", http.StatusNotFound)
		return
	}
	b := re.Ballot(body)
	b.RequestID, b.At = id, time.Now()
	line, err := json.Marshal(struct {
		Type      string          `json:"type"`
		RequestID string          `json:"request_id"`
		Voter     bot.Identity    `json:"voter"`
		Choice    bot.Choice      `json:"choice"`
		Evidence  json.RawMessage `json:"evidence"`
	}{"vote", id, b.Voter, b.Choice, b.Evidence})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	out, err := m.tally(r.Context(), b, line)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(struct {
		Result bot.Result `json:"result"`
		Status bot.Status `json:"status"`
	}{out.Result, out.Status})
}

// tally commits b with its record on the chain.
func (m *minimum) tally(ctx context.Context, b bot.Ballot, line []byte) (bot.VoteOutcome, error) {
	if !m.batch {
		m.chain.Lock()
		defer m.chain.Unlock()
		ref := m.ref(m.seq+1, m.prev, line)
		out, _, err := m.store.RecordVoteAudited(ctx, b, ref)
		if err == nil {
			m.seq, m.prev = ref.Seq, ref.Hash
		}
		return out, err
	}
	c, err := m.store.PrepareVoteAudit(ctx, b)
	if err != nil {
		return bot.VoteOutcome{}, err
	}
	v := &minVote{c: c, line: line, done: make(chan struct{}), turn: make(chan struct{})}
	m.qmu.Lock()
	m.queue = append(m.queue, v)
	if m.lead {
		m.qmu.Unlock()
		select {
		case <-v.done:
			return v.c.Out, v.err
		case <-v.turn: // first in the queue once the last batch went
		}
		m.qmu.Lock()
	}
	m.lead = true
	batch := m.queue
	m.queue = nil
	m.qmu.Unlock()
	m.commit(context.WithoutCancel(ctx), batch) // the batch holds other clients' votes too
	m.qmu.Lock()
	if len(m.queue) > 0 {
		close(m.queue[0].turn)
	} else {
		m.lead = false
	}
	m.qmu.Unlock()
	return v.c.Out, v.err
}

// commit sends batch in one round trip, chained after the head. A
// conflict (nothing done: a Redis that had not loaded the scripts yet)
// sends the rest again, a few times.
func (m *minimum) commit(ctx context.Context, batch []*minVote) {
again:
	for try := 0; len(batch) > 0; try++ {
		cs := make([]*bot.AuditCommit, len(batch))
		seq, prev := m.seq, m.prev
		for i, v := range batch {
			seq++
			v.c.Ref = m.ref(seq, prev, v.line)
			prev = v.c.Ref.Hash
			cs[i] = v.c
		}
		m.store.CommitAuditBatch(ctx, cs)
		var broken error
		for i, v := range batch {
			switch {
			case broken != nil:
				v.err = broken
			case errors.Is(v.c.Err, bot.ErrAuditConflict) && try < 3:
				batch = batch[i:] // not done: again
				continue again
			case v.c.Err != nil:
				v.err, broken = v.c.Err, fmt.Errorf("bench: a minimum vote before it in the batch failed: %w", v.c.Err)
			case !v.c.InChain:
				v.err = errors.New("bench: a minimum vote's record did not join the chain")
				broken = v.err
			default:
				m.seq, m.prev = v.c.Ref.Seq, v.c.Ref.Hash
			}
			close(v.done)
		}
		return
	}
}

// ref is the record of line at seq after prev.
func (m *minimum) ref(seq uint64, prev string, line []byte) bot.AuditRef {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write([]byte(strconv.FormatUint(seq, 10)))
	h.Write(line)
	return bot.AuditRef{Seq: seq, Prev: prev, Hash: hex.EncodeToString(h.Sum(nil)), Line: line, Shared: true}
}

// series is the series handler: the floor's pieces one after another.
func series(rdb goredis.UniversalClient) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err == nil {
			_, err = signing.ParseReaction(body, time.Now())
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := rdb.Ping(r.Context()).Err(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"result":"counted"}`+"\n")
	}
}

// deleteScratch deletes every key under prefix (the minimum's requests,
// chains and outboxes).
func deleteScratch(ctx context.Context, rdb goredis.UniversalClient, prefix string) error {
	del := func(ctx context.Context, c goredis.Cmdable) error {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := c.Del(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	}
	var err error
	if c, ok := rdb.(*goredis.ClusterClient); ok {
		err = c.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return del(ctx, c) })
	} else {
		err = del(ctx, rdb)
	}
	if err != nil {
		return fmt.Errorf("bench: deleting the minimum's scratch keys (%s*): %w", prefix, err)
	}
	return nil
}
