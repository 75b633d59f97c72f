package quorum

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/signoff/signoff/bot"
)

// MaxPersonaFile caps a persona file's size.
const MaxPersonaFile = 1 << 20

// Problem is one thing wrong with a persona file, at a line.
type Problem struct {
	File    string
	Line    int // 0 when no line applies
	Column  int
	Message string
	Warning bool // a warning does not stop the persona loading
}

func (p Problem) String() string {
	loc := p.File
	if p.Line > 0 {
		loc += fmt.Sprintf(":%d:%d", p.Line, p.Column)
	}
	kind := "error"
	if p.Warning {
		kind = "warning"
	}
	return loc + ": " + kind + ": " + p.Message
}

// Problems is the error ParsePersona returns: every problem found.
type Problems []Problem

func (ps Problems) Error() string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Errors returns the problems that are not warnings.
func (ps Problems) Errors() Problems {
	var out Problems
	for _, p := range ps {
		if !p.Warning {
			out = append(out, p)
		}
	}
	return out
}

// text is a scalar with the place it was written.
type text struct {
	V         string
	Line, Col int
}

func (t *text) UnmarshalYAML(n ast.Node) error {
	tk := n.GetToken()
	if tk != nil && tk.Position != nil {
		t.Line, t.Col = tk.Position.Line, tk.Position.Column
	}
	switch v := n.(type) {
	case *ast.NullNode:
		t.V = ""
	case *ast.StringNode:
		t.V = v.Value
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		t.V = tk.Value // keep Discord ids digit for digit
	default:
		return &nodeError{tk: tk, msg: fmt.Sprintf("expected a single value, got %s", n.Type())}
	}
	return nil
}

// nodeError is an error at a node, so the problem names its line.
type nodeError struct {
	tk  *token.Token
	msg string
}

func (e *nodeError) Error() string          { return e.msg }
func (e *nodeError) GetToken() *token.Token { return e.tk }
func (e *nodeError) GetMessage() string     { return e.msg }

// at returns where n was written: for a block mapping, its first key.
func at(n ast.Node) text {
	switch m := n.(type) {
	case *ast.MappingNode:
		if !m.IsFlowStyle && len(m.Values) > 0 && m.Values[0] != nil && m.Values[0].Key != nil {
			n = m.Values[0].Key
		}
	case *ast.MappingValueNode:
		if m.Key != nil {
			n = m.Key
		}
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return text{Line: tk.Position.Line, Col: tk.Position.Column}
	}
	return text{}
}

// mappingKeys returns the keys written in a mapping node, including those
// whose value is empty (and so never reach a field's unmarshaler).
func mappingKeys(n ast.Node) []string {
	var values []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		values = m.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{m}
	}
	var keys []string
	for _, v := range values {
		if v != nil && v.Key != nil {
			keys = append(keys, v.Key.String())
		}
	}
	return keys
}

// present marks a key that was written, whatever its value.
type present struct{}

func (*present) UnmarshalYAML(ast.Node) error { return nil }

type identitiesFile struct {
	Name    text `yaml:"name"`
	Nostr   text `yaml:"nostr"`
	Slack   text `yaml:"slack"`
	Discord text `yaml:"discord"`
	At      text `yaml:"-"` // where the mapping starts
}

func (f *identitiesFile) UnmarshalYAML(n ast.Node) error {
	type plain identitiesFile
	var p plain
	if err := yaml.NodeToValue(n, &p, yaml.Strict()); err != nil {
		return err
	}
	*f = identitiesFile(p)
	f.At = at(n)
	return nil
}

type nostrChannelFile struct {
	Relays []text `yaml:"relays"`
	Mode   text   `yaml:"mode"`
	Root   text   `yaml:"root"`
	Group  text   `yaml:"group"`
}

type channelFile struct {
	Slack    *text             `yaml:"slack"`
	Discord  *text             `yaml:"discord"`
	Nostr    *nostrChannelFile `yaml:"nostr"`
	Terminal *present          `yaml:"terminal"`
	At       text              `yaml:"-"` // where the channel is written
}

func (c *channelFile) UnmarshalYAML(n ast.Node) error {
	type plain channelFile
	var p plain
	if err := yaml.NodeToValue(n, &p, yaml.Strict()); err != nil {
		return err
	}
	*c = channelFile(p)
	c.At = at(n)
	// "- terminal:" has no value, so its field was never set.
	if slices.Contains(mappingKeys(n), "terminal") {
		c.Terminal = &present{}
	}
	return nil
}

type personaFile struct {
	Name           text             `yaml:"name"`
	Agent          identitiesFile   `yaml:"agent"`
	Owner          *identitiesFile  `yaml:"owner"`
	Members        []identitiesFile `yaml:"members"`
	ApprovalQuorum *text            `yaml:"approvalQuorum"`
	DenyQuorum     *text            `yaml:"denyQuorum"`
	Proof          text             `yaml:"proof"`
	Timeout        text             `yaml:"timeout"`
	Channels       []channelFile    `yaml:"channels"`

	// Permission rules and modes: quorum/permissions.go reads them.
	Mode        text          `yaml:"mode"`
	GrantTTL    text          `yaml:"grantTTL"`
	Permissions rawNode       `yaml:"permissions"`
	Workspaces  rawNode       `yaml:"workspaces"`
	Reviewer    *reviewerFile `yaml:"reviewer"`
	Caution     text          `yaml:"caution"`

	// Reminders and escalation: quorum/nudge.go reads them.
	Remind   text          `yaml:"remind"`
	Escalate *escalateFile `yaml:"escalate"`

	// The walls of signoff run: quorum/sandbox.go reads them.
	Sandbox *sandboxFile `yaml:"sandbox"`
	Notify  *notifyFile  `yaml:"notify"`
}

var (
	nameRE       = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	slackUserRE  = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)
	slackChanRE  = regexp.MustCompile(`^[CGD][A-Z0-9]{2,20}$`)
	discordIDRE  = regexp.MustCompile(`^[0-9]{15,21}$`)
	maxTimeout   = 7 * 24 * time.Hour
	personaModes = map[string]bool{"note": true, "nip28": true, "nip29": true}
)

// ParsePersona reads one persona file. file names it in problems. On any
// error-level problem the persona is not returned; warnings come back with
// it as Problems.
func ParsePersona(file string, data []byte) (bot.Persona, Problems) {
	var ps Problems
	add := func(t text, warn bool, format string, args ...any) {
		ps = append(ps, Problem{File: file, Line: t.Line, Column: t.Col, Message: fmt.Sprintf(format, args...), Warning: warn})
	}
	if len(data) > MaxPersonaFile {
		add(text{}, false, "file is larger than %d bytes", MaxPersonaFile)
		return bot.Persona{}, ps
	}
	var f personaFile
	if err := decodeYAML(data, &f); err != nil {
		add(yamlErrorPos(err), false, "%s", yamlErrorMessage(err))
		return bot.Persona{}, ps
	}

	p := bot.Persona{Name: f.Name.V, Proof: bot.ProofAny, Timeout: bot.DefaultTimeout, DenyQuorum: 1}
	switch {
	case f.Name.V == "":
		add(f.Name, false, "name is required")
	case !nameRE.MatchString(f.Name.V):
		add(f.Name, false, "name %q: use letters, digits, '.', '_' or '-' (at most 64)", f.Name.V)
	}

	// Where each identity was first seen, to refuse one identity on two people.
	owners := map[bot.Identity]string{}
	written := map[bot.Identity]text{} // where each agent identity is
	identities := func(who string, in identitiesFile, needName bool) []bot.Identity {
		var out []bot.Identity
		one := func(pl bot.Platform, t text) {
			if t.V == "" {
				return
			}
			id, err := parseIdentity(pl, t.V)
			if err != nil {
				add(t, false, "%s %s: %v", who, pl, err)
				return
			}
			if prev, ok := owners[id]; ok && needName {
				add(t, false, "%s %s %s is also %s's: one identity belongs to one person", who, pl, t.V, prev)
				return
			}
			if needName {
				owners[id] = who
			} else {
				written[id] = t
			}
			out = append(out, id)
		}
		one(bot.Nostr, in.Nostr)
		one(bot.Slack, in.Slack)
		one(bot.Discord, in.Discord)
		return out
	}
	person := func(role string, in identitiesFile, where text) *bot.Person {
		if in.Name.V == "" {
			add(where, false, "%s needs a name", role)
			return nil
		}
		ids := identities(in.Name.V, in, true)
		if len(ids) == 0 && in.Nostr.V == "" && in.Slack.V == "" && in.Discord.V == "" {
			add(in.Name, false, "%s %s has no identity (nostr, slack or discord)", role, in.Name.V)
			return nil
		}
		return &bot.Person{Name: in.Name.V, Identities: ids}
	}

	p.Agent = identities("agent", f.Agent, false)
	names := map[string]bool{}
	if f.Owner != nil {
		where := f.Owner.At
		if where.Line == 0 {
			where = f.Name
		}
		p.Owner = person("owner", *f.Owner, where)
		if p.Owner != nil {
			names[p.Owner.Name] = true
		}
	} else {
		add(f.Name, true, "no owner: every request of persona %q will be denied at once", f.Name.V)
	}
	for i, m := range f.Members {
		where := m.At
		if where.Line == 0 {
			where = f.Name
		}
		got := person(fmt.Sprintf("member %d", i+1), m, where)
		if got == nil {
			continue
		}
		if names[got.Name] {
			add(m.Name, false, "the name %q is used twice: names say who voted, so they must be unique", got.Name)
			continue
		}
		names[got.Name] = true
		p.Members = append(p.Members, *got)
	}
	for _, a := range p.Agent {
		if who, ok := owners[a]; ok {
			add(written[a], false, "the agent's own identity %s is also listed for %s; the agent never votes on its own requests", a, who)
		}
	}

	if t := f.ApprovalQuorum; t != nil {
		n, ok := atoi(t.V)
		switch {
		case !ok || n < 0:
			add(*t, false, "approvalQuorum must be a whole number, 0 or more")
		case n > len(f.Members):
			add(*t, false, "approvalQuorum %d is more than the %d members: no quorum of members could approve", n, len(f.Members))
		default:
			p.ApprovalQuorum = n
		}
	}
	if t := f.DenyQuorum; t != nil {
		n, ok := atoi(t.V)
		switch {
		case !ok || n < 1:
			add(*t, false, "denyQuorum must be a whole number, 1 or more")
		case len(f.Members) > 0 && n > len(f.Members):
			add(*t, false, "denyQuorum %d is more than the %d members", n, len(f.Members))
		default:
			p.DenyQuorum = n
		}
	}
	switch f.Proof.V {
	case "", "any":
	case "signed":
		p.Proof = bot.ProofSignedOnly
		if p.Owner != nil && !hasPlatform(p.Owner.Identities, bot.Nostr) {
			add(f.Proof, true, "proof: signed counts only Nostr votes, and the owner has no nostr key")
		}
	default:
		add(f.Proof, false, "proof must be any or signed, not %q", f.Proof.V)
	}
	if f.Timeout.V != "" {
		d, err := time.ParseDuration(f.Timeout.V)
		switch {
		case err != nil:
			add(f.Timeout, false, "timeout %q is not a duration such as 5m or 1h30m", f.Timeout.V)
		case d <= 0 || d > maxTimeout:
			add(f.Timeout, false, "timeout must be more than 0 and at most %s", maxTimeout)
		default:
			p.Timeout = d
		}
	}
	for i, c := range f.Channels {
		where := c.At
		if where.Line == 0 {
			where = f.Name
		}
		ch, ok := parseChannel(c, func(t text, format string, args ...any) {
			add(t, false, "channel %d: "+format, append([]any{i + 1}, args...)...)
		}, where)
		if ok {
			p.Channels = append(p.Channels, ch)
		}
	}
	parsePermissions(file, &f, &p, add)
	parseNudges(&f, &p, add)
	parseSandbox(&f, &p, add)
	parseNotify(&f, &p, add)
	if len(ps.Errors()) > 0 {
		return bot.Persona{}, ps
	}
	return p, ps
}

func parseChannel(c channelFile, bad func(text, string, ...any), at text) (bot.ChannelConfig, bool) {
	kinds := 0
	for _, set := range []bool{c.Slack != nil, c.Discord != nil, c.Nostr != nil, c.Terminal != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		bad(at, "name exactly one of slack, discord, nostr or terminal")
		return bot.ChannelConfig{}, false
	}
	switch {
	case c.Slack != nil:
		if !slackChanRE.MatchString(c.Slack.V) {
			bad(*c.Slack, "slack channel %q is not a channel id such as C0123456", c.Slack.V)
			return bot.ChannelConfig{}, false
		}
		return bot.ChannelConfig{Platform: bot.Slack, Target: c.Slack.V}, true
	case c.Discord != nil:
		if !discordIDRE.MatchString(c.Discord.V) {
			bad(*c.Discord, "discord channel %q is not a channel id (digits; quote it)", c.Discord.V)
			return bot.ChannelConfig{}, false
		}
		return bot.ChannelConfig{Platform: bot.Discord, Target: c.Discord.V}, true
	case c.Terminal != nil:
		return bot.ChannelConfig{Platform: bot.Terminal}, true
	}
	n := c.Nostr
	ch := bot.ChannelConfig{Platform: bot.Nostr, Mode: n.Mode.V, Root: n.Root.V, Group: n.Group.V}
	if ch.Mode == "" {
		ch.Mode = "note"
	}
	ok := true
	if !personaModes[ch.Mode] {
		bad(n.Mode, "nostr mode must be note, nip28 or nip29, not %q", ch.Mode)
		ok = false
	}
	if ch.Mode == "nip28" && (len(ch.Root) != 64 || !isHex(ch.Root)) {
		bad(n.Mode, "nostr mode nip28 needs root: the channel's kind-40 event id (64 hex)")
		ok = false
	}
	if ch.Mode == "nip29" && ch.Group == "" {
		bad(n.Mode, "nostr mode nip29 needs group: the group id")
		ok = false
	}
	if len(n.Relays) == 0 {
		bad(at, "a nostr channel needs relays")
		ok = false
	}
	for _, r := range n.Relays {
		u, err := url.Parse(r.V)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			bad(r, "relay %q is not a ws:// or wss:// URL", r.V)
			ok = false
			continue
		}
		ch.Relays = append(ch.Relays, r.V)
	}
	return ch, ok
}

func parseIdentity(pl bot.Platform, v string) (bot.Identity, error) {
	switch pl {
	case bot.Nostr:
		if strings.HasPrefix(v, "npub1") {
			prefix, val, err := nip19.Decode(v)
			if err != nil || prefix != "npub" {
				return bot.Identity{}, errors.New("not a valid npub")
			}
			return bot.Identity{Platform: pl, ID: val.(string)}, nil
		}
		if len(v) != 64 || !isHex(v) {
			return bot.Identity{}, errors.New("a nostr key is an npub or 64 hex characters")
		}
		return bot.Identity{Platform: pl, ID: strings.ToLower(v)}, nil
	case bot.Slack:
		if !slackUserRE.MatchString(v) {
			return bot.Identity{}, fmt.Errorf("%q is not a Slack user id such as U01ALICE", v)
		}
	case bot.Discord:
		if !discordIDRE.MatchString(v) {
			return bot.Identity{}, fmt.Errorf("%q is not a Discord user id (digits; quote it)", v)
		}
	}
	return bot.Identity{Platform: pl, ID: v}, nil
}

// LoadDir parses every *.yaml and *.yml file in dir. It returns the good
// personas and every problem found; two files naming the same persona is
// an error.
func LoadDir(dir string) ([]bot.Persona, Problems, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read persona folder: %w", err)
	}
	var (
		out   []bot.Persona
		ps    Problems
		where = map[string]string{}
	)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			ps = append(ps, Problem{File: path, Message: err.Error()})
			continue
		}
		p, problems := ParsePersona(path, data)
		ps = append(ps, problems...)
		if len(problems.Errors()) > 0 {
			continue
		}
		if prev, ok := where[p.Name]; ok {
			ps = append(ps, Problem{File: path, Message: fmt.Sprintf("persona %q is already defined in %s", p.Name, prev)})
			continue
		}
		where[p.Name] = path
		out = append(out, p)
	}
	return out, ps, nil
}

// decodeYAML decodes strictly. go-yaml panics on some malformed input
// (a tag on an empty sequence: "relays: !0"); that is a bad file, not a
// reason to stop the gateway or `personas check`.
func decodeYAML(data []byte, f *personaFile) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the YAML cannot be read (%v)", r)
		}
	}()
	return yaml.UnmarshalWithOptions(data, f, yaml.Strict())
}

func yamlErrorPos(err error) text {
	var tk interface{ GetToken() *token.Token }
	if errors.As(err, &tk) && tk.GetToken() != nil && tk.GetToken().Position != nil {
		pos := tk.GetToken().Position
		return text{Line: pos.Line, Col: pos.Column}
	}
	return text{}
}

func yamlErrorMessage(err error) string {
	var m interface{ GetMessage() string }
	if errors.As(err, &m) {
		return m.GetMessage()
	}
	return err.Error()
}

func atoi(s string) (int, bool) {
	var n int
	if s == "" || len(s) > 6 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

func hasPlatform(ids []bot.Identity, p bot.Platform) bool {
	for _, id := range ids {
		if id.Platform == p {
			return true
		}
	}
	return false
}
