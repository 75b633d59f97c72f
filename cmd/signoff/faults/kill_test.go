package faults

import (
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
)

// balancer is a loopback TCP load balancer in front of the replicas, as
// a Kubernetes Service or the compose proxy is: each new connection goes
// to the first backend, in order, that accepts it. So every waiter sits
// on the first replica while it lives, and moves on when it dies.
type balancer struct {
	ln       net.Listener
	mu       sync.Mutex
	backends []string
	active   map[string]int // open connections by backend
	wg       sync.WaitGroup
}

func newBalancer(t *testing.T, backends ...string) *balancer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &balancer{ln: ln, backends: backends, active: map[string]int{}}
	b.wg.Add(1)
	go b.serve()
	t.Cleanup(func() { ln.Close(); b.wg.Wait() })
	return b
}

// connections reports how many connections to addr are open.
func (b *balancer) connections(addr string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.active[addr]
}

func (b *balancer) url() string { return "http://" + b.ln.Addr().String() }

func (b *balancer) serve() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer c.Close()
			b.mu.Lock()
			backends := append([]string(nil), b.backends...)
			b.mu.Unlock()
			var (
				up   net.Conn
				to   string
				derr error
			)
			for _, addr := range backends {
				if up, derr = net.DialTimeout("tcp", addr, time.Second); derr == nil {
					to = addr
					break
				}
			}
			if up == nil {
				return
			}
			defer up.Close()
			b.mu.Lock()
			b.active[to]++
			b.mu.Unlock()
			defer func() { b.mu.Lock(); b.active[to]--; b.mu.Unlock() }()
			done := make(chan struct{}, 2)
			go func() { io.Copy(up, c); up.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			go func() { io.Copy(c, up); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}

var requestIDRE = regexp.MustCompile(`request ([a-z2-7]{16})`)

// waiter is one `signoff request` process, the agent's side.
type waiter struct {
	p  *proc
	id string
}

func (f *fleet) request(t *testing.T, url, action string) *waiter {
	t.Helper()
	env := append(f.env(f.dir), "SIGNOFF_URL="+url, "SIGNOFF_DATA_DIR="+f.dir+"/cli")
	w := &waiter{p: startProc(t, "signoff request "+action, env, signoffBin,
		"request", "--persona", "demo", "--reason", "fault test", "--action", action)}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if m := requestIDRE.FindStringSubmatch(w.p.logs.String()); m != nil {
			w.id = m[1]
			return w
		}
		if w.p.exited() || time.Now().After(deadline) {
			t.Fatalf("signoff request printed no request id:\n%s", w.p.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exit waits for the request process and returns its exit code.
func (w *waiter) exit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-w.p.done:
	case <-time.After(within):
		t.Fatalf("signoff request %s still waiting after %s:\n%s", w.id, within, w.p.logs)
	}
	if ee, ok := w.p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if w.p.err != nil {
		t.Fatalf("signoff request %s: %v", w.id, w.p.err)
	}
	return 0
}

// A replica holding every waiter is killed with SIGKILL right after a
// vote through it decides one request. The waiters (real `signoff
// request` processes behind a balancer) reconnect to the replicas left
// and are answered; the decision's side effects (its audit record)
// happen once, from another replica.
func TestReplicaKilledHoldingWaitersRightAfterDeciding(t *testing.T) {
	rd := startRedis(t, true)
	f := newFleet(t, rd.url())
	a, b, c := f.start(), f.start(), f.start()
	lb := newBalancer(t, a.addr, b.addr, c.addr)

	const n = 8
	var ws []*waiter
	for i := range n {
		ws = append(ws, f.request(t, lb.url(), fmt.Sprintf("rm -rf /var/lib/app-%d", i)))
	}
	// Every waiter's connection is held by a (the balancer prefers it).
	if got := lb.connections(a.addr); got < n {
		t.Fatalf("%d connections on %s, want the %d waiters'", got, a.name, n)
	}
	reqs := make([]*bot.Request, n)
	for i, w := range ws {
		r, err := b.api.Get(ctxT(t, 10*time.Second), w.id)
		if err != nil {
			t.Fatal(err)
		}
		reqs[i] = r
	}
	// bob approves all; carol's ✅ on the first, through a, decides it —
	// and a dies at once.
	for _, r := range reqs {
		b.vote(t, reaction(t, f.people.bob, r, bot.Approve))
	}
	if out := a.vote(t, reaction(t, f.people.carol, reqs[0], bot.Approve)); out.Status != bot.Approved {
		t.Fatalf("carol's vote = %+v, want approved", out)
	}
	a.p.kill()

	// The rest are decided through the replicas left: half approved by
	// carol, half denied by alice.
	for i, r := range reqs[1:] {
		k, ch := f.people.carol, bot.Approve
		if i%2 == 1 {
			k, ch = f.people.alice, bot.Deny
		}
		c.vote(t, reaction(t, k, r, ch))
	}
	for i, w := range ws {
		want := 0
		if i > 0 && (i-1)%2 == 1 {
			want = 1
		}
		if got := w.exit(t, 30*time.Second); got != want {
			t.Errorf("signoff request for %s exited %d, want %d:\n%s", w.id, got, want, tail(w.p.logs.String(), 10))
		}
	}
	f.checkAudit(t, reqs)
}
