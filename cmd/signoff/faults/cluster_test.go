package faults

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/signoff/signoff/bot"
)

// startCluster runs three redis-server masters on loopback ports, joined
// with `redis-cli --cluster create`, and returns the URL signoff opens a
// Cluster with.
func startCluster(t *testing.T) (string, []*redisProc) {
	t.Helper()
	needProcesses(t)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed: it joins the Cluster's masters (apt-get install redis-tools)")
	}
	var nodes []*redisProc
	for range 3 {
		nodes = append(nodes, startRedis(t, false, "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"))
	}
	args := []string{"--cluster", "create"}
	for _, n := range nodes {
		args = append(args, n.addr())
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range nodes {
		c := n.client(t)
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster not ok on %s: %v %s", n.addr(), err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	url := "redis://" + nodes[0].addr() + "?addr=" + nodes[1].addr() + "&addr=" + nodes[2].addr()
	// Every master holds slots: the test really spreads keys over three.
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{nodes[0].addr(), nodes[1].addr(), nodes[2].addr()}})
	defer cc.Close()
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil || len(slots) != 3 {
		t.Fatalf("cluster slots = %v, %v; want three ranges", slots, err)
	}
	return url, nodes
}

// Two replicas on a Cluster of three masters: requests created on one,
// the same reactions delivered to both at once, decided once; requests'
// keys land on all three masters (their {id} hash tags keep each one's
// keys together), and the trail is clean.
func TestRedisClusterOfThreeMasters(t *testing.T) {
	url, nodes := startCluster(t)
	f := newFleet(t, url)
	a, b := f.start(), f.start()
	a.waitReady(t, 10*time.Second)
	b.waitReady(t, 10*time.Second)
	reqs := sameReactionEverywhere(t, f, 12)

	// A denial and a waiter answered across replicas, on the Cluster too.
	req := f.submit(t, b, "DROP TABLE users")
	done := make(chan *bot.Request, 1)
	go func() {
		r, _ := a.api.Wait(context.Background(), req.ID, 20*time.Second)
		done <- r
	}()
	time.Sleep(100 * time.Millisecond)
	if out := b.vote(t, reaction(t, f.people.carol, req, bot.Deny)); out.Status != bot.Denied {
		t.Fatalf("carol's ❌ = %+v, want denied", out)
	}
	select {
	case r := <-done:
		if r == nil || r.Status != bot.Denied {
			t.Fatalf("the waiter on %s got %+v, want denied", a.name, r)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the waiter was not answered")
	}
	reqs = append(reqs, req)
	holding := 0
	for _, n := range nodes {
		if size, err := n.client(t).DBSize(context.Background()).Result(); err == nil && size > 0 {
			holding++
		}
	}
	if holding < 2 {
		t.Errorf("signoff's keys are on %d of the 3 masters, want them spread over at least 2", holding)
	}
	f.checkAudit(t, reqs)
}

// On a Cluster the deciding script cannot write the outbox (another
// slot): the Go side enqueues after it. A replica killed (SIGKILL, by the
// SIGNOFF_TEST_CRASH_AFTER_DECIDE failpoint) right after its vote script
// decided, before it enqueued or sealed anything, used to lose the
// decision's side effects. Now the other replica's outbox sweeper finds
// the decided request still in the pending index and enqueues it: the
// waiting `signoff request` exits 0 on a receipt from the pinned key, and
// the trail holds exactly one decision record.
func TestClusterReplicaKilledBetweenDecidingAndEnqueueing(t *testing.T) {
	url, nodes := startCluster(t)
	f := newFleet(t, url)
	a := f.startWith("SIGNOFF_TEST_CRASH_AFTER_DECIDE=1")
	b := f.start()
	a.waitReady(t, 10*time.Second)
	b.waitReady(t, 10*time.Second)

	w := f.request(t, "http://"+b.addr, "rm -rf /srv/cluster-data")
	req, err := b.api.Get(ctxT(t, 10*time.Second), w.id)
	if err != nil {
		t.Fatal(err)
	}
	if out := b.vote(t, reaction(t, f.people.bob, req, bot.Approve)); out.Status != bot.Pending {
		t.Fatalf("bob's vote = %+v, want counted, still pending", out)
	}
	// carol's ✅ through a decides it; a dies at once.
	if out, err := a.api.PostEvent(ctxT(t, 10*time.Second), reaction(t, f.people.carol, req, bot.Approve)); err == nil {
		t.Fatalf("%s answered the deciding vote (%+v): the failpoint did not fire", a.name, out)
	}
	select {
	case <-a.p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still running after the deciding vote", a.name)
	}
	if !strings.Contains(a.p.logs.String(), "killed right after deciding") {
		t.Fatalf("%s did not die at the failpoint:\n%s", a.name, tail(a.p.logs.String(), 20))
	}
	// Decided in the store, and not in the outbox.
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{nodes[0].addr(), nodes[1].addr(), nodes[2].addr()}})
	defer cc.Close()
	if st, _ := cc.HGet(ctxT(t, 5*time.Second), "signoff:req:{"+req.ID+"}", "status").Result(); st != string(bot.Approved) {
		t.Fatalf("the store holds %q for the request, want approved", st)
	}

	if code := w.exit(t, 30*time.Second); code != 0 {
		t.Fatalf("signoff request exited %d, want 0 (approved):\n%s", code, tail(w.p.logs.String(), 10))
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(b.p.logs.String(), "never put in the outbox") {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not sweep the decision into the outbox:\n%s", b.name, tail(b.p.logs.String(), 30))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := strings.Count(b.p.logs.String(), "never put in the outbox"); n != 1 {
		t.Errorf("the decision was swept %d times, want once", n)
	}
	for cc.HGet(ctxT(t, 5*time.Second), "signoff:req:{"+req.ID+"}", "done:audit").Val() == "" {
		if time.Now().After(deadline) {
			t.Fatal("the swept decision was not delivered (no done:audit mark)")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n, _ := cc.ZScore(ctxT(t, 5*time.Second), "signoff:pending", req.ID).Result(); n != 0 {
		t.Errorf("the request is still in the pending index")
	}
	f.checkAudit(t, []*bot.Request{req})
}
