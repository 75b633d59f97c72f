package quorum

import (
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/signoff/signoff/bot"
)

// escalateFile is `escalate: {after: 3m, to: [bob, carol]}`.
type escalateFile struct {
	After text   `yaml:"after"`
	To    []text `yaml:"to"`
	At    text   `yaml:"-"`
}

func (e *escalateFile) UnmarshalYAML(n ast.Node) error {
	type plain escalateFile
	var p plain
	if err := yaml.NodeToValue(n, &p, yaml.Strict()); err != nil {
		return err
	}
	*e = escalateFile(p)
	e.At = at(n)
	return nil
}

// parseNudges reads remind and escalate: a reminder re-posts a pending
// request on each channel every `remind`; escalation, once `after` has
// passed, names the members who should now look. Neither changes who may
// decide: escalation names members already in the persona.
func parseNudges(f *personaFile, p *bot.Persona, add func(text, bool, string, ...any)) {
	if f.Remind.V != "" {
		d, err := time.ParseDuration(f.Remind.V)
		switch {
		case err != nil:
			add(f.Remind, false, "remind %q is not a duration such as 2m", f.Remind.V)
		case d < 10*time.Second:
			add(f.Remind, false, "remind must be at least 10s")
		default:
			p.Remind = d
		}
	}
	if e := f.Escalate; e != nil {
		d, err := time.ParseDuration(e.After.V)
		switch {
		case err != nil:
			add(e.At, false, "escalate.after %q is not a duration such as 3m", e.After.V)
			return
		case d <= 0:
			add(e.At, false, "escalate.after must be more than 0")
			return
		}
		members := map[string]bool{}
		for _, m := range p.Members {
			members[m.Name] = true
		}
		esc := &bot.Escalation{After: d}
		for _, t := range e.To {
			if !members[t.V] {
				add(t, false, "escalate.to: %q is not a member of this persona (escalation never adds voters)", t.V)
				continue
			}
			esc.To = append(esc.To, t.V)
		}
		if len(e.To) == 0 {
			add(e.At, false, "escalate.to names no one")
		}
		p.Escalate = esc
	}
}

// notifyFile is `notify: {command: [curl, …], timeout: 10s}`.
type notifyFile struct {
	Command []text `yaml:"command"`
	Timeout text   `yaml:"timeout"`
	At      text   `yaml:"-"`
}

func (f *notifyFile) UnmarshalYAML(n ast.Node) error {
	type plain notifyFile
	var p plain
	if err := yaml.NodeToValue(n, &p, yaml.Strict()); err != nil {
		return err
	}
	*f = notifyFile(p)
	f.At = at(n)
	return nil
}

// maxNotifyTimeout caps a notify command's time limit: it runs for each
// request, and a hung one holds a slot.
const maxNotifyTimeout = time.Minute

// parseNotify reads notify: the command run (argv, no shell) for each new
// request, and its time limit.
func parseNotify(f *personaFile, p *bot.Persona, add func(text, bool, string, ...any)) {
	nf := f.Notify
	if nf == nil {
		return
	}
	if len(nf.Command) == 0 || nf.Command[0].V == "" {
		add(nf.At, false, "notify.command is required: a list such as [curl, -fsS, --data-binary, \"@-\", https://ntfy.example/topic] (the request comes as JSON on stdin)")
		return
	}
	n := &bot.Notify{}
	for _, c := range nf.Command {
		n.Command = append(n.Command, c.V)
	}
	if nf.Timeout.V != "" {
		d, err := time.ParseDuration(nf.Timeout.V)
		switch {
		case err != nil:
			add(nf.Timeout, false, "notify.timeout %q is not a duration such as 10s", nf.Timeout.V)
			return
		case d <= 0 || d > maxNotifyTimeout:
			add(nf.Timeout, false, "notify.timeout must be more than 0 and at most %s", maxNotifyTimeout)
			return
		default:
			n.Timeout = d
		}
	}
	p.Notify = n
}
