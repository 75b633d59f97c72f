package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
//     verify it, run the audited vote script (qredis.Store.RecordVoteAudited:
//     the tally and its audit record in one Redis step) on a scratch request,
//     answer. No audit file, no waiters, no notices heard, no metrics.
//
// The minimum's requests and audit chain live under a prefix of their own
// on the gateway's Redis, deleted when the run ends. After the loaded
// phase, the minimum runs again under the same load (minimumLoaded): each
// client its own scratch request and chain, at /minimum/{client}.
const (
	seriesPath  = "/series"
	minimumPath = "/minimum"
)

// scratchPrefix is the start of every key the minimum writes in a run.
func scratchPrefix() string { return "signoff-bench-minimum-" + bot.NewID()[:8] }

// minimum is the minimum handler's state: a scratch store, its persona
// (the bench's voters as members, all of them needed to decide, as the
// bench's own persona), the request being voted on and the scratch chain.
type minimum struct {
	rdb     goredis.UniversalClient
	prefix  string
	store   *qredis.Store
	persona bot.Persona
	voters  []*signing.Key
	gateway string // the p tag of its reactions (any key: the handler reads only the e tag)

	mu      sync.Mutex
	id      string // the request voted on
	eventID string
	next    int // the voter who votes next; 0: a new request first
	seq     uint64
	prev    string
}

func newMinimum(rdb goredis.UniversalClient, prefix string, voters []*signing.Key) *minimum {
	m := &minimum{rdb: rdb, prefix: prefix, voters: voters, gateway: signing.NewKey().PublicKey()}
	m.store = qredis.New(rdb, m.prefix)
	m.persona = bot.Persona{
		Name:  "bench-minimum",
		Owner: &bot.Person{Name: "owner", Identities: []bot.Identity{{Platform: bot.Nostr, ID: signing.NewKey().PublicKey()}}},
		// As `bench --votes K`: K members, all needed; one voter decides alone.
		ApprovalQuorum: len(voters), DenyQuorum: 1, Proof: bot.ProofAny, Timeout: time.Hour,
	}
	for i, k := range voters {
		m.persona.Members = append(m.persona.Members, bot.Person{Name: fmt.Sprint("voter", i), Identities: []bot.Identity{{Platform: bot.Nostr, ID: k.PublicKey()}}})
	}
	return m
}

// reaction returns the next vote to post, making a scratch request first
// when the last one was decided (outside the timing).
func (m *minimum) reaction(ctx context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next == 0 {
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
		m.id, m.eventID = r.ID, r.EventID
	}
	k := m.voters[m.next]
	m.next = (m.next + 1) % len(m.voters)
	return signing.NewReactionWithReason(k, m.eventID, m.gateway, bot.Approve, "", time.Now())
}

// vote is the minimum handler.
func (m *minimum) vote(w http.ResponseWriter, r *http.Request) {
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
	m.mu.Lock()
	defer m.mu.Unlock()
	if re.Target != m.eventID {
		http.Error(w, "not the minimum's request", http.StatusNotFound)
		return
	}
	b := re.Ballot(body)
	b.RequestID, b.At = m.id, time.Now()
	line, err := json.Marshal(struct {
		Seq       uint64          `json:"seq"`
		Prev      string          `json:"prev"`
		Type      string          `json:"type"`
		RequestID string          `json:"request_id"`
		Voter     bot.Identity    `json:"voter"`
		Choice    bot.Choice      `json:"choice"`
		Evidence  json.RawMessage `json:"evidence"`
	}{m.seq + 1, m.prev, "vote", m.id, b.Voter, b.Choice, b.Evidence})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(line)
	hash := hex.EncodeToString(sum[:])
	out, _, err := m.store.RecordVoteAudited(r.Context(), b, bot.AuditRef{Seq: m.seq + 1, Prev: m.prev, Hash: hash, Line: line, Shared: true})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	m.seq, m.prev = m.seq+1, hash
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(struct {
		Result bot.Result `json:"result"`
		Status bot.Status `json:"status"`
	}{out.Result, out.Status})
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
