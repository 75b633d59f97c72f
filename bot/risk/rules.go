package risk

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/signoff/signoff/bot"
)

// Rules are parsed and checked risk rules (configs/rules/core.yaml is
// the default and documents the format). Get one from ParseRules or
// LoadRules; it is read-only afterwards and safe for concurrent use.
type Rules struct {
	Pack            string                  `yaml:"pack"`
	Generic         GenericRules            `yaml:"generic"`
	KV              KVRules                 `yaml:"kv"`
	Unknown         Program                 `yaml:"unknown"`
	UnknownTool     Program                 `yaml:"unknown_tool"`
	MaxDepth        int                     `yaml:"max_depth"`
	MaxCommandBytes int                     `yaml:"max_command_bytes"`
	Safe            []string                `yaml:"safe"`
	Caution         []string                `yaml:"caution"`
	Dangerous       map[string]string       `yaml:"dangerous"`
	Programs        map[string]*Program     `yaml:"programs"`
	Wrappers        map[string]*Wrapper     `yaml:"wrappers"`
	Shells          Shells                  `yaml:"shells"`
	Interpreters    map[string]*Interpreter `yaml:"interpreters"`
	DangerousCode   []string                `yaml:"dangerous_code"`
	SQL             SQLRules                `yaml:"sql"`
	Paths           PathRules               `yaml:"paths"`
	Env             EnvRules                `yaml:"env"`
	Tools           map[string]*Tool        `yaml:"tools"`

	origin    map[string]string // name → the pack that gave it
	names     map[string]entry
	globNames []globEntry
	toolGlobs []string // tool names with wildcards, in sorted order
	shellOpts optSet
	sensPaths []pathPattern
	notSens   []pathPattern
	harmless  []pathPattern
	scratch   []pathPattern
	writeBad  []writeGroup
	bins      map[string]bool
	envBad    map[string]bool
	envGlobs  []string
	sqlDestr  []keyReason
	sqlWhere  []keyReason
	sqlWords  []keyReason
	sensWords []string // literal sensitive names, looked for in inline code
	sensFrags []string // a literal every matching path contains
	fragGate  fragIndex
}

// Program is the rule for one program or subcommand. In YAML a bare level
// ("status: safe") is short for {level: safe}.
type Program struct {
	ID             string              `yaml:"id"`
	Level          bot.Level           `yaml:"level"`
	Reason         string              `yaml:"reason"`
	OptionsWithArg []string            `yaml:"options_with_arg"`
	Subcommands    map[string]*Program `yaml:"subcommands"`
	Flags          []FlagRule          `yaml:"flags"`
	Args           []ArgRule           `yaml:"args"`
	Deletes        *DeleteRule         `yaml:"deletes"`
	Writes         *WriteRule          `yaml:"writes"`
	Verbs          bool                `yaml:"verbs"`
	DashDash       *ArgRule            `yaml:"dashdash"`
	// DashDashCommand: the words after -- are a command the program runs
	// (kubectl run … -- CMD); they are classified as one.
	DashDashCommand bool     `yaml:"dashdash_command"`
	ManyArgs        *ArgRule `yaml:"many_args"` // applies with two or more positional arguments
	DryRun          []string `yaml:"dry_run"`
	Wrapper         *Wrapper `yaml:"wrapper"`

	id       string
	compiled bool // YAML aliases share one rule: it is compiled once, named after its first name
	withArg  optSet
	dry      optSet
}

// UnmarshalYAML accepts a bare level as well as a mapping.
func (p *Program) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err == nil {
		p.Level = bot.Level(s)
		return nil
	}
	type plain Program
	return unmarshal((*plain)(p))
}

// FlagRule raises (or, with a lower level, lowers) a command's level when
// one of Match is given; with Values, only when the flag's value matches
// one of those globs (case-insensitive).
type FlagRule struct {
	ID       string    `yaml:"id"`
	Match    []string  `yaml:"match"`
	Requires []string  `yaml:"requires"`
	Unless   []string  `yaml:"unless"`
	Exact    bool      `yaml:"exact"` // long names only in full, not abbreviated
	Values   []string  `yaml:"values"`
	Level    bot.Level `yaml:"level"`
	Reason   string    `yaml:"reason"`

	set, req, unless optSet
}

// ArgRule sets a level when a non-flag argument matches one of Match (globs).
type ArgRule struct {
	ID     string    `yaml:"id"`
	Min    int       `yaml:"min"`    // many_args: how many positional arguments (default 2)
	Unless []string  `yaml:"unless"` // flags that turn the rule off
	Match  []string  `yaml:"match"`
	Level  bot.Level `yaml:"level"`
	Reason string    `yaml:"reason"`
}

// DeleteRule checks the targets of a deleting command.
type DeleteRule struct {
	ID            string   `yaml:"id"`
	When          []string `yaml:"when"`
	OnlyProtected bool     `yaml:"only_protected"`
	Reason        string   `yaml:"reason"`
	OutsideReason string   `yaml:"outside_reason"`

	set optSet
}

// WriteRule names the files a command writes.
type WriteRule struct {
	When  []string `yaml:"when"`
	Args  bool     `yaml:"args"`
	Last  bool     `yaml:"last"`
	Flags []string `yaml:"flags"`

	set, when optSet
}

// Wrapper is a program that runs another command.
type Wrapper struct {
	Level          bot.Level  `yaml:"level"`
	Reason         string     `yaml:"reason"`
	OptionsWithArg []string   `yaml:"options_with_arg"`
	Skip           int        `yaml:"skip"`
	Assignments    bool       `yaml:"assignments"`
	Joins          bool       `yaml:"joins"`
	CodeFlags      []string   `yaml:"code_flags"`
	QueryFlags     []string   `yaml:"query_flags"`
	InputArgs      bool       `yaml:"input_args"`
	NoCommand      bool       `yaml:"no_command"`
	WritesArgs     bool       `yaml:"writes_args"` // with no_command: the operands are files written (script FILE)
	Default        []string   `yaml:"default"`
	InputCommands  bool       `yaml:"input_commands"`
	Cwd            string     `yaml:"cwd"`               // where the wrapped command runs (ssh: the remote home)
	Placeholders   []string   `yaml:"placeholder_flags"` // options naming the text input replaces (xargs -I X)
	Flags          []FlagRule `yaml:"flags"`

	id      string
	withArg optSet
	code    optSet
	query   optSet
}

// Shells lists the shells whose code is parsed again.
type Shells struct {
	Names          []string `yaml:"names"`
	OptionsWithArg []string `yaml:"options_with_arg"`
}

// Interpreter is a language runtime that may be given inline code.
type Interpreter struct {
	CodeFlags       []string            `yaml:"code_flags"`
	OptionsWithArg  []string            `yaml:"options_with_arg"`
	ModuleFlags     []string            `yaml:"module_flags"`
	InfoFlags       []string            `yaml:"info_flags"`
	FileFlags       []string            `yaml:"file_flags"`
	CodeFirst       bool                `yaml:"code_first"`
	CodeSubcommands []string            `yaml:"code_subcommands"`
	Harmless        bot.Level           `yaml:"harmless"`
	DangerousCode   []string            `yaml:"dangerous_code"`
	DangerousFlags  []string            `yaml:"dangerous_flags"`
	InplaceFlags    []string            `yaml:"inplace_flags"`
	ScriptArgs      []string            `yaml:"script_args"`
	Commands        map[string]*Program `yaml:"commands"`
	ScriptPrograms  map[string]string   `yaml:"script_programs"`

	withArg, code, module, info, file, bad, inplace optSet
}

// SQLRules says which SQL clients are read and which statements are dangerous.
type SQLRules struct {
	Clients        map[string]*SQLClient `yaml:"clients"`
	Destructive    map[string]string     `yaml:"destructive"`
	NeedWhere      map[string]string     `yaml:"need_where"`
	DangerousWords map[string]string     `yaml:"dangerous_words"`
}

// SQLClient is a database shell whose statements are checked.
type SQLClient struct {
	CodeFlags      []string `yaml:"code_flags"`
	FileFlags      []string `yaml:"file_flags"`
	OptionsWithArg []string `yaml:"options_with_arg"`
	CodeArg        int      `yaml:"code_arg"`

	withArg, code, file optSet
}

// PathRules are the paths that matter.
type PathRules struct {
	SystemBins   []string   `yaml:"system_bins"`
	Sensitive    []string   `yaml:"sensitive"`
	NotSensitive []string   `yaml:"not_sensitive"`
	Writes       WriteRules `yaml:"writes"`
}

// WriteRules classify where a write goes.
type WriteRules struct {
	Harmless  []string     `yaml:"harmless"`
	Scratch   []string     `yaml:"scratch"`
	Dangerous []WriteGroup `yaml:"dangerous"`
}

// WriteGroup is a set of paths whose writes are dangerous for one reason.
type WriteGroup struct {
	ID         string   `yaml:"id"`
	IgnoreCase bool     `yaml:"ignore_case"`
	Reason     string   `yaml:"reason"`
	Paths      []string `yaml:"paths"`
}

// EnvRules lists variables whose setting is dangerous.
type EnvRules struct {
	Dangerous []string `yaml:"dangerous"`
	// Secrets are variables (globs) whose value is a credential: printing
	// one puts it in the agent's transcript.
	Secrets []string `yaml:"secrets"`
	// SecretPaths are variables whose value names a secret file
	// (SIGNOFF_KEY): reading through them is reading a secret.
	SecretPaths []string `yaml:"secret_paths"`
}

// GenericRules judge programs no pack names, and the verbs of programs
// whose pack asks for it (verbs: true): a verb among the arguments
// (delete, destroy, terminate …, also as a part: delete-bucket,
// db:drop) or a flag that skips a confirmation (--force, --yes) is
// dangerous; a dry run or a help request makes the command caution at
// most.
type GenericRules struct {
	Verbs        map[string]string `yaml:"verbs"`
	ConfirmFlags []string          `yaml:"confirm_flags"`
	DryRun       []string          `yaml:"dry_run"`
	Help         []string          `yaml:"help"`
	ProdVerbs    []string          `yaml:"prod_verbs"`
	ProdFlags    []string          `yaml:"prod_flags"`

	// Shapes (shapes.go): options that run a program or code, short
	// options that run code when given code, options that load a library,
	// options that name a file written, subcommands that start a shell,
	// names of shells and interpreters no section lists, programs that
	// talk to other hosts, and programs that copy files to them.
	ExecOptions      []string `yaml:"exec_options"`
	CodeOptions      []string `yaml:"code_options"`
	LibraryOptions   []string `yaml:"library_options"`
	OutputOptions    []string `yaml:"output_options"`
	ShellSubcommands []string `yaml:"shell_subcommands"`
	ShellNames       []string `yaml:"shell_names"`
	NetworkPrograms  []string `yaml:"network_programs"`
	CopyPrograms     []string `yaml:"copy_programs"`
	Installers       []string `yaml:"package_installers"`
	LocalPackages    []string `yaml:"local_packages"`

	confirm, dry, help, prod optSet
	exec, code, lib, output  optSet
	shellSub, shells, net    map[string]bool
	copy, installers         map[string]bool
	verbIdx                  map[string][]verbRule // lower-case verb → its rules, in name order
}

// verbRule is a generic verb with its reason and rule id.
type verbRule struct{ reason, id string }

// KVRules are key-value store clients (redis-cli …): the command given
// (argument, stdin) is read; anything but a read-only command writes the
// store and is dangerous.
type KVRules struct {
	Clients  map[string]*KVClient `yaml:"clients"`
	ReadOnly []string             `yaml:"read_only"`

	ro map[string]bool
}

// KVClient is one key-value store client.
type KVClient struct {
	OptionsWithArg []string `yaml:"options_with_arg"`

	withArg optSet
}

// Tool is the rule for an agent tool call.
type Tool struct {
	Command  string    `yaml:"command"`
	Patch    string    `yaml:"patch"`
	Reads    string    `yaml:"reads"`
	Writes   string    `yaml:"writes"`
	Also     []string  `yaml:"also"`
	Optional bool      `yaml:"optional"`
	Level    bot.Level `yaml:"level"`
	Reason   string    `yaml:"reason"`
}

type kind uint8

const (
	kProgram kind = iota + 1
	kWrapper
	kShell
	kInterp
	kSQL
	kDangerous
	kSafe
	kCaution
	kKV
)

type entry struct {
	kind    kind
	prog    *Program
	wrap    *Wrapper
	interp  *Interpreter
	sql     *SQLClient
	kv      *KVClient
	id      string
	reason  string
	section string
}

type globEntry struct {
	pattern string
	prefix  string // the pattern's literal start: a name without it cannot match
	entry
}

// globPrefix is a pattern's text before its first wildcard or escape.
func globPrefix(p string) string {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*', '?', '[', '\\':
			return p[:i]
		}
	}
	return p
}

type writeGroup struct {
	id, reason string
	fold       bool
	paths      []pathPattern
}

type keyReason struct{ key, reason string }

func checkLevel(l bot.Level, where string, allowEmpty bool) error {
	switch l {
	case bot.Safe, bot.Caution, bot.Dangerous:
		return nil
	case "":
		if allowEmpty {
			return nil
		}
	}
	return fmt.Errorf("%s: level %q is not safe, caution or dangerous", where, l)
}

func (r *Rules) compile() error {
	if r.MaxDepth <= 0 {
		r.MaxDepth = 8
	}
	if r.MaxCommandBytes <= 0 {
		r.MaxCommandBytes = 256 << 10
	}
	if r.Unknown.Level == "" {
		r.Unknown.Level = bot.Caution
	}
	if r.origin == nil {
		r.origin = map[string]string{}
	}
	if err := r.Unknown.compile("unknown", "generic:unknown"); err != nil {
		return err
	}
	if r.UnknownTool.Level == "" {
		r.UnknownTool = r.Unknown
	}
	if err := r.UnknownTool.compile("unknown_tool", "tools:unknown"); err != nil {
		return err
	}
	r.names = map[string]entry{}
	add := func(name string, e entry) error {
		if name == "" {
			return fmt.Errorf("%s: empty program name", e.section)
		}
		if prev, ok := r.names[name]; ok {
			return fmt.Errorf("program %q is named in both %s and %s", name, prev.section, e.section)
		}
		for _, g := range r.globNames {
			if g.pattern == name {
				return fmt.Errorf("program %q is named in both %s and %s", name, g.section, e.section)
			}
		}
		if e.id == "" {
			e.id = r.idFor(name)
		}
		if strings.ContainsAny(name, "*?") {
			if _, err := path.Match(name, ""); err != nil {
				return fmt.Errorf("%s: bad pattern %q", e.section, name)
			}
			r.globNames = append(r.globNames, globEntry{name, globPrefix(name), e})
			return nil
		}
		r.names[name] = e
		return nil
	}
	for _, n := range sortedKeys(r.Programs) {
		p := r.Programs[n]
		if p == nil {
			return fmt.Errorf("programs.%s: empty rule", n)
		}
		if err := p.compile("programs."+n, r.idFor(n)); err != nil {
			return err
		}
		if err := add(n, entry{kind: kProgram, prog: p, section: "programs", id: p.id}); err != nil {
			return err
		}
	}
	for _, n := range sortedKeys(r.Wrappers) {
		w := r.Wrappers[n]
		if w == nil {
			w = &Wrapper{}
			r.Wrappers[n] = w
		}
		if err := checkLevel(w.Level, "wrappers."+n, true); err != nil {
			return err
		}
		if err := w.compile("wrappers."+n, r.idFor(n)); err != nil {
			return err
		}
		if err := add(n, entry{kind: kWrapper, wrap: w, section: "wrappers"}); err != nil {
			return err
		}
	}
	for _, n := range r.Shells.Names {
		if err := add(n, entry{kind: kShell, section: "shells"}); err != nil {
			return err
		}
	}
	r.shellOpts = newOptSet(r.Shells.OptionsWithArg)
	for _, n := range sortedKeys(r.Interpreters) {
		ip := r.Interpreters[n]
		if ip == nil {
			ip = &Interpreter{}
			r.Interpreters[n] = ip
		}
		if err := checkLevel(ip.Harmless, "interpreters."+n+".harmless", true); err != nil {
			return err
		}
		ip.withArg = newOptSet(ip.OptionsWithArg)
		ip.code = newOptSet(ip.CodeFlags)
		ip.module = newOptSet(ip.ModuleFlags)
		ip.info = newOptSet(ip.InfoFlags)
		ip.file = newOptSet(ip.FileFlags)
		ip.bad = newOptSet(ip.DangerousFlags)
		ip.inplace = newOptSet(ip.InplaceFlags)
		for j, sp := range ip.ScriptArgs {
			ip.ScriptArgs[j] = strings.ToLower(sp)
		}
		for _, cn := range sortedKeys(ip.Commands) {
			if ip.Commands[cn] == nil {
				return fmt.Errorf("interpreters.%s.commands.%s: empty rule", n, cn)
			}
			if err := ip.Commands[cn].compile("interpreters."+n+".commands."+cn, r.idFor(n)+"-"+cn); err != nil {
				return err
			}
		}
		if err := add(n, entry{kind: kInterp, interp: ip, section: "interpreters"}); err != nil {
			return err
		}
	}
	for _, n := range sortedKeys(r.SQL.Clients) {
		c := r.SQL.Clients[n]
		if c == nil {
			c = &SQLClient{}
			r.SQL.Clients[n] = c
		}
		c.withArg = newOptSet(c.OptionsWithArg)
		c.code = newOptSet(c.CodeFlags)
		c.file = newOptSet(c.FileFlags)
		if err := add(n, entry{kind: kSQL, sql: c, section: "sql.clients"}); err != nil {
			return err
		}
	}
	for _, n := range sortedKeys(r.KV.Clients) {
		c := r.KV.Clients[n]
		if c == nil {
			c = &KVClient{}
			r.KV.Clients[n] = c
		}
		c.withArg = newOptSet(c.OptionsWithArg)
		if err := add(n, entry{kind: kKV, kv: c, section: "kv.clients"}); err != nil {
			return err
		}
	}
	r.KV.ro = map[string]bool{}
	for _, c := range r.KV.ReadOnly {
		r.KV.ro[strings.ToUpper(c)] = true
	}
	g := &r.Generic
	g.confirm = newOptSet(g.ConfirmFlags)
	g.dry = newOptSet(g.DryRun)
	g.help = newOptSet(g.Help)
	g.prod = newOptSet(g.ProdFlags)
	g.exec, g.code = newOptSet(g.ExecOptions), newOptSet(g.CodeOptions)
	g.lib, g.output = newOptSet(g.LibraryOptions), newOptSet(g.OutputOptions)
	g.shellSub, g.shells = stringSet(g.ShellSubcommands), stringSet(g.ShellNames)
	g.net, g.copy = stringSet(g.NetworkPrograms), stringSet(g.CopyPrograms)
	g.installers = stringSet(g.Installers)
	g.verbIdx = map[string][]verbRule{}
	for _, k := range sortedKeys(g.Verbs) {
		key := strings.ToLower(k)
		g.verbIdx[key] = append(g.verbIdx[key], verbRule{reasonOr(g.Verbs[k], "destructive verb"), "generic:verb-" + key})
	}
	for _, n := range sortedKeys(r.Dangerous) {
		if err := add(n, entry{kind: kDangerous, reason: r.Dangerous[n], section: "dangerous"}); err != nil {
			return err
		}
	}
	for _, n := range r.Safe {
		if err := add(n, entry{kind: kSafe, section: "safe"}); err != nil {
			return err
		}
	}
	for _, n := range r.Caution {
		if err := add(n, entry{kind: kCaution, section: "caution"}); err != nil {
			return err
		}
	}

	var err error
	if r.sensPaths, err = compilePaths(r.Paths.Sensitive, "paths.sensitive"); err != nil {
		return err
	}
	if r.notSens, err = compilePaths(r.Paths.NotSensitive, "paths.not_sensitive"); err != nil {
		return err
	}
	if r.harmless, err = compilePaths(r.Paths.Writes.Harmless, "paths.writes.harmless"); err != nil {
		return err
	}
	if r.scratch, err = compilePaths(r.Paths.Writes.Scratch, "paths.writes.scratch"); err != nil {
		return err
	}
	for i, g := range r.Paths.Writes.Dangerous {
		if g.Reason == "" {
			return fmt.Errorf("paths.writes.dangerous[%d]: no reason", i)
		}
		paths := g.Paths
		if g.IgnoreCase {
			paths = make([]string, len(g.Paths))
			for j, p := range g.Paths {
				paths[j] = strings.ToLower(p)
			}
		}
		ps, err := compilePaths(paths, "paths.writes.dangerous")
		if err != nil {
			return err
		}
		id := g.ID
		if id == "" {
			id = fmt.Sprintf("paths:writes-%d", i+1)
		}
		r.writeBad = append(r.writeBad, writeGroup{id: id, reason: g.Reason, fold: g.IgnoreCase, paths: ps})
	}
	r.sensFrags = nil
	for i := range r.sensPaths {
		r.sensFrags = append(r.sensFrags, r.sensPaths[i].fragment())
	}
	r.fragGate = newFragIndex(r.sensFrags)
	for _, p := range r.sensPaths {
		if p.anchor == anchorNone && len(p.comps) == 1 && !hasGlob(p.comps[0]) {
			r.sensWords = append(r.sensWords, p.comps[0])
		}
	}
	r.bins = map[string]bool{}
	for _, b := range r.Paths.SystemBins {
		r.bins[strings.TrimSuffix(b, "/")] = true
	}
	r.envBad = map[string]bool{}
	r.envGlobs = nil
	for _, v := range r.Env.Dangerous {
		if hasGlob(v) {
			r.envGlobs = append(r.envGlobs, v)
			continue
		}
		r.envBad[v] = true
	}
	r.sqlDestr = upperKeys(r.SQL.Destructive)
	r.sqlWhere = upperKeys(r.SQL.NeedWhere)
	r.sqlWords = upperKeys(r.SQL.DangerousWords)
	for _, n := range sortedKeys(r.Tools) {
		t := r.Tools[n]
		if t == nil {
			return fmt.Errorf("tools.%s: empty rule", n)
		}
		if hasGlob(n) {
			if _, err := path.Match(n, ""); err != nil {
				return fmt.Errorf("tools.%s: bad pattern: %v", n, err)
			}
			r.toolGlobs = append(r.toolGlobs, n)
		}
		if err := checkLevel(t.Level, "tools."+n, true); err != nil {
			return err
		}
	}
	return nil
}

// idFor names a program's rule: pack:program.
func (r *Rules) idFor(name string) string {
	pack := r.origin[name]
	if pack == "" {
		pack = "rules"
	}
	return pack + ":" + name
}

// envDangerous reports whether setting the variable changes what runs.
func (r *Rules) envDangerous(name string) bool {
	if r.envBad[name] {
		return true
	}
	for _, g := range r.envGlobs {
		if !strings.HasPrefix(name, globPrefix(g)) {
			continue
		}
		if nameMatch(g, name) {
			return true
		}
	}
	return false
}

func (w *Wrapper) compile(where, id string) error {
	w.id = id
	w.withArg = newOptSet(w.OptionsWithArg)
	w.code = newOptSet(w.CodeFlags)
	w.query = newOptSet(w.QueryFlags)
	for i := range w.Flags {
		if err := w.Flags[i].compile(fmt.Sprintf("%s.flags[%d]", where, i), id, i); err != nil {
			return err
		}
	}
	return nil
}

func (f *FlagRule) compile(where, id string, i int) error {
	if err := checkLevel(f.Level, where, false); err != nil {
		return err
	}
	if len(f.Match) == 0 {
		return fmt.Errorf("%s: no match", where)
	}
	f.set = newOptSet(f.Match)
	f.req = newOptSet(f.Requires)
	f.unless = newOptSet(f.Unless)
	for j, v := range f.Values {
		f.Values[j] = strings.ToLower(v)
	}
	if f.ID == "" {
		f.ID = id + "-" + strings.TrimLeft(f.Match[0], "-+")
	}
	return nil
}

func (p *Program) compile(where, id string) error {
	if p.compiled {
		return nil
	}
	p.compiled = true
	if p.Level == "" {
		p.Level = bot.Caution
	}
	p.id = id
	if p.ID != "" {
		p.id = p.ID
	}
	p.dry = newOptSet(p.DryRun)
	if p.Wrapper != nil {
		if err := p.Wrapper.compile(where+".wrapper", p.id); err != nil {
			return err
		}
	}
	if err := checkLevel(p.Level, where, false); err != nil {
		return err
	}
	p.withArg = newOptSet(p.OptionsWithArg)
	for i := range p.Flags {
		if err := p.Flags[i].compile(fmt.Sprintf("%s.flags[%d]", where, i), p.id, i); err != nil {
			return err
		}
	}
	for i := range p.Args {
		a := &p.Args[i]
		if err := checkLevel(a.Level, fmt.Sprintf("%s.args[%d]", where, i), false); err != nil {
			return err
		}
		if a.ID == "" {
			a.ID = p.id + "-arg"
			if i > 0 {
				a.ID += fmt.Sprint(i + 1)
			}
		}
		for j, m := range a.Match {
			a.Match[j] = strings.ToLower(m)
		}
	}
	if p.ManyArgs != nil {
		if err := checkLevel(p.ManyArgs.Level, where+".many_args", false); err != nil {
			return err
		}
		if p.ManyArgs.ID == "" {
			p.ManyArgs.ID = p.id + "-many"
		}
	}
	if p.DashDash != nil {
		if err := checkLevel(p.DashDash.Level, where+".dashdash", false); err != nil {
			return err
		}
		if p.DashDash.ID == "" {
			p.DashDash.ID = p.id + "-dashdash"
		}
	}
	if p.Deletes != nil {
		if p.Deletes.Reason == "" {
			return fmt.Errorf("%s.deletes: no reason", where)
		}
		p.Deletes.set = newOptSet(p.Deletes.When)
		if p.Deletes.ID == "" {
			p.Deletes.ID = p.id + "-delete"
		}
	}
	if p.Writes != nil {
		p.Writes.set = newOptSet(p.Writes.Flags)
		p.Writes.when = newOptSet(p.Writes.When)
	}
	for _, n := range sortedKeys(p.Subcommands) {
		s := p.Subcommands[n]
		if s == nil {
			return fmt.Errorf("%s.subcommands.%s: empty rule", where, n)
		}
		if err := s.compile(where+"."+n, p.id+"-"+n); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func upperKeys(m map[string]string) []keyReason {
	out := make([]keyReason, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, keyReason{strings.ToUpper(k), m[k]})
	}
	return out
}

// lookup finds the rule for a program name.
func (r *Rules) lookup(name string) (entry, bool) {
	if e, ok := r.names[name]; ok {
		return e, true
	}
	for _, g := range r.globNames {
		if !strings.HasPrefix(name, g.prefix) {
			continue
		}
		if nameMatch(g.pattern, name) {
			return g.entry, true
		}
	}
	return entry{}, false
}

// tool returns the rule for a tool: its own entry, else the most specific
// (longest) wildcard entry that matches it, else nil.
func (r *Rules) tool(name string) *Tool {
	if t := r.Tools[name]; t != nil {
		return t
	}
	best := ""
	for _, g := range r.toolGlobs {
		if ok, _ := path.Match(g, name); ok && len(g) > len(best) {
			best = g
		}
	}
	if best == "" {
		return nil
	}
	return r.Tools[best]
}

func stringSet(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, s := range list {
		m[s] = true
	}
	return m
}
