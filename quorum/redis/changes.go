package redis

import (
	"context"
	"errors"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
)

var (
	_ bot.Notifier      = (*Store)(nil)
	_ bot.SnapshotStore = (*Store)(nil)
)

// Changed publishes id, as a change to read, on the notice channel and
// on the decision channel (replicas of earlier versions follow that one):
// waiters on every replica look again (a vote was counted, the request is
// still pending).
func (s *Store) Changed(ctx context.Context, id string) error {
	_, err := s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		pl.Publish(ctx, s.noticeChannel(), noticeChange+id)
		pl.Publish(ctx, s.channel(), id)
		return nil
	})
	if err != nil {
		return unavailable("publish change", err)
	}
	return nil
}

// createdChannel carries the id of each request as it is created. No
// waiter follows it (a new request has none): live lists do.
func (s *Store) createdChannel() string { return s.key("created") }

// Created publishes id on the creation channel, so a live list (the
// console's feed) on every replica shows the new request at once.
func (s *Store) Created(ctx context.Context, id string) error {
	if err := s.rdb.Publish(ctx, s.createdChannel(), id).Err(); err != nil {
		return unavailable("publish creation", err)
	}
	return nil
}

// WatchCreated calls fn(id) for each request created on any replica,
// and fn("") as the subscription is (re)made, until ctx ends.
func (s *Store) WatchCreated(ctx context.Context, fn func(id string)) error {
	return s.watch(ctx, s.createdChannel(), fn)
}

// Snapshot returns the persona the request was created under.
func (s *Store) Snapshot(ctx context.Context, id string) (bot.Persona, error) {
	return s.snapshot(ctx, id)
}

// PendingCount is how many requests wait for a decision, across replicas.
func (s *Store) PendingCount(ctx context.Context) (int64, error) {
	n, err := s.rdb.ZCard(ctx, s.key("pending")).Result()
	if err != nil {
		return 0, unavailable("count pending", err)
	}
	return n, nil
}

var _ bot.ChangeStore = (*Store)(nil)

// Unchanged reports whether request id is still pending with seen answers
// stored: one round trip of two small replies, no decoding — or none,
// when the last change notice WatchNotices heard of id was a vote that
// left it pending with seen answers. That answer is as good as the round
// trip's for a caller whose waiter on id is registered, before it asks,
// where that watch wakes it (bot.WaitFunc): a change after that notice
// comes later on the same subscription and wakes it, and a lost one
// means a resubscription, which wakes every waiter and forgets.
func (s *Store) Unchanged(ctx context.Context, id string, seen int) (bool, error) {
	if s.notices.unchanged(id, seen) {
		return true, nil
	}
	k := s.requestKeys(id)
	var st *goredis.StringCmd
	var n *goredis.IntCmd
	_, err := s.rdb.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		st = pl.HGet(ctx, k[0], "status")
		n = pl.LLen(ctx, k[1])
		return nil
	})
	if errors.Is(err, goredis.Nil) {
		return false, nil // gone: the full read says so
	}
	if err != nil {
		return false, unavailable("look at request", err)
	}
	return st.Val() == string(bot.Pending) && n.Val() == int64(seen), nil
}
