package quorum

import (
	"strings"
	"testing"
	"time"
)

const notifyOwner = "name: p\nowner: {name: alice, nostr: npub1ga6mzn7ygwuxpytr264uw09huwef9ypzfda767088gv83ypgtjtsxf25vh}\n"

func TestPersonaNotify(t *testing.T) {
	p, problems := ParsePersona("p.yaml", []byte(notifyOwner+"notify:\n  command: [curl, -fsS, --data-binary, \"@-\", http://127.0.0.1:9/t]\n  timeout: 5s\n"))
	if len(problems.Errors()) > 0 {
		t.Fatal(problems)
	}
	if p.Notify == nil || strings.Join(p.Notify.Command, " ") != "curl -fsS --data-binary @- http://127.0.0.1:9/t" || p.Notify.Timeout != 5*time.Second {
		t.Errorf("notify = %+v", p.Notify)
	}
	for name, c := range map[string]struct{ yaml, want string }{
		"no command":   {"notify:\n  timeout: 5s\n", "notify.command is required"},
		"bad timeout":  {"notify:\n  command: [true]\n  timeout: soon\n", "not a duration"},
		"long timeout": {"notify:\n  command: [true]\n  timeout: 2h\n", "at most 1m0s"},
		"unknown key":  {"notify:\n  command: [true]\n  shell: yes\n", "shell"},
	} {
		t.Run(name, func(t *testing.T) {
			_, problems := ParsePersona("p.yaml", []byte(notifyOwner+c.yaml))
			if !strings.Contains(problems.Error(), c.want) {
				t.Errorf("problems = %v, want %q", problems, c.want)
			}
		})
	}
}
