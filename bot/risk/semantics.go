package risk

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/signoff/signoff/bot"
)

// Parser-side semantics that packs cannot express: what a program does
// with the text it is given (sed scripts, at jobs), what a word may hold
// at run time (variables, defaults, decoded substitutions), and bash
// evaluation tricks. Knowledge of programs stays in the packs.

// analyzers see a command's words before its rule is applied; true means
// the command is fully judged.
var analyzers map[string]func(w *walker, args []word, stdin in, cx ctx) bool

func init() {
	analyzers = map[string]func(w *walker, args []word, stdin in, cx ctx) bool{
		"sed":      (*walker).sedCommand,
		"gsed":     (*walker).sedCommand,
		"at":       (*walker).atJob,
		"batch":    (*walker).atJob,
		"printenv": (*walker).printenv,
		"dd":       (*walker).ddCommand,
	}
}

// sedCommand looks inside sed scripts for the commands that run programs
// (e, s///e) or write files (w, s///w) and the files read (r).
func (w *walker) sedCommand(args []word, _ in, _ ctx) bool {
	var scripts []word
	explicit := false
	for i := 1; i < len(args); i++ {
		t := args[i].text
		switch {
		case t == "--":
			i = len(args)
		case t == "-e" || t == "--expression":
			explicit = true
			if i+1 < len(args) {
				scripts = append(scripts, args[i+1])
				i++
			}
		case strings.HasPrefix(t, "--expression="):
			explicit = true
			scripts = append(scripts, word{text: t[len("--expression="):], static: args[i].static})
		case t == "-f" || t == "--file" || strings.HasPrefix(t, "--file="):
			explicit = true
			w.addID(bot.Dangerous, "runs a sed script file the classifier cannot see (sed -f)", "core.filesystem:sed-script-file")
			i++
		case strings.HasPrefix(t, "-") && len(t) > 1 && !strings.HasPrefix(t, "--"):
			// a cluster ending in e takes the script: -ne 's/x/y/'
			if j := strings.IndexByte(t, 'e'); j > 0 {
				explicit = true
				if j+1 < len(t) {
					scripts = append(scripts, word{text: t[j+1:], static: args[i].static})
				} else if i+1 < len(args) {
					scripts = append(scripts, args[i+1])
					i++
				}
			}
			if j := strings.IndexByte(t, 'f'); j > 0 && !strings.Contains(t[:j], "e") {
				explicit = true
				w.addID(bot.Dangerous, "runs a sed script file the classifier cannot see (sed -f)", "core.filesystem:sed-script-file")
				i++
			}
		case strings.HasPrefix(t, "-"):
		default:
			if !explicit && len(scripts) == 0 {
				scripts = append(scripts, args[i])
			}
		}
	}
	for _, s := range scripts {
		w.sedScript(s.text)
	}
	return false
}

func (w *walker) sedScript(s string) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '{' || c == '}' || c == '!':
			i++
			continue
		case c >= '0' && c <= '9' || c == '$' || c == ',' || c == '~' || c == '+':
			i++
			continue
		case c == '/' || c == '\\':
			// an address /re/ or \cREc
			delim := byte('/')
			if c == '\\' && i+1 < len(s) {
				delim = s[i+1]
				i++
			}
			i = skipDelimited(s, i+1, delim)
			if i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
			continue
		}
		i++ // the command letter
		switch c {
		case 'e':
			w.addID(bot.Dangerous, "sed e runs a shell command", "core.filesystem:sed-exec")
			i = lineEnd(s, i)
		case 'w', 'W':
			file := strings.TrimSpace(s[i:lineEnd(s, i)])
			w.sedWrite(file)
			i = lineEnd(s, i)
		case 'r', 'R':
			w.read(word{text: strings.TrimSpace(s[i:lineEnd(s, i)]), static: true})
			i = lineEnd(s, i)
		case 'a', 'i', 'c', ':', 'b', 't', 'T', 'q', 'Q', 'l', 'L':
			if c == 'a' || c == 'i' || c == 'c' || c == ':' {
				i = lineEnd(s, i)
			} else {
				for i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
					i++
				}
			}
		case 's', 'y':
			if i >= len(s) {
				return
			}
			delim := s[i]
			i = skipDelimited(s, i+1, delim)
			i = skipDelimited(s, i, delim)
			if c == 'y' {
				continue
			}
			for i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
				switch s[i] {
				case 'e':
					w.addID(bot.Dangerous, "sed s///e runs the result as a shell command", "core.filesystem:sed-s-exec")
				case 'w':
					w.sedWrite(strings.TrimSpace(s[i+1 : lineEnd(s, i+1)]))
					i = lineEnd(s, i+1)
					continue
				}
				i++
			}
		}
	}
}

func (w *walker) sedWrite(file string) {
	switch file {
	case "/dev/stdout", "/dev/stderr":
		return
	}
	w.addID(bot.Dangerous, "sed w writes a file ("+shorten(file)+")", "core.filesystem:sed-write")
}

// skipDelimited returns the index just past the next unescaped delim.
func skipDelimited(s string, i int, delim byte) int {
	for i < len(s) {
		if s[i] == '\\' {
			i += 2
			continue
		}
		if s[i] == delim {
			return i + 1
		}
		i++
	}
	return i
}

func lineEnd(s string, i int) int {
	if i > len(s) {
		return len(s)
	}
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(s)
}

// atJob: at and batch read the commands they schedule from input or -f.
func (w *walker) atJob(args []word, stdin in, cx ctx) bool {
	for i := 1; i < len(args); i++ {
		t := args[i].text
		switch {
		case t == "-l" || t == "-c" || t == "-V" || t == "--help":
			return true // lists or prints jobs
		case t == "-r" || t == "-d":
			w.addID(bot.Caution, "removes scheduled jobs", "system:at-remove")
			return true
		case t == "-f" || strings.HasPrefix(t, "-f"):
			w.addID(bot.Dangerous, "schedules a script file the classifier cannot see (at -f)", "system:at-file")
			return true
		}
	}
	w.addID(bot.Caution, "schedules a command to run later (at)", "system:at")
	w.stdinCode(args[0].text, stdin, cx, func(text string) { w.shell(text, cx.deeper()) })
	return true
}

// printenv of a variable holding a credential puts it in the transcript.
func (w *walker) printenv(args []word, _ in, _ ctx) bool {
	for _, a := range args[1:] {
		if !isOption(a.text) && w.r.secretVar(a.text) {
			w.addID(bot.Dangerous, "prints a credential from the environment ("+shorten(a.text)+")", "secrets:printenv")
		}
	}
	return true
}

// nameMatch is path.Match(pattern, name) with the common shapes (LIT,
// *LIT, LIT*, *LIT*) done directly when name has no slash (which only
// path.Match's * refuses to cross).
func nameMatch(pattern, name string) bool {
	if strings.IndexByte(name, '/') < 0 {
		lit, pre, suf := pattern, false, false
		if len(lit) > 0 && lit[0] == '*' {
			lit, pre = lit[1:], true
		}
		if len(lit) > 0 && lit[len(lit)-1] == '*' {
			lit, suf = lit[:len(lit)-1], true
		}
		if !hasGlobEsc(lit) {
			switch {
			case pre && suf:
				return strings.Contains(name, lit)
			case pre:
				return strings.HasSuffix(name, lit)
			case suf:
				return strings.HasPrefix(name, lit)
			}
			return name == lit
		}
	}
	ok, _ := path.Match(pattern, name)
	return ok
}

// secretVar reports whether a variable's name says it holds a credential.
func (r *Rules) secretVar(name string) bool {
	up := strings.ToUpper(name)
	for _, g := range r.Env.Secrets {
		if nameMatch(g, up) {
			return true
		}
	}
	return false
}

func (r *Rules) secretPathVar(name string) bool {
	for _, v := range r.Env.SecretPaths {
		if v == name {
			return true
		}
	}
	return false
}

// callWords checks a simple command's words as the shell will see them at
// run time: secrets printed, variables that name secrets, values decoded
// at run time, and text bash evaluates as an array subscript.
func (w *walker) callWords(c *syntax.CallExpr, args []word) {
	prog := args[0].text
	printing := args[0].static && (prog == "echo" || prog == "printf" || prog == "print")
	for i, x := range c.Args {
		a := args[i]
		if a.static && subscriptInjection(a.text) {
			w.addID(bot.Dangerous, "holds text that runs a command when bash evaluates it as an array subscript", "shell:subscript-injection")
		}
		if a.static {
			continue
		}
		syntax.Walk(x, func(n syntax.Node) bool {
			switch p := n.(type) {
			case *syntax.ParamExp:
				if p.Param == nil {
					return true
				}
				name := p.Param.Value
				if p.Excl && p.Names == 0 && p.Index == nil {
					w.addID(bot.Dangerous, "expands a variable named by another (${!x}), which bash may evaluate as code", "shell:indirect-expansion")
				}
				if printing && w.r.secretVar(name) {
					w.addID(bot.Dangerous, "prints a credential from the environment ($"+name+")", "secrets:echo")
				}
				if i > 0 && w.r.secretPathVar(name) {
					w.addID(bot.Dangerous, "reads through $"+name+", which names signoff key material", "signoff:key-path")
				}
				if i > 0 && p.Exp != nil && p.Exp.Word != nil {
					switch p.Exp.Op {
					case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
						if v := viewWord(p.Exp.Word); v.static {
							w.read(v)
						}
					}
				}
				if i > 0 && p.Exp == nil && p.Slice == nil && p.Repl == nil && w.vars[name] != "" {
					w.read(word{text: w.vars[name], static: true})
				}
			case *syntax.CmdSubst:
				if i > 0 && decodes(p.Stmts) {
					w.addID(bot.Dangerous, "an argument is decoded at run time, hiding what it names", "shell:decoded-argument")
				}
				return false
			}
			return true
		})
	}
}

// decodes reports whether commands decode or unescape text (base64 -d,
// xxd -r, printf with escapes, rev …).
func decodes(stmts []*syntax.Stmt) bool {
	found := false
	for _, st := range stmts {
		syntax.Walk(st, func(n syntax.Node) bool {
			ce, ok := n.(*syntax.CallExpr)
			if !ok || len(ce.Args) == 0 || found {
				return !found
			}
			name := path.Base(viewWord(ce.Args[0]).text)
			switch name {
			case "base64", "base32", "xxd", "uudecode", "rev", "openssl", "gunzip", "zcat", "tr":
				found = true
			case "printf", "echo":
				for _, a := range ce.Args[1:] {
					if strings.Contains(viewWord(a).text, "\\") {
						found = true
					}
				}
			}
			return !found
		})
	}
	return found
}

// subscriptInjection: a[$(cmd)] or a[`cmd`] as plain text runs cmd when
// bash evaluates the text arithmetically ($((x)), [[ x -eq 1 ]], let,
// declare -i, printf -v, read, test -v).
func subscriptInjection(t string) bool {
	for i := strings.IndexByte(t, '['); i >= 0; {
		rest := t[i+1:]
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			end = len(rest)
		}
		inner := rest[:end]
		if strings.Contains(inner, "$(") || strings.Contains(inner, "`") {
			return true
		}
		j := strings.IndexByte(rest, '[')
		if j < 0 {
			break
		}
		i = i + 1 + j
	}
	return false
}

// normalizeCode undoes spacing and string concatenation in inline code,
// so "os .system", "o"+"s" and "/usr/bin/tou"."ch" read as written out.
func normalizeCode(code string) string {
	var b strings.Builder
	b.Grow(len(code))
	space := false
	for i := 0; i < len(code); i++ {
		c := code[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			space = true
			continue
		}
		if space && b.Len() > 0 && !strings.ContainsRune(".()[],+\"'", rune(c)) {
			last := b.String()[b.Len()-1]
			if !strings.ContainsRune(".()[],+\"'", rune(last)) {
				b.WriteByte(' ')
			}
		}
		space = false
		b.WriteByte(c)
	}
	s := b.String()
	for _, cat := range []string{`"+"`, `'+'`, `"."`, `'.'`, `"+'`, `'+"`, `".'`, `'."`} {
		s = strings.ReplaceAll(s, cat, "")
	}
	return s
}

// kvClient judges a key-value store client: read-only commands are safe,
// anything else writes the store.
func (w *walker) kvClient(prog string, c *KVClient, args []word, stdin in, cx ctx) {
	w.addID(bot.Caution, "key-value store client ("+prog+")", "databases:kv-client")
	takes := c.withArg.takes
	var cmd []word
	for i := 1; i < len(args); i++ {
		t := args[i].text
		if isOption(t) && args[i].static {
			if t == "--eval" {
				w.addID(bot.Dangerous, "runs a Lua script file the classifier cannot see ("+prog+" --eval)", "databases:kv-eval-file")
			}
			if eachOpt(t, takes, c.withArg.hasExact, func(opt) {}) {
				i++
			}
			continue
		}
		cmd = args[i:]
		break
	}
	if len(cmd) > 0 {
		w.kvCommand(prog, cmd[0], cx)
		return
	}
	switch stdin.kind {
	case inLiteral:
		for _, line := range strings.Split(stdin.text, "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				w.kvCommand(prog, word{text: f[0], static: true}, cx)
			}
		}
	case inFile, inPipe:
		w.addID(bot.Dangerous, "pipes commands the classifier cannot see into "+prog, "databases:kv-stdin")
	}
}

func (w *walker) kvCommand(prog string, c word, _ ctx) {
	if !c.static {
		w.addID(bot.Dangerous, prog+" command comes from a variable or substitution", "databases:kv-dynamic")
		return
	}
	if w.r.KV.ro[strings.ToUpper(c.text)] {
		return
	}
	w.addID(bot.Dangerous, "writes to or controls the store ("+shorten(prog+" "+c.text)+")", "databases:kv-write")
}

// scanLiterals: static words need a look only when one could hide a
// subscript injection (cheap test, so plain commands stay fast).
func (r *Rules) scanLiterals(args []word) bool {
	for _, a := range args {
		if strings.IndexByte(a.text, '[') >= 0 {
			return true
		}
	}
	return false
}

// envFiltered: the whole environment piped into a filter for credentials
// (env | grep -i token) prints them.
func (w *walker) envFiltered(c *syntax.BinaryCmd) {
	left, ok := c.X.Cmd.(*syntax.CallExpr)
	right, ok2 := c.Y.Cmd.(*syntax.CallExpr)
	if !ok || !ok2 || len(left.Args) == 0 || len(right.Args) < 2 {
		return
	}
	switch viewWord(left.Args[0]).text {
	case "env", "printenv", "set", "export", "declare", "typeset", "compgen":
	default:
		return
	}
	switch viewWord(right.Args[0]).text {
	case "grep", "egrep", "fgrep", "rg", "ag", "awk", "sed":
	default:
		return
	}
	for _, a := range right.Args[1:] {
		t := strings.ToLower(viewWord(a).text)
		for _, k := range []string{"token", "secret", "key", "pass", "cred", "auth", "_pat", "session"} {
			if strings.Contains(t, k) {
				w.addID(bot.Dangerous, "prints credentials from the environment ("+shorten(viewWord(left.Args[0]).text+" | "+viewWord(right.Args[0]).text)+")", "secrets:env-filter")
				return
			}
		}
	}
}

// hasPlaceholder: {} or {1}, {.}, {/} … where input is pasted.
func hasPlaceholder(s string) bool {
	for i := strings.IndexByte(s, '{'); i >= 0 && i < len(s); {
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return false
		}
		inner := s[i+1 : i+j]
		if len(inner) <= 3 && !strings.ContainsAny(inner, " ;,") {
			return true
		}
		k := strings.IndexByte(s[i+1:], '{')
		if k < 0 {
			return false
		}
		i = i + 1 + k
	}
	return false
}

// quoteWords writes words back as one shell line, each quoted as needed.
func quoteWords(ws []word) (string, bool) {
	var b strings.Builder
	for j, a := range ws {
		if !a.static {
			return "", false
		}
		q, err := syntax.Quote(a.text, syntax.LangBash)
		if err != nil {
			return "", false
		}
		if j > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(q)
	}
	return b.String(), true
}

// parallelInputs expands parallel CMD ::: A B … when the inputs are plain
// words (one ::: list, at most 16): each A is pasted where {} is, or
// appended. It reports false when it cannot, and the inputs are unseen.
func (w *walker) parallelInputs(prog string, wr *Wrapper, cmd, inputs []word, stdin in, cx ctx) bool {
	if len(inputs) == 0 || len(inputs) > 16 {
		return false
	}
	for _, a := range inputs {
		if !a.static || strings.HasPrefix(a.text, ":::") {
			return false
		}
	}
	if len(cmd) == 0 {
		for _, a := range inputs {
			w.shell(a.text, cx.deeper())
		}
		return true
	}
	for _, a := range inputs {
		x := make([]word, 0, len(cmd)+1)
		pasted := false
		for _, c := range cmd {
			if strings.Contains(c.text, "{}") {
				c.text = strings.ReplaceAll(c.text, "{}", a.text)
				pasted = true
			}
			x = append(x, c)
		}
		if !pasted {
			x = append(x, a)
		}
		var b strings.Builder
		for j, c := range x {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(c.text)
		}
		joined := b.String()
		if q, ok := quoteWords(x); ok && q != joined {
			w.shell(q, cx.deeper())
		}
		p := parsers.Get().(*syntax.Parser)
		_, err := p.Parse(strings.NewReader(joined), "")
		parsers.Put(p)
		if err != nil {
			if q, ok := quoteWords(x); ok {
				joined = q
			}
		}
		w.shell(joined, cx.deeper())
	}
	return true
}

// ddCommand: dd writes of= and reads if=; the target decides the risk.
func (w *walker) ddCommand(args []word, _ in, _ ctx) bool {
	w.addID(bot.Caution, "copies raw data (dd)", "system:dd")
	wrote := false
	for _, a := range args[1:] {
		switch {
		case strings.HasPrefix(a.text, "of="):
			wrote = true
			t := a
			t.text = a.text[3:]
			w.write(t, "dd of=")
		case strings.HasPrefix(a.text, "if="):
			t := a
			t.text = a.text[3:]
			w.read(t)
		}
	}
	if !wrote {
		w.addID(bot.Caution, "dd writes to standard output", "system:dd")
	}
	return true
}

// awkRedirects reports whether awk code sends a print or printf to a file
// or a command: in awk's grammar a >, >> or | outside parentheses and
// strings in a print statement's list is a redirection, whatever follows
// it (a literal file name, a variable, a concatenation).
func awkRedirects(code string) bool {
	for i := 0; i < len(code); i++ {
		if !awkWordAt(code, i, "print") {
			continue
		}
		depth, inStr := 0, false
		for j := i + 5; j < len(code); j++ {
			c := code[j]
			if inStr {
				if c == '\\' {
					j++
				} else if c == '"' {
					inStr = false
				}
				continue
			}
			switch c {
			case '"':
				inStr = true
			case '(':
				depth++
			case ')':
				depth--
			case '>', '|':
				if depth <= 0 {
					return true
				}
			case ';', '}', '\n':
				j = len(code)
			}
		}
	}
	return false
}

// awkWordAt: the keyword kw (or kw+"f") starts at i as a whole word.
func awkWordAt(s string, i int, kw string) bool {
	if !strings.HasPrefix(s[i:], kw) || i > 0 && isIdentByte(s[i-1]) {
		return false
	}
	end := i + len(kw)
	if end < len(s) && s[end] == 'f' {
		end++
	}
	return end >= len(s) || !isIdentByte(s[end])
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
