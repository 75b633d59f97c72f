package quorum_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/quorum"
)

// Keys used in the files below: one as an npub and as hex.
const (
	npubA     = "npub1dwysdarx23c29z392cyuy9ym97q35wumakmze0uqs5pchsq5kzns2hjj49"
	hexA      = "6b8906f4665470a28a255609c2149b2f811a3b9bedb62cbf8085038bc014b0a7"
	hexB      = "4f355bdcb7cc0af728ef3cceb9615d90684bb5b2ca5f859ab0f0b704075871aa"
	hexBUpper = "4F355BDCB7CC0AF728EF3CCEB9615D90684BB5B2CA5F859AB0F0B704075871AA"
	hexC      = "f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9"
	root      = "f0e1d2c3b4a5968778695a4b3c2d1e0ff0e1d2c3b4a5968778695a4b3c2d1e0f"
)

const fullPersona = `name: demo
agent:
  nostr: ` + hexC + `
  slack: U0AGENT
owner:
  name: alice
  nostr: ` + npubA + `
  slack: U01ALICE
  discord: "111111111111111111"
members:
  - name: bob
    nostr: ` + hexBUpper + `
  - name: carol
    slack: U03CAROL
    discord: 222222222222222222
approvalQuorum: 2
denyQuorum: 2
proof: signed
timeout: 90s
channels:
  - slack: C0123456
  - discord: "998877665544332211"
  - nostr:
      relays: [wss://relay.example.com, "ws://127.0.0.1:7777"]
  - nostr:
      relays: [wss://relay.example.com]
      mode: nip28
      root: ` + root + `
  - nostr:
      relays: [wss://groups.example.com]
      mode: nip29
      group: signoff
  - terminal: {}
`

func TestParsePersonaFull(t *testing.T) {
	p, ps := quorum.ParsePersona("demo.yaml", []byte(fullPersona))
	if len(ps) != 0 {
		t.Fatalf("problems: %v", ps)
	}
	want := bot.Persona{
		Name:  "demo",
		Agent: []bot.Identity{{Platform: bot.Nostr, ID: hexC}, {Platform: bot.Slack, ID: "U0AGENT"}},
		Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{
			{Platform: bot.Nostr, ID: hexA}, {Platform: bot.Slack, ID: "U01ALICE"}, {Platform: bot.Discord, ID: "111111111111111111"},
		}},
		Members: []bot.Person{
			{Name: "bob", Identities: []bot.Identity{{Platform: bot.Nostr, ID: hexB}}},
			{Name: "carol", Identities: []bot.Identity{{Platform: bot.Slack, ID: "U03CAROL"}, {Platform: bot.Discord, ID: "222222222222222222"}}},
		},
		ApprovalQuorum: 2,
		DenyQuorum:     2,
		Proof:          bot.ProofSignedOnly,
		Timeout:        90 * time.Second,
		Channels: []bot.ChannelConfig{
			{Platform: bot.Slack, Target: "C0123456"},
			{Platform: bot.Discord, Target: "998877665544332211"},
			{Platform: bot.Nostr, Mode: "note", Relays: []string{"wss://relay.example.com", "ws://127.0.0.1:7777"}},
			{Platform: bot.Nostr, Mode: "nip28", Root: root, Relays: []string{"wss://relay.example.com"}},
			{Platform: bot.Nostr, Mode: "nip29", Group: "signoff", Relays: []string{"wss://groups.example.com"}},
			{Platform: bot.Terminal},
		},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got  %+v\nwant %+v", p, want)
	}
}

func TestParsePersonaDefaults(t *testing.T) {
	p, ps := quorum.ParsePersona("min.yaml", []byte("name: min\nowner:\n  name: alice\n  slack: U01ALICE\n"))
	if len(ps) != 0 {
		t.Fatalf("problems: %v", ps)
	}
	if p.ApprovalQuorum != 0 || p.DenyQuorum != 1 || p.Proof != bot.ProofAny || p.Timeout != bot.DefaultTimeout || len(p.Channels) != 0 {
		t.Errorf("defaults = aq %d dq %d proof %s timeout %s channels %v; want 0 1 any 5m none",
			p.ApprovalQuorum, p.DenyQuorum, p.Proof, p.Timeout, p.Channels)
	}
}

const owner = "owner:\n  name: alice\n  slack: U01ALICE\n"

func TestParsePersonaProblems(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		at   string // "line:col" of the first problem, "" when no line applies
		msg  string
		warn bool // the only problem is a warning: the persona still loads
	}{
		{"no owner is a warning", "name: demo\nmembers:\n  - name: bob\n    slack: U02BOB\n", "1:7", "no owner", true},
		{"proof signed, owner without nostr", "name: demo\n" + owner + "proof: signed\n", "5:8", "no nostr key", true},

		{"unknown top-level field", "name: demo\n" + owner + "quorum: 2\n", "5:1", `unknown field "quorum"`, false},
		{"unknown field in owner", "name: demo\nowner:\n  name: alice\n  slack: U01ALICE\n  colour: red\n", "5:3", `unknown field "colour"`, false},
		{"unknown field in a member", "name: demo\n" + owner + "members:\n  - name: bob\n    slak: U02BOB\n", "7:5", `unknown field "slak"`, false},
		{"unknown field in a channel", "name: demo\n" + owner + "channels:\n  - slack: C0123\n    thread: yes\n", "7:5", `unknown field "thread"`, false},
		{"repeated key", "name: demo\n" + owner + "name: other\n", "5:1", `"name" already defined`, false},
		{"not YAML", "name: demo\nowner: [\n", "2:8", "", false},
		{"owner as a string", "name: demo\nowner: alice\n", "2:8", "mapping", false},
		{"name as a list", "name: [a, b]\n" + owner, "1:7", "single value", false},
		{"no name", owner, "", "name is required", false},
		{"bad name", "name: my persona\n" + owner, "1:7", `name "my persona"`, false},
		{"bad npub", "name: demo\nowner:\n  name: alice\n  nostr: npub1xyz\n", "4:10", "not a valid npub", false},
		{"nsec where an npub goes", "name: demo\nowner:\n  name: alice\n  nostr: nsec1ts8laewqllh9crl7uhq0lmjupllwts8laewqllh9crl7uhq0lmjs79fpw4\n", "4:10", "npub or 64 hex", false},
		{"short hex key", "name: demo\nowner:\n  name: alice\n  nostr: abcd\n", "4:10", "npub or 64 hex", false},
		{"bad slack user", "name: demo\nowner:\n  name: alice\n  slack: alice\n", "4:10", "not a Slack user id", false},
		{"bad discord user", "name: demo\nowner:\n  name: alice\n  discord: \"12ab\"\n", "4:12", "not a Discord user id", false},
		{"discord id as a float", "name: demo\nowner:\n  name: alice\n  discord: 1.5e17\n", "4:12", "not a Discord user id", false},
		{"owner without a name", "name: demo\nowner:\n  slack: U01ALICE\n", "3:3", "owner needs a name", false},
		{"member without a name", "name: demo\n" + owner + "members:\n  - slack: U02BOB\n", "6:5", "member 1 needs a name", false},
		{"member without an identity", "name: demo\n" + owner + "members:\n  - name: bob\n", "6:11", "bob has no identity", false},
		{"duplicate names", "name: demo\n" + owner + "members:\n  - name: bob\n    slack: U02BOB\n  - name: bob\n    slack: U03BOB\n", "8:11", `"bob" is used twice`, false},
		{"owner's name on a member", "name: demo\n" + owner + "members:\n  - name: alice\n    slack: U02BOB\n", "6:11", `"alice" is used twice`, false},
		{"one identity on two people", "name: demo\n" + owner + "members:\n  - name: bob\n    slack: U01ALICE\n", "7:12", "is also alice's", false},
		{"one key on two people, npub and hex", "name: demo\nowner:\n  name: alice\n  nostr: " + npubA + "\nmembers:\n  - name: bob\n    nostr: " + hexA + "\n", "7:12", "is also alice's", false},
		{"one key on two people, hex case differs", "name: demo\nowner:\n  name: alice\n  nostr: " + strings.ToUpper(hexB) + "\nmembers:\n  - name: bob\n    nostr: " + hexB + "\n", "7:12", "is also alice's", false},
		{"agent identity listed as owner", "name: demo\nagent:\n  slack: U01ALICE\n" + owner, "3:10", "agent's own identity slack:U01ALICE is also listed for alice", false},
		{"agent key listed as a member", "name: demo\nagent:\n  nostr: " + npubA + "\n" + owner + "members:\n  - name: bob\n    nostr: " + hexA + "\n", "3:10", "also listed for bob", false},
		{"bad agent key", "name: demo\nagent:\n  nostr: xyz\n" + owner, "3:10", "agent nostr", false},
		{"approvalQuorum > members", "name: demo\n" + owner + "members:\n  - name: bob\n    slack: U02BOB\napprovalQuorum: 2\n", "8:17", "more than the 1 members", false},
		{"approvalQuorum without members", "name: demo\n" + owner + "approvalQuorum: 1\n", "5:17", "more than the 0 members", false},
		{"approvalQuorum negative", "name: demo\n" + owner + "approvalQuorum: -1\n", "5:17", "whole number", false},
		{"approvalQuorum a word", "name: demo\n" + owner + "approvalQuorum: two\n", "5:17", "whole number", false},
		{"denyQuorum 0", "name: demo\n" + owner + "denyQuorum: 0\n", "5:13", "1 or more", false},
		{"denyQuorum > members", "name: demo\n" + owner + "members:\n  - name: bob\n    slack: U02BOB\ndenyQuorum: 2\n", "8:13", "more than the 1 members", false},
		{"bad proof", "name: demo\n" + owner + "proof: maybe\n", "5:8", `not "maybe"`, false},
		{"bad timeout", "name: demo\n" + owner + "timeout: 5 minutes\n", "5:10", "not a duration", false},
		{"negative timeout", "name: demo\n" + owner + "timeout: -5m\n", "5:10", "more than 0", false},
		{"zero timeout", "name: demo\n" + owner + "timeout: 0s\n", "5:10", "more than 0", false},
		{"timeout over a week", "name: demo\n" + owner + "timeout: 200h\n", "5:10", "at most", false},
		{"timeout without a unit", "name: demo\n" + owner + "timeout: 300\n", "5:10", "not a duration", false},
		{"bad slack channel", "name: demo\n" + owner + "channels:\n  - slack: general\n", "6:12", `slack channel "general"`, false},
		{"bad discord channel", "name: demo\n" + owner + "channels:\n  - discord: general\n", "6:14", "discord channel", false},
		{"channel naming two platforms", "name: demo\n" + owner + "channels:\n  - slack: C0123\n    discord: \"998877665544332211\"\n", "6:5", "exactly one", false},
		{"empty channel", "name: demo\n" + owner + "channels:\n  - {}\n", "6:5", "exactly one", false},
		{"a tag on an empty list (go-yaml panics on it)", "name: demo\n" + owner + "channels:\n  - nostr:\n      relays: !0\n", "", "cannot be read", false},
		{"channels not a list", "name: demo\n" + owner + "channels: slack\n", "5:11", "", false},
		{"nostr channel without relays", "name: demo\n" + owner + "channels:\n  - nostr:\n      mode: note\n", "6:5", "needs relays", false},
		{"bad relay", "name: demo\n" + owner + "channels:\n  - nostr:\n      relays: [https://relay.example.com]\n", "7:16", "not a ws:// or wss:// URL", false},
		{"bad nostr mode", "name: demo\n" + owner + "channels:\n  - nostr:\n      relays: [wss://r.example]\n      mode: dm\n", "8:13", "note, nip28 or nip29", false},
		{"nip28 without root", "name: demo\n" + owner + "channels:\n  - nostr:\n      relays: [wss://r.example]\n      mode: nip28\n", "8:13", "nip28 needs root", false},
		{"nip28 with a short root", "name: demo\n" + owner + "channels:\n  - nostr:\n      relays: [wss://r.example]\n      mode: nip28\n      root: abcd\n", "8:13", "nip28 needs root", false},
		{"nip29 without group", "name: demo\n" + owner + "channels:\n  - nostr:\n      relays: [wss://r.example]\n      mode: nip29\n", "8:13", "nip29 needs group", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ps := quorum.ParsePersona("f.yaml", []byte(tt.yaml))
			if len(ps) == 0 {
				t.Fatalf("no problem found in\n%s", tt.yaml)
			}
			first := ps[0]
			at := ""
			if first.Line > 0 {
				at = fmt.Sprintf("%d:%d", first.Line, first.Column)
			}
			if at != tt.at || !strings.Contains(first.Message, tt.msg) || first.File != "f.yaml" {
				t.Errorf("problem = %s\nwant at %q mentioning %q", first, tt.at, tt.msg)
			}
			if tt.warn {
				if len(ps.Errors()) != 0 || !first.Warning {
					t.Errorf("want only a warning, got %v", ps)
				}
				if p.Name != "demo" {
					t.Errorf("persona not returned with a warning: %+v", p)
				}
				return
			}
			if len(ps.Errors()) == 0 {
				t.Errorf("want an error, got only warnings: %v", ps)
			}
			if !reflect.DeepEqual(p, bot.Persona{}) {
				t.Errorf("persona returned despite errors: %+v", p)
			}
		})
	}
}

func TestParsePersonaReportsEveryProblem(t *testing.T) {
	y := "name: demo\nowner:\n  name: alice\n  slack: nope\nproof: maybe\ntimeout: soon\n"
	_, ps := quorum.ParsePersona("f.yaml", []byte(y))
	var got []string
	for _, p := range ps {
		got = append(got, fmt.Sprintf("%d", p.Line))
	}
	if strings.Join(got, ",") != "4,5,6" {
		t.Errorf("problems at lines %v, want 4,5,6:\n%v", got, ps)
	}
	if want := "f.yaml:4:10: error: alice slack: \"nope\" is not a Slack user id such as U01ALICE"; ps[0].String() != want {
		t.Errorf("String() = %q, want %q", ps[0].String(), want)
	}
}

func TestParsePersonaTooLarge(t *testing.T) {
	big := "name: demo\n" + owner + "# " + strings.Repeat("x", quorum.MaxPersonaFile) + "\n"
	if _, ps := quorum.ParsePersona("f.yaml", []byte(big)); len(ps.Errors()) != 1 || !strings.Contains(ps[0].Message, "larger than") {
		t.Errorf("problems = %v, want one saying the file is too large", ps)
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.yaml":     "name: alpha\n" + owner,
		"b.yml":      "name: beta\n" + owner,
		"c.yaml":     "name: alpha\n" + owner, // the same name again
		"d.yaml":     "name: delta\n" + owner + "timeout: soon\n",
		"e.yaml":     "name: echo\nmembers:\n  - name: bob\n    slack: U02BOB\n", // a warning only
		"notes.txt":  "name: ignored\n",
		"f.yaml.bak": "name: ignored\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
	ps, problems, err := quorum.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "alpha,beta,echo" {
		t.Errorf("loaded %v, want alpha,beta,echo", names)
	}
	var got []string
	for _, p := range problems {
		got = append(got, filepath.Base(p.File)+":"+p.Message)
	}
	want := []string{
		`c.yaml:persona "alpha" is already defined in ` + filepath.Join(dir, "a.yaml"),
		`d.yaml:timeout "soon" is not a duration such as 5m or 1h30m`,
		`e.yaml:no owner: every request of persona "echo" will be denied at once`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, _, err := quorum.LoadDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("LoadDir of a missing folder: no error")
	}
}

func TestExamplePersonasLoad(t *testing.T) {
	ps, problems, err := quorum.LoadDir("../configs/personas")
	if err != nil {
		t.Skip(err)
	}
	if len(problems.Errors()) > 0 {
		t.Errorf("configs/personas: %v", problems)
	}
	if len(ps) == 0 {
		t.Error("configs/personas holds no persona")
	}
}

func FuzzParsePersona(f *testing.F) {
	f.Add([]byte(fullPersona))
	f.Add([]byte("name: demo\n" + owner))
	f.Add([]byte("name: demo\nagent:\n  slack: U01ALICE\n" + owner + "channels:\n  - terminal:\n  - {}\n"))
	f.Add([]byte("name: demo\nowner: {name: a, slack: U01ALICE}\nmembers: [{name: b, nostr: " + hexB + "}]\napprovalQuorum: 1\n"))
	f.Add([]byte("name: &a demo\nowner:\n  name: *a\n  slack: U01ALICE\n"))
	f.Add([]byte("---\nname: demo\n---\nname: other\n"))
	f.Add([]byte("name: !!binary aGVsbG8=\n"))
	if b, err := os.ReadFile("../configs/personas/demo.yaml"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, ps := quorum.ParsePersona("f.yaml", data)
		if len(ps.Errors()) > 0 {
			if !reflect.DeepEqual(p, bot.Persona{}) {
				t.Fatalf("persona returned with errors %v", ps)
			}
			return
		}
		// A persona that loads is one the gateway can rely on.
		if p.Name == "" || p.DenyQuorum < 1 || p.ApprovalQuorum < 0 || p.ApprovalQuorum > len(p.Members) || p.Timeout <= 0 {
			t.Fatalf("loaded an unusable persona %+v from %q", p, data)
		}
		seen := map[bot.Identity]bool{}
		for _, person := range p.People() {
			if person.Name == "" || len(person.Identities) == 0 {
				t.Fatalf("person without a name or identity: %+v", person)
			}
			for _, id := range person.Identities {
				if seen[id] {
					t.Fatalf("identity %s on two people", id)
				}
				seen[id] = true
			}
		}
		for _, a := range p.Agent {
			if seen[a] {
				t.Fatalf("agent identity %s also votes", a)
			}
		}
	})
}
