package faults

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/signing"
)

// A replica started on a Redis whose replicas sign with another gateway
// key would read every decision they seal as denied (and they its). It
// refuses to start, naming both keys and what to do. The fleet's key is
// registered again when Redis comes back empty, and a replica under a new
// key starts once the old key is removed on purpose.
func TestReplicaWithAnotherGatewayKeyRefusesToStart(t *testing.T) {
	rd := startRedis(t, false)
	f := newFleet(t, rd.url())
	a := f.start()
	a.waitReady(t, 10*time.Second)
	other := signing.NewKey()
	startOther := func(name string) *proc {
		data := filepath.Join(f.dir, name)
		env := append(f.replicaEnv(data), "SIGNOFF_LISTEN=127.0.0.1:"+strconv.Itoa(freePort(t)),
			"SIGNOFF_DATA_DIR="+data, "SIGNOFF_AUDIT_PATH="+filepath.Join(data, "audit.jsonl"),
			"SIGNOFF_NOSTR_KEY="+other.Nsec())
		return startProc(t, name, env, signoffBin, "serve")
	}
	refused := func(p *proc) {
		t.Helper()
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("a replica under another gateway key is still running:\n%s", tail(p.logs.String(), 20))
		}
		if p.err == nil {
			t.Fatalf("a replica under another gateway key exited 0:\n%s", tail(p.logs.String(), 20))
		}
		logs := p.logs.String()
		for _, want := range []string{f.key.Npub(), other.Npub(), "SIGNOFF_NOSTR_KEY", "must share one gateway key", "redis-cli DEL signoff:fleet:gatewaykey"} {
			if !strings.Contains(logs, want) {
				t.Errorf("the refusal does not say %q:\n%s", want, tail(logs, 10))
			}
		}
		if strings.Contains(logs, "signoff gateway listening") {
			t.Errorf("it listened before refusing:\n%s", tail(logs, 10))
		}
	}
	refused(startOther("other-1"))

	// Redis restarts empty: the fleet's key is registered again by a, and
	// the other key is still refused.
	rd.crash()
	rd.start()
	a.waitReady(t, 15*time.Second)
	c := rd.client(t)
	if got := c.Get(context.Background(), "signoff:fleet:gatewaykey").Val(); got != f.key.Npub() {
		t.Fatalf("after an empty restart the fleet key is %q, want a's %s", got, f.key.Npub())
	}
	refused(startOther("other-2"))

	// Changed on purpose: the old replicas stopped, the old key removed.
	a.p.stop(t)
	if err := c.Del(context.Background(), "signoff:fleet:gatewaykey").Err(); err != nil {
		t.Fatal(err)
	}
	p := startOther("other-3")
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(p.logs.String(), "signoff gateway listening") {
		if p.exited() || time.Now().After(deadline) {
			t.Fatalf("a replica under the new key did not start after the old key was removed:\n%s", tail(p.logs.String(), 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
