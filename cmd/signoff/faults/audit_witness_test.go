package faults

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/adapters/nostr/relaytest"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/signing"
)

// restart runs r's serve again on its address and data dir.
func (f *fleet) restart(r *replica) {
	f.t.Helper()
	env := append(f.replicaEnv(r.data), "SIGNOFF_LISTEN="+r.addr, "SIGNOFF_DATA_DIR="+r.data, "SIGNOFF_AUDIT_PATH="+r.audit)
	r.p = startProc(f.t, r.name+" (again)", env, signoffBin, "serve")
	r.api = httpapi.NewClient("http://" + r.addr)
	deadline := time.Now().Add(15 * time.Second)
	for !r.healthy() {
		if r.p.exited() || time.Now().After(deadline) {
			f.t.Fatalf("%s did not come up again on %s:\n%s", r.name, r.addr, r.p.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// witnessedSeq is the highest checkpoint seq the relay holds for key.
func witnessedSeq(t *testing.T, relay *relaytest.Relay, key *signing.Key) uint64 {
	var best uint64
	for _, ev := range relay.Events(gonostr.Filter{Kinds: []int{signing.WitnessKind}, Authors: []string{key.PublicKey()}}) {
		raw, _ := json.Marshal(ev)
		if w, err := signing.ParseWitnessEvent(raw, key.PublicKey()); err == nil && w.Seq > best {
			best = w.Seq
		}
	}
	return best
}

// TestAgentCannotCutTheAuditUnseen is the attack on a gateway
// whose persona posts to a Nostr relay: the agent cuts audit.jsonl back
// to an older checkpoint, copies that checkpoint into
// audit.jsonl.checkpoint (and removes the data dir's witness), and
// restarts serve, which goes on writing. The relay holds the newest
// checkpoint the gateway signed: serve says AUDIT TRUNCATED at start and
// fails /readyz, and `audit verify --witness RELAY` reports the records
// missing, then the fork (two records at one height, both signed).
func TestAgentCannotCutTheAuditUnseen(t *testing.T) {
	relay := relaytest.Start(t)
	f := newFleet(t, "") // the embedded store: the file is the chain
	persona := f.people.persona() + "channels:\n  - nostr:\n      relays: [" + relay.URL() + "]\n"
	if err := os.WriteFile(filepath.Join(f.personas, "demo.yaml"), []byte(persona), 0o600); err != nil {
		t.Fatal(err)
	}
	r := f.start()
	f.submit(t, r, "echo one")
	eventually(t, 10*time.Second, "a checkpoint by interval", func() bool {
		b, _ := os.ReadFile(r.audit)
		return bytes.Contains(b, []byte(`"type":"checkpoint"`))
	})
	for _, a := range []string{"echo two", "echo three", "echo four"} {
		f.submit(t, r, a)
	}
	r.p.stop(t) // signs the closing checkpoint and publishes it
	recs := readRecords(t, r.audit)
	last := recs[len(recs)-1]
	if last.Type != signing.TypeCheckpoint || witnessedSeq(t, relay, f.key) != last.Seq {
		t.Fatalf("the relay holds seq %d, the log ends with %s at seq %d", witnessedSeq(t, relay, f.key), last.Type, last.Seq)
	}

	// The attack: cut back to the first checkpoint, hide the cut.
	raw, _ := os.ReadFile(r.audit)
	lines := bytes.SplitAfter(raw, []byte("\n"))
	cut := -1
	for i, rec := range recs[:len(recs)-1] {
		if rec.Type == signing.TypeCheckpoint {
			cut = i
			break
		}
	}
	if cut < 0 {
		t.Fatal("no checkpoint before the last one")
	}
	os.WriteFile(r.audit, bytes.Join(lines[:cut+1], nil), 0o600)
	os.WriteFile(r.audit+".checkpoint", lines[cut], 0o600)
	os.Remove(filepath.Join(r.data, "audit.witness"))
	missing := last.Seq - recs[cut].Seq

	code, out := f.cli(t, "audit", "verify", "--witness", relay.URL(), r.audit)
	if code != 1 || !strings.Contains(out, "TRUNCATED") || !strings.Contains(out, strconv.FormatUint(missing, 10)+" record(s) missing") {
		t.Errorf("verify of the cut log = %d\n%s\nwant TRUNCATED, %d record(s) missing", code, out, missing)
	}
	if code, out := f.cli(t, "audit", "verify", r.audit); code != 0 {
		t.Logf("without the witness the cut is not seen (as before): %d %s", code, out)
	}

	f.restart(r)
	eventually(t, 5*time.Second, "serve says AUDIT TRUNCATED at start", func() bool {
		return strings.Contains(r.p.logs.String(), "AUDIT TRUNCATED")
	})
	if code, body := r.ready(); code != http.StatusServiceUnavailable || !strings.Contains(body, "AUDIT TRUNCATED") {
		t.Errorf("/readyz on the cut log = %d %s", code, body)
	}
	// The gateway goes on (approvals are not held hostage), past the
	// witnessed height: a fork.
	for _, a := range []string{"echo five", "echo six", "echo seven", "echo eight", "echo nine"} {
		f.submit(t, r, a)
	}
	r.p.stop(t)
	if w := witnessedSeq(t, relay, f.key); w != last.Seq {
		t.Errorf("the relay's witness moved to seq %d: the cut chain's checkpoints were published over the evidence", w)
	}
	if n := readRecords(t, r.audit); n[len(n)-1].Seq < last.Seq {
		t.Fatalf("the new chain ends at seq %d, not past the witness at %d", n[len(n)-1].Seq, last.Seq)
	}
	code, out = f.cli(t, "audit", "verify", "--witness", relay.URL(), r.audit)
	if code != 1 || !strings.Contains(out, "FORK") || !strings.Contains(out, "both under the gateway's signature") || !strings.Contains(out, "TRUNCATED") {
		t.Errorf("verify of the rewritten log = %d\n%s\nwant FORK and TRUNCATED", code, out)
	}
}
