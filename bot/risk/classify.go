package risk

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/signoff/signoff/bot"
)

// Classifier gives shell commands and tool calls a risk level and the
// reasons for it. It is safe for concurrent use.
type Classifier struct {
	rules *Rules
	bad   string // why the rules are unusable; everything is dangerous
}

var _ bot.Classifier = (*Classifier)(nil)

// defaultClassifier compiles the embedded packs from their Go form
// (packs_gen.go, held equal to the YAML by a test): a process that
// classifies one command does not parse YAML.
var defaultClassifier = sync.OnceValue(func() *Classifier {
	r := generatedRules()
	if err := r.compile(); err != nil {
		return &Classifier{bad: "embedded risk rules are invalid: " + err.Error()}
	}
	return &Classifier{rules: r}
})

// Default returns a classifier with the embedded packs
// (configs/rules/*.yaml).
func Default() *Classifier { return defaultClassifier() }

// New returns a classifier with rules from ParseRules or LoadRules; nil
// means the embedded rules.
func New(r *Rules) *Classifier {
	if r == nil {
		return Default()
	}
	if r.names == nil {
		if err := r.compile(); err != nil {
			return &Classifier{bad: "risk rules are invalid: " + err.Error()}
		}
	}
	return &Classifier{rules: r}
}

// Classify implements bot.Classifier. A command is classified with
// Command. A tool action is written "Name {json input}" (e.g.
// `Read {"file_path":"/etc/shadow"}`), or is a Claude Code hook payload
// {"tool_name":…,"tool_input":…,"cwd":…}; it is classified with ToolCall.
// Network destinations and free text are not commands the classifier can
// read: they are dangerous, and people decide.
func (c *Classifier) Classify(kind bot.Kind, action string) bot.Assessment {
	switch kind {
	case bot.KindCommand, "":
		return c.Command(action)
	case bot.KindTool:
		name, input, cwd, reason := splitToolAction(action)
		if reason != "" {
			return dangerous(reason)
		}
		return c.ToolCall(name, input, cwd)
	case bot.KindNetwork:
		return dangerous("a network destination is not a shell command; a person decides")
	case bot.KindText:
		return dangerous("free text is not a shell command; a person decides")
	}
	return dangerous("unknown kind of action " + quote(string(kind)))
}

// splitToolAction reads a tool action: "Name {json}" or a hook payload.
func splitToolAction(action string) (name string, input json.RawMessage, cwd, reason string) {
	s := strings.TrimSpace(action)
	if strings.HasPrefix(s, "{") {
		var hook struct {
			ToolName  string          `json:"tool_name"`
			ToolInput json.RawMessage `json:"tool_input"`
			Cwd       string          `json:"cwd"`
		}
		if err := json.Unmarshal([]byte(s), &hook); err != nil {
			return "", nil, "", "tool action is not valid JSON: " + shortErr(err)
		}
		if hook.ToolName == "" {
			return "", nil, "", "tool action names no tool (tool_name)"
		}
		if len(hook.ToolInput) == 0 {
			hook.ToolInput = json.RawMessage("{}")
		}
		return hook.ToolName, hook.ToolInput, hook.Cwd, ""
	}
	i := strings.IndexAny(s, " \t\r\n{")
	if i < 0 {
		return s, json.RawMessage("{}"), "", ""
	}
	name, rest := s[:i], strings.TrimSpace(s[i:])
	if name == "" {
		return "", nil, "", "tool action names no tool"
	}
	if rest == "" {
		rest = "{}"
	}
	return name, json.RawMessage(rest), "", ""
}

// Command classifies a shell command (bash syntax). Every command that
// would run is seen: lists, pipelines, subshells, substitutions, bash -c
// strings, wrappers such as sudo, env, xargs and find -exec. What cannot be
// seen through is dangerous.
func (c *Classifier) Command(cmd string) bot.Assessment {
	if c.bad != "" {
		return dangerous(c.bad)
	}
	if len(cmd) > c.rules.MaxCommandBytes {
		return dangerous("command is longer than the classifier reads; a person decides")
	}
	w := walkers.Get().(*walker)
	w.reset(c.rules)
	defer walkers.Put(w)
	if args, ok := plainWords(cmd, w.argBuf[:0]); ok {
		// the keyword gate: plain words need no parser
		w.command(args, in{}, ctx{})
		return w.result()
	}
	w.shell(cmd, ctx{})
	return w.result()
}

// walkers are reused: a command's walk allocates little beyond its result.
var walkers = sync.Pool{New: func() any { return new(walker) }}

// reset makes a pooled walker new, keeping its buffers.
// (Field by field: copying the buffers back into a new walker would cost
// more than the walk of a plain command.) Every field is named here.
func (w *walker) reset(r *Rules) {
	w.r = r
	w.verdict = verdict{reasons: w.reasons[:0]}
	w.funcs, w.cwd, w.dirs, w.funcCwd, w.vars = nil, "", nil, nil, nil
	w.explain, w.span, w.hits, w.parserOnly, w.visit = false, "", nil, false, nil
	w.wordStack = w.wordStack[:0]
	w.nodes.reset()
	// argBuf and rd are overwritten before they are read
}

func dangerous(reason string) bot.Assessment {
	return bot.Assessment{Level: bot.Dangerous, Reasons: []string{reason}}
}

func rank(l bot.Level) int {
	switch l {
	case bot.Safe:
		return 0
	case bot.Caution:
		return 1
	}
	return 2 // dangerous, and anything unknown
}

// verdict gathers levels and reasons; only the reasons at the final
// level are reported, each once.
type verdict struct {
	level   bot.Level
	reasons []leveled
}

type leveled struct {
	level      bot.Level
	reason, id string
}

func (v *verdict) add(l bot.Level, reason string) { v.addID(l, reason, "") }

// addID records a reason and its rule's id apart, so the two are joined
// only for the reasons reported.
func (v *verdict) addID(l bot.Level, reason, id string) {
	if v.level == "" || rank(l) > rank(v.level) {
		v.level = l
	}
	if reason == "" || l == bot.Safe {
		return
	}
	for _, r := range v.reasons {
		if r.reason == reason && r.id == id && r.level == l {
			return
		}
	}
	v.reasons = append(v.reasons, leveled{l, reason, id})
}

func (v *verdict) result() bot.Assessment {
	a := bot.Assessment{Level: v.level}
	if a.Level == "" {
		a.Level = bot.Safe
	}
	n := 0
	for _, r := range v.reasons {
		if r.level == a.Level {
			n++
		}
	}
	a.Reasons = make([]string, 0, n)
	for _, r := range v.reasons {
		if r.level == a.Level {
			a.Reasons = append(a.Reasons, withID(r.reason, r.id))
		}
	}
	return a
}

// withID writes a rule's id after its reason, as people see it:
// "discards uncommitted work (git reset --hard) [core.git:git-reset-hard]".
func withID(reason, id string) string {
	if id == "" || reason == "" {
		return reason
	}
	return reason + " [" + id + "]"
}

// splitID undoes withID.
func splitID(reason string) (string, string) {
	if strings.HasSuffix(reason, "]") {
		if i := strings.LastIndex(reason, " ["); i >= 0 {
			return reason[:i], reason[i+2 : len(reason)-1]
		}
	}
	return reason, ""
}

func quote(s string) string {
	return "\"" + shorten(s) + "\""
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// Hit is one rule that matched, for Explain: its level, its id (e.g.
// core.git:git-reset-hard; empty for the parser's own judgements), its
// reason, and the command text it matched in.
type Hit struct {
	Level  bot.Level `json:"level"`
	Rule   string    `json:"rule,omitempty"`
	Reason string    `json:"reason"`
	Span   string    `json:"span"`
}

// Explanation is an assessment with every rule that matched on the way.
type Explanation struct {
	bot.Assessment
	Hits []Hit `json:"hits"`
}

// Explain classifies a command like Command and also returns every rule
// that matched, with the span of the command it matched in.
func (c *Classifier) Explain(cmd string) Explanation {
	if c.bad != "" {
		a := dangerous(c.bad)
		return Explanation{a, []Hit{{Level: bot.Dangerous, Reason: c.bad, Span: cmd}}}
	}
	if len(cmd) > c.rules.MaxCommandBytes {
		a := c.Command(cmd)
		return Explanation{a, []Hit{{Level: a.Level, Reason: a.Reasons[0], Span: shorten(cmd)}}}
	}
	w := walker{r: c.rules, explain: true, span: cmd}
	w.shell(cmd, ctx{})
	hits := w.hits
	if hits == nil {
		hits = []Hit{}
	}
	return Explanation{w.result(), hits}
}
