package risk

import (
	"strings"

	"github.com/signoff/signoff/bot"
)

// program applies a program rule (and its subcommand rules) to the
// arguments after the program name.
func (w *walker) program(name string, p *Program, args []word, cx ctx) {
	cx.verbs = cx.verbs || p.Verbs
	if p.Wrapper != nil {
		w.apply(name, p, nil, cx, true)
		w.wrapper(name, p.Wrapper, append([]word{{text: name, static: true}}, args...), in{}, ctx{depth: cx.depth})
		return
	}
	first := -1
	if len(p.Subcommands) > 0 || cx.verbs {
		second := -1
		for i := 0; i < len(args); i++ {
			t := args[i].text
			if t == "--" {
				break
			}
			if isOption(t) && args[i].static {
				if eachOpt(t, p.withArg.takes, p.withArg.hasExact, func(opt) {}) {
					i++
				}
				continue
			}
			if first < 0 {
				first = i
				continue
			}
			second = i
			break
		}
		if first >= 0 && len(p.Subcommands) > 0 {
			if !args[first].static {
				w.add(bot.Dangerous, name+" subcommand comes from a variable or substitution")
				return
			}
			if sub := p.Subcommands[args[first].text]; sub != nil {
				w.setModes(p, args[:first], &cx)
				if args[first].text == "help" {
					cx.help = true // gcloud help compute instances delete
				}
				w.apply(name, p, args[:first], cx, false)
				w.program(name+" "+args[first].text, sub, args[first+1:], cx)
				return
			}
			// An option this file does not know may have taken the word
			// we read as the subcommand; a riskier one just after wins.
			if second >= 0 && args[second].static {
				if sub := p.Subcommands[args[second].text]; sub != nil && rank(sub.Level) > rank(p.Level) {
					w.setModes(p, args[:second], &cx)
					w.apply(name, p, args[:second], cx, false)
					w.program(name+" "+args[second].text, sub, args[second+1:], cx)
					return
				}
			}
		}
	}
	w.setModes(p, args, &cx)
	if cx.verbs {
		w.verbs(name, args, cx, false)
	}
	w.apply(name, p, args, cx, true)
}

// setModes notes a help request or dry run among the words a program
// level reads (before its subcommand, or all of them at the last level).
func (w *walker) setModes(p *Program, args []word, cx *ctx) {
	if h, d := w.modes(p, args); h || d {
		cx.help = cx.help || h
		cx.dry = cx.dry || d
	}
}

// modes finds a help request or a dry run among a command's words: such
// a command changes nothing, so its own rules count as caution at most
// (help: safe).
func (w *walker) modes(p *Program, args []word) (help, dry bool) {
	g := &w.r.Generic
	for i := 0; i < len(args); i++ {
		a := args[i]
		t := a.text
		if !a.static {
			continue
		}
		if t == "--" {
			break // what follows are operands (git restore -- f --help)
		}
		if p != nil && isOption(t) && !strings.Contains(t, "=") && (p.withArg.hasLong(t) || p.withArg.hasExact(t) || len(t) == 2 && t[1] < 128 && p.withArg.short[t[1]]) {
			i++ // its value is not a flag (git restore --source --help)
			continue
		}
		if (i == 0 || i == len(args)-1) && t == "help" {
			help = true
		}
		if !isOption(t) {
			continue
		}
		if g.help.hasLong(t) || g.help.hasExact(t) {
			help = true
		}
		name, value, hasValue := t, "", false
		if j := strings.IndexByte(t, '='); j > 0 {
			name, value, hasValue = t[:j], strings.ToLower(t[j+1:]), true
		}
		if g.dry.hasLong(name) || g.dry.hasExact(name) || (p != nil && (p.dry.hasLong(name) || p.dry.hasExact(name))) ||
			len(name) >= 6 && strings.HasPrefix("--dry-run", name) {
			if !hasValue || (value != "none" && value != "false" && value != "0") {
				dry = true
			}
		}
		if p != nil && len(t) > 1 && t[0] == '-' && t[1] != '-' && isShortCluster(t) {
			for k := 1; k < len(t); k++ {
				if t[k] < 128 && p.dry.short[t[k]] {
					dry = true
				}
			}
		}
	}
	return help, dry
}

// verbs applies the generic rule: a destructive verb among the first
// word-like arguments (also as a part of one: delete-bucket, db:drop,
// deleteSite) is dangerous; a deploying verb is dangerous with a
// production flag. With confirm (unknown programs) a flag that skips a
// confirmation is dangerous too.
func (w *walker) verbs(name string, args []word, cx ctx, confirm bool) {
	g := &w.r.Generic
	if cx.help || cx.dry {
		return
	}
	seen := 0
	prod := false
	var prodVerb string
	for _, a := range args {
		t := a.text
		if !a.static {
			continue
		}
		if isOption(t) {
			n := t
			if j := strings.IndexByte(n, '='); j > 0 {
				n = n[:j]
			}
			if g.prod.hasLong(n) || g.prod.hasExact(t) || g.prod.hasExact(n) {
				prod = true
			}
			if confirm {
				hit := ""
				eachOpt(t, func(opt) bool { return false }, g.confirm.hasExact, func(o opt) {
					// exact names only: --skip is not --skip-final-snapshot
					if hit == "" && (o.short != 0 && g.confirm.has(&o) || o.short == 0 && (g.confirm.hasLong(o.name) || g.confirm.hasExact(o.name))) {
						hit = o.name
					}
				})
				if hit != "" {
					w.addID(bot.Dangerous, "skips a confirmation ("+shorten(name+" "+hit)+")", "generic:confirm-"+strings.TrimLeft(hit, "-"))
				}
			}
			continue
		}
		if seen >= 5 || !verbLike(t) {
			seen++
			continue
		}
		seen++
		var lb [64]byte
		for st := 0; ; {
			part, next := verbPart(t, st)
			if part == "" {
				break
			}
			st = next
			low := lowered(lb[:0], part)
			for _, v := range g.verbHits(part, low) {
				w.addID(bot.Dangerous, v.reason+" ("+shorten(name+" "+t)+")", v.id)
			}
			if prodVerb == "" {
				for _, x := range g.ProdVerbs {
					if low == nil && x == part || low != nil && x == string(low) {
						prodVerb = x
						break
					}
				}
			}
		}
	}
	if prodVerb == "" {
		// the subcommand already read: vercel deploy --prod
		last := name[strings.LastIndexByte(name, ' ')+1:]
		if contains(g.ProdVerbs, last) {
			prodVerb = last
		}
	}
	if prod && prodVerb != "" {
		w.addID(bot.Dangerous, "deploys to production ("+shorten(name+" "+prodVerb)+")", "generic:deploy-prod")
	}
}

// verbLike: a subcommand-like word (letters, digits, - _ :), not a path,
// URL, file name or value.
func verbLike(t string) bool {
	if t == "" || len(t) > 64 || strings.Contains(t, "::") {
		return false // repo::archive names a thing, it is not a verb
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == ':') {
			return false
		}
	}
	return true
}

// lowered is part in lower case, written into buf, or nil when part has
// no upper-case letter (then part itself is its lower case).
func lowered(buf []byte, part string) []byte {
	if !hasUpper(part) {
		return nil
	}
	return appendLower(buf, part)
}

// verbPart splits delete-bucket, db:drop, force_delete and deleteSite
// into words, one at a time: the word starting from start (as written;
// "" when there are no more) and where to look for the next.
func verbPart(t string, start int) (string, int) {
	for i := start; i <= len(t); i++ {
		if i == len(t) {
			if i > start {
				return t[start:i], i + 1
			}
			break
		}
		c := t[i]
		if c == '-' || c == '_' || c == ':' {
			if i > start {
				return t[start:i], i + 1
			}
			start = i + 1
			continue
		}
		if i > start && c >= 'A' && c <= 'Z' && t[i-1] >= 'a' && t[i-1] <= 'z' {
			return t[start:i], i
		}
	}
	return "", len(t) + 1
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// appendLower appends s lower-cased (ASCII; verb-like words are ASCII).
func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}

// verbHits are the generic verb rules for a word's part: part itself, or
// low, its lower-cased form, when it has upper-case letters.
func (g *GenericRules) verbHits(part string, low []byte) []verbRule {
	if low != nil {
		return g.verbIdx[string(low)]
	}
	return g.verbIdx[part]
}

// apply applies p's own level, flag, argument, delete and write rules.
// With full false only the rules that raise the level are applied (the
// program's options before a subcommand).
func (w *walker) apply(name string, p *Program, args []word, cx ctx, full bool) {
	type hit struct {
		level      bot.Level
		reason, id string
	}
	var raises []hit
	base := p.Level
	lower := func(l bot.Level) {
		if rank(l) < rank(base) {
			base = l
		}
	}
	rule := func(l bot.Level, reason, id string) {
		if rank(l) < rank(p.Level) {
			lower(l)
			return
		}
		raises = append(raises, hit{l, reason, id})
	}
	exact := func(t string) bool {
		if p.withArg.hasExact(t) {
			return true
		}
		for i := range p.Flags {
			if p.Flags[i].set.hasExact(t) {
				return true
			}
		}
		return false
	}
	takes := func(o opt) bool {
		return p.withArg.takes(o) || (p.Writes != nil && p.Writes.set.takes(o))
	}
	argRules := func(t string) {
		if len(p.Args) == 0 {
			return
		}
		t = strings.ToLower(t)
		for j := range p.Args {
			if globAny(p.Args[j].Match, t) {
				rule(p.Args[j].Level, p.Args[j].Reason, p.Args[j].ID)
			}
		}
	}
	// Flags that a rule requires alongside (branch -d with --force).
	var presentAny []opt
	needPresent := false
	for j := range p.Flags {
		if p.Flags[j].req.any || p.Flags[j].unless.any {
			needPresent = true
		}
	}
	if needPresent {
		for i := 0; i < len(args); i++ {
			if t := args[i].text; args[i].static && isOption(t) && t[0] == '-' {
				if eachOpt(t, takes, exact, func(o opt) { presentAny = append(presentAny, o) }) {
					i++
				}
			}
		}
	}
	requiresMet := func(f *FlagRule) bool {
		for k := range presentAny {
			if f.unless.any && f.unless.has(&presentAny[k]) {
				return false
			}
		}
		if !f.req.any {
			return true
		}
		for k := range presentAny {
			if f.req.has(&presentAny[k]) {
				return true
			}
		}
		return false
	}
	delWhen := p.Deletes != nil && len(p.Deletes.When) == 0
	writeWhen := p.Writes != nil && !p.Writes.when.any
	var posBuf [8]word // most commands have few positionals: no allocation
	positionals := posBuf[:0]
	endOpts := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		t := a.text
		if !endOpts && t == "--" {
			endOpts = true
			if p.DashDash != nil && i+1 < len(args) {
				rule(p.DashDash.Level, p.DashDash.Reason, p.DashDash.ID)
			}
			if p.DashDashCommand && full && i+1 < len(args) {
				// kubectl run … -- CMD: CMD runs (in a pod), judged as here
				w.command(args[i+1:], in{}, cx.deeper())
			}
			continue
		}
		if isNegNumber(t) {
			argRules(t)
		}
		if !endOpts && a.static && isOption(t) && t[0] == '-' {
			next := eachOpt(t, takes, exact, func(o opt) {
				value, hasValue := o.value, o.has
				if !hasValue && i+1 < len(args) {
					value, hasValue = args[i+1].text, true
				}
				for j := range p.Flags {
					f := &p.Flags[j]
					if !f.set.has(&o) || !requiresMet(f) || (f.Exact && o.short == 0 && !f.set.hasLong(o.name) && !f.set.hasExact(o.name)) {
						continue
					}
					if len(f.Values) > 0 && (!hasValue || !globAny(f.Values, strings.ToLower(value))) {
						continue
					}
					rule(f.Level, f.Reason, f.ID)
				}
				if p.Deletes != nil && p.Deletes.set.has(&o) {
					delWhen = true
				}
				if p.Writes != nil && p.Writes.when.has(&o) {
					writeWhen = true
				}
				if p.Writes != nil && p.Writes.set.has(&o) && hasValue {
					w.write(word{text: value, static: true}, name+" "+o.name)
				}
			})
			if next {
				i++
			}
			continue
		}
		positionals = append(positionals, a)
	}
	argOff := func(r *ArgRule) bool {
		if len(r.Unless) == 0 {
			return false
		}
		set := newOptSet(r.Unless)
		for i := 0; i < len(args); i++ {
			t := args[i].text
			if t == "--" {
				break
			}
			off := false
			if args[i].static && isOption(t) && t[0] == '-' {
				if eachOpt(t, takes, exact, func(o opt) {
					if set.has(&o) {
						off = true
					}
				}) {
					i++
				}
			}
			if off {
				return true
			}
		}
		return false
	}
	if m := p.ManyArgs; m != nil {
		min := m.Min
		if min == 0 {
			min = 2
		}
		if len(positionals) >= min && !argOff(m) {
			rule(m.Level, m.Reason, m.ID)
		}
	}
	for _, a := range positionals {
		if a.static {
			argRules(a.text)
		} else if strings.Contains(a.text, unknownMark) {
			// a "\x00" pattern matches a word known only at run time
			for j := range p.Args {
				if contains(p.Args[j].Match, unknownMark) {
					rule(p.Args[j].Level, p.Args[j].Reason, p.Args[j].ID)
				}
			}
		}
	}
	capLevel := func(l bot.Level) bot.Level {
		switch {
		case cx.help:
			return bot.Safe
		case cx.dry && l == bot.Dangerous:
			return bot.Caution
		}
		return l
	}
	if full {
		reason := p.Reason
		if base != p.Level {
			reason = ""
		}
		if reason == "" && base == bot.Caution {
			reason = name + " may change files or state"
		}
		if reason == "" && base == bot.Dangerous {
			reason = name + " is listed as dangerous"
		}
		l := capLevel(base)
		if l != base {
			reason = name + " (a dry run or help: changes nothing)"
		}
		w.addID(l, reason, p.id)
	}
	for _, h := range raises {
		if cx.help || cx.dry {
			continue
		}
		w.addID(h.level, reasonOr2(h.reason, name, " with these options is dangerous"), h.id)
	}
	if cx.help || cx.dry {
		return
	}
	if full && p.Deletes != nil {
		d := p.Deletes
		if delWhen && len(positionals) == 0 && cx.inputArgs && !d.OnlyProtected {
			w.addID(bot.Dangerous, d.Reason+" (paths read from input)", d.ID)
		}
		targets := positionals
		if d.OnlyProtected && len(targets) > 1 {
			targets = targets[:len(targets)-1] // mv: the sources go away
		}
		for _, a := range targets {
			a = w.resolve(a)
			if reason, _ := w.r.writeReason(a.text); reason != "" {
				r, id := splitID(reason)
				w.addID(bot.Dangerous, "deletes or moves a protected path: "+r, id)
				continue
			}
			if !delWhen {
				continue
			}
			switch deleteTarget(a) {
			case 1:
				if d.OnlyProtected && (a.glob || strings.Contains(a.text, unknownMark)) {
					continue
				}
				w.addID(bot.Dangerous, d.Reason, d.ID)
			case 2:
				if d.OnlyProtected {
					continue
				}
				w.addID(bot.Dangerous, reasonOr(d.OutsideReason, d.Reason), d.ID)
			}
		}
	}
	if full && p.Writes != nil && writeWhen {
		switch {
		case p.Writes.Args:
			for _, a := range positionals {
				w.write(a, name)
			}
		case p.Writes.Last && len(positionals) >= 2:
			w.write(positionals[len(positionals)-1], name)
		}
	}
}

func globAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if p == s || globMatch(p, s) {
			return true
		}
	}
	return false
}

// globMatch is wildMatch with the common shapes done directly: LIT,
// *LIT, LIT*, *LIT* (LIT without wildcards).
func globMatch(p, s string) bool {
	if !hasGlobEsc(p) {
		return p == s
	}
	if len(p) >= 2 && p[0] == '*' {
		mid := p[1:]
		if mid[len(mid)-1] == '*' {
			if lit := mid[:len(mid)-1]; !hasGlobEsc(lit) {
				return strings.Contains(s, lit)
			}
		} else if !hasGlobEsc(mid) {
			return strings.HasSuffix(s, mid)
		}
	}
	if p[len(p)-1] == '*' {
		if lit := p[:len(p)-1]; !hasGlobEsc(lit) {
			return strings.HasPrefix(s, lit)
		}
	}
	return wildMatch(p, s)
}

// wildMatch matches s against a glob where * and ? match any bytes,
// slashes included, [...] is a byte class and \ escapes.
func wildMatch(p, s string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			if p == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if wildMatch(p, s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
			p, s = p[1:], s[1:]
		case '[':
			end := strings.IndexByte(p[1:], ']')
			if end < 0 || s == "" {
				return false
			}
			class := p[1 : end+1]
			neg := strings.HasPrefix(class, "!") || strings.HasPrefix(class, "^")
			if neg {
				class = class[1:]
			}
			ok := false
			for i := 0; i < len(class); i++ {
				if i+2 < len(class) && class[i+1] == '-' {
					if class[i] <= s[0] && s[0] <= class[i+2] {
						ok = true
					}
					i += 2
					continue
				}
				if class[i] == s[0] {
					ok = true
				}
			}
			if ok == neg {
				return false
			}
			p, s = p[end+2:], s[1:]
		case '\\':
			if len(p) < 2 || s == "" || s[0] != p[1] {
				return false
			}
			p, s = p[2:], s[1:]
		default:
			if s == "" || s[0] != p[0] {
				return false
			}
			p, s = p[1:], s[1:]
		}
	}
	return s == ""
}

func isNegNumber(t string) bool {
	if len(t) < 2 || t[0] != '-' {
		return false
	}
	for i := 1; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return true
}

func (w *walker) sqlClient(prog string, c *SQLClient, args []word, stdin in, cx ctx) {
	w.add(bot.Caution, "database client ("+prog+")")
	exact := func(t string) bool { return c.withArg.hasExact(t) || c.code.hasExact(t) || c.file.hasExact(t) }
	takes := func(o opt) bool { return c.withArg.takes(o) || c.code.takes(o) || c.file.takes(o) }
	var codes []word
	positional := 0
	endOpts := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		t := a.text
		if !endOpts && t == "--" {
			endOpts = true
			continue
		}
		if !endOpts && isOption(t) {
			var codeNext, fileNext bool
			next := eachOpt(t, takes, exact, func(o opt) {
				switch {
				case c.code.has(&o):
					if o.next {
						codeNext = true
					} else {
						codes = append(codes, word{text: o.value, static: a.static})
					}
				case c.file.has(&o):
					fileNext = true
				}
			})
			if fileNext {
				w.add(bot.Dangerous, "runs SQL from a file the classifier cannot see ("+prog+" -f)")
			}
			if next {
				i++
				if codeNext && i < len(args) {
					codes = append(codes, args[i])
				}
			}
			continue
		}
		positional++
		if c.CodeArg > 0 && positional == c.CodeArg {
			codes = append(codes, a)
		}
	}
	if len(codes) > 0 {
		for _, code := range codes {
			if !code.static {
				w.add(bot.Dangerous, "runs SQL from a variable or substitution ("+prog+")")
				continue
			}
			w.sql(prog, code.text)
		}
		return
	}
	switch stdin.kind {
	case inLiteral:
		w.sql(prog, stdin.text)
	case inFile:
		w.add(bot.Dangerous, "runs SQL from a file the classifier cannot see ("+shorten(prog+" < "+stdin.what)+")")
	case inPipe:
		w.add(bot.Dangerous, "pipes SQL the classifier cannot see into "+prog)
	}
}

// sql judges SQL text: destructive statements, DELETE/UPDATE without
// WHERE, and client escapes that run commands or write files.
func (w *walker) sql(prog, text string) {
	s := stripSQL(text)
	for _, k := range w.r.sqlWords {
		if strings.Contains(s, k.key) {
			w.add(bot.Dangerous, k.reason)
		}
	}
	for len(s) > 0 {
		var stmt string
		if i := strings.IndexByte(s, ';'); i >= 0 {
			stmt, s = s[:i], s[i+1:]
		} else {
			stmt, s = s, ""
		}
		f := strings.Fields(stmt)
		if len(f) == 0 {
			continue
		}
		for _, k := range w.r.sqlDestr {
			if f[0] == k.key {
				w.add(bot.Dangerous, k.reason)
			}
		}
		verbs := f[:1]
		if f[0] == "WITH" {
			verbs = f
		}
		for _, k := range w.r.sqlWhere {
			if !containsWord(verbs, k.key) {
				continue
			}
			if !containsWord(f, "WHERE") || alwaysTrue(f) {
				w.add(bot.Dangerous, k.reason)
			}
		}
	}
}

func containsWord(f []string, k string) bool {
	for _, x := range f {
		if x == k || strings.TrimLeft(x, "(") == k {
			return true
		}
	}
	return false
}

// stripSQL upper-cases SQL and blanks out comments and string literals,
// so that words inside them are not taken for statements.
func stripSQL(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			b.WriteByte(' ')
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				i = len(s)
			} else {
				i += j + 3
			}
			b.WriteByte(' ')
		case c == '\'':
			i++
			for i < len(s) {
				if s[i] == '\'' {
					if i+1 < len(s) && s[i+1] == '\'' {
						i += 2
						continue
					}
					break
				}
				i++
			}
			b.WriteString("''")
		default:
			if c >= 'a' && c <= 'z' {
				c -= 'a' - 'A'
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unknown judges a program no pack names: caution, raised by the generic
// verbs and confirmation-skipping flags.
func (w *walker) unknown(prog string, args []word, cx ctx) {
	help, dry := w.modes(nil, args)
	cx.help, cx.dry = help, dry
	w.addID(w.r.Unknown.Level, reasonOr(w.r.Unknown.Reason, "unknown program")+" ("+shorten(prog)+")", "generic:unknown")
	if sqlWords[strings.ToUpper(prog)] {
		// SQL typed as a command (DROP TABLE x;): judge it as SQL
		text := prog
		for _, a := range args {
			text += " " + a.text
		}
		w.sql(prog, text)
		return
	}
	if !help && !dry && verbLike(prog) {
		// a program named for what it does: nuke-cluster, drop-db
		var lb [64]byte
		for st := 0; ; {
			part, next := verbPart(prog, st)
			if part == "" {
				break
			}
			st = next
			low := lowered(lb[:0], part)
			for _, v := range w.r.Generic.verbHits(part, low) {
				w.addID(bot.Dangerous, v.reason+" ("+shorten(prog)+")", v.id)
			}
		}
	}
	w.verbs(prog, args, cx, true)
}

var sqlWords = map[string]bool{"DROP": true, "DELETE": true, "TRUNCATE": true, "UPDATE": true, "ALTER": true, "INSERT": true, "GRANT": true, "REVOKE": true, "CREATE": true, "SELECT": true, "REPLACE": true, "MERGE": true}

// alwaysTrue reports whether a statement's WHERE holds for every row:
// WHERE 1=1, WHERE TRUE, WHERE 1, WHERE x=x, WHERE 'a'='a', or any
// condition joined by OR to one of these. f is the statement's words,
// upper-cased by stripSQL.
func alwaysTrue(f []string) bool {
	at := -1
	for i, w := range f {
		if w == "WHERE" {
			at = i
		}
	}
	if at < 0 {
		return false
	}
	cond := strings.Join(f[at+1:], " ")
	for _, part := range strings.Split(cond, " OR ") {
		p := strings.Trim(strings.ReplaceAll(part, " ", ""), "()")
		switch p {
		case "TRUE", "1", "NOT0", "NOTFALSE":
			return true
		}
		if l, r, ok := strings.Cut(p, "="); ok && l != "" && l == r && !strings.ContainsAny(l, "=<>!") {
			return true
		}
	}
	return false
}
