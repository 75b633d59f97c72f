package bot_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
)

// TestSubmitPostedNowhereAnswersWithoutAReadBack: a request posted on no
// platform (the API's list alone) is answered from what was written, with
// no read of it afterwards, and the answer is what a read of it gives.
func TestSubmitPostedNowhereAnswersWithoutAReadBack(t *testing.T) {
	for _, backend := range bottest.Backends() {
		t.Run(backend, func(t *testing.T) {
			alice := bottest.NewPerson("alice")
			bob := bottest.NewPerson("bob")
			p := bot.Persona{
				Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice.Identity()}},
				Members:        []bot.Person{{Name: "bob", Identities: []bot.Identity{bob.Identity()}}},
				ApprovalQuorum: 1, DenyQuorum: 1, Timeout: time.Minute,
			}
			srv := bottest.Start(t, backend)
			_, cmds, rdb := srv.CountedStore(t)
			cmds.Tag = bottest.TagListReads
			a := bottest.NewOn(t, rdb, srv.Prefix, p, nil)
			a.Submit(t, bot.NewRequest{Persona: "demo", Action: "warm up"})
			cmds.Reset()
			r := a.Submit(t, bot.NewRequest{Persona: "demo", Action: "terraform destroy", Reason: "the old stack"})
			ofIt := func(args []string) bool { return len(args) > 0 && strings.Contains(args[0], r.ID) }
			if n := cmds.Sent("HMGET", ofIt) + cmds.Sent("HGETALL", ofIt) + cmds.Sent("LRANGE", ofIt); n != 0 {
				t.Errorf("submit read the request back (%d reads): %s", n, cmds)
			}
			got, err := a.Gateway.Get(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			answered, _ := json.Marshal(r)
			read, _ := json.Marshal(got)
			if string(answered) != string(read) {
				t.Errorf("submit answered\n%s\na read gives\n%s", answered, read)
			}
		})
	}
}
