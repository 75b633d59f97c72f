package redis_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	qredis "github.com/signoff/signoff/quorum/redis"
)

// clusterServer starts a one-node Redis Cluster (all 16384 slots) on a
// free port, or skips when redis-server is not installed. Only a real
// cluster refuses a script or transaction whose keys span slots.
func clusterServer(t *testing.T) string {
	t.Helper()
	addr := bottest.StartRedisServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf").Addr()
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", "0", "16383").Err(); err != nil {
		t.Fatal(err)
	}
	for {
		info, _ := c.ClusterInfo(ctx).Result()
		if strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok: %s", info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return addr
}

// TestClusterLifecycle runs a request's whole life through the gateway on
// Redis Cluster (opened by the SIGNOFF_REDIS_URL cluster form): every
// multi-key script and transaction stays in the request's slot.
func TestClusterLifecycle(t *testing.T) {
	addr := clusterServer(t)
	rdb, err := qredis.Open("redis://" + addr + "?addr=" + addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rdb.(*goredis.ClusterClient); !ok {
		t.Fatalf("Open gave %T, want a cluster client", rdb)
	}
	t.Cleanup(func() { rdb.Close() })
	alice, bob, carol := bottest.NewPerson("alice"), bottest.NewPerson("bob"), bottest.NewPerson("carol")
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}},
		Members:        []bot.Person{{Name: "bob", Identities: []bot.Identity{bob.Identity()}}, {Name: "carol", Identities: []bot.Identity{carol.Identity()}}},
		ApprovalQuorum: 2, DenyQuorum: 1, Timeout: time.Minute}
	env := bottest.NewOn(t, rdb, "signofftest:cluster", p, nil)
	if env.Audit.Batches() {
		t.Fatal("the audit log group-commits on Cluster, where a vote and its record are in different slots")
	}

	r := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "kubectl delete ns prod"})
	if out := env.React(t, bob, r, "✅"); out.Result != bot.Counted || out.Decided {
		t.Fatalf("bob: %+v", out)
	}
	if out := env.React(t, carol, r, "✅"); !out.Decided {
		t.Fatalf("carol: %+v, want the quorum to decide", out)
	}
	got := env.Await(t, r.ID)
	if got.Status != bot.Approved || strings.Join(got.DecidedBy, ",") != "bob,carol" {
		t.Fatalf("got %s by %v, want approved by bob,carol", got.Status, got.DecidedBy)
	}
	expiring := env.Submit(t, bot.NewRequest{Persona: "demo", Action: "deploy", Timeout: bot.Duration(100 * time.Millisecond)})
	if got := env.Await(t, expiring.ID); got.Status != bot.Expired {
		t.Fatalf("expiry on cluster: %s", got.Status)
	}
	if rs, err := env.Gateway.List(context.Background(), bot.Filter{Status: bot.Pending}); err != nil || len(rs) != 0 {
		t.Fatalf("pending after all decided: %d, %v", len(rs), err)
	}
}

// TestClusterDecisionAuditedOnceWhenItsMarkWasLost: on Cluster a
// decision's record is appended in the {audit} slot and the request is
// marked audited in its own, in two steps. A replica that died between
// them (the mark lost) used to have the decision audited again by the
// replica that delivered it next; now the chain's own record of audited
// decisions refuses the second append.
func TestClusterDecisionAuditedOnceWhenItsMarkWasLost(t *testing.T) {
	addr := clusterServer(t)
	rdb, err := qredis.Open("redis://" + addr + "?addr=" + addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	s := qredis.New(rdb, "signofftest:auditonce")
	ctx := context.Background()
	id := bot.NewID()
	rec := func(seq uint64, prev string) bot.AuditRef {
		return bot.AuditRef{Shared: true, Seq: seq, Prev: prev, Hash: fmt.Sprintf("h%d", seq), Line: []byte(fmt.Sprintf(`{"seq":%d}`, seq))}
	}
	if in, err := s.AppendAuditOnce(ctx, id, rec(1, "")); err != nil || !in {
		t.Fatalf("first append = %v, %v; want appended", in, err)
	}
	// The mark is lost, as when the replica died right after the append.
	if err := rdb.HDel(ctx, "signofftest:auditonce:req:{"+id+"}", "done:audit").Err(); err != nil {
		t.Fatal(err)
	}
	if in, err := s.AppendAuditOnce(ctx, id, rec(2, "h1")); err != nil || in {
		t.Fatalf("second append = %v, %v; want already audited", in, err)
	}
	recs, err := s.AuditRecords(ctx, 0, 10)
	if err != nil || len(recs) != 1 {
		t.Fatalf("the chain holds %d records (%v), want 1", len(recs), err)
	}
}
