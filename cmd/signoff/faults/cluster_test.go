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
