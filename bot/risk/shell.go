package risk

import (
	"fmt"
	"path"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"

	"github.com/signoff/signoff/bot"
)

var parsers = sync.Pool{New: func() any {
	return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(false))
}}

// walker walks one command and everything it would run.
type walker struct {
	r *Rules
	verdict
	funcs map[string]bool
	// cwd is where relative paths are, as the shell's cd left it: "" the
	// workspace, a relative path inside it, an absolute or ~ path, or
	// unknownMark when it cannot be known (cd "$X", cd -).
	cwd     string
	dirs    []string          // pushd's stack
	funcCwd map[string]string // where calling a function leaves the shell
	vars    map[string]string // variables set to plain text (f=.env)

	explain bool
	span    string // the source of the command being judged, for Explain
	hits    []Hit

	argBuf    [12]word  // plainWords' words, kept with a pooled walker
	wordStack []word    // parsed commands' words, kept with a pooled walker
	nodes     nodeArena // fastParse's syntax nodes, kept with a pooled walker

	parserOnly bool // tests: every shell code through the parser, none through fastParse

	rd strings.Reader // the parser's input, kept with a pooled walker

	visit func([]word) // Commands: told each simple command as it would run
}

// add records a level and its reason (with its rule id, if any, as
// " [id]" at its end).
func (w *walker) add(l bot.Level, reason string) {
	r, id := reason, ""
	if strings.HasSuffix(reason, "]") {
		r, id = splitID(reason)
	}
	w.addID(l, r, id)
}

// addID records a level, its reason and the id of the rule that gave it.
func (w *walker) addID(l bot.Level, reason, id string) {
	w.verdict.addID(l, reason, id)
	if w.explain && reason != "" {
		w.hits = append(w.hits, Hit{Level: l, Rule: id, Reason: reason, Span: w.span})
	}
}

// in is what a command reads on standard input.
type in struct {
	kind inKind
	text string       // inLiteral: the text
	from *syntax.Stmt // inPipe: what writes into the pipe, if known
	what string       // inFile: the file
}

type inKind uint8

const (
	inNone    inKind = iota
	inLiteral        // a here-document, here-string or echo of literals
	inFile           // < file
	inPipe           // another command's output, or anything unseen
)

// deeper is the context of code a command runs (bash -c, watch, ssh).
func (cx ctx) deeper() ctx { return ctx{depth: cx.depth + 1, inputArgs: cx.inputArgs} }

// ctx is what a command inherits from what runs it.
type ctx struct {
	depth     int
	inputArgs bool // more arguments come from input (xargs, find -exec {})
	verbs     bool // the generic verb rule applies (a pack's verbs: true)
	help, dry bool // the command asks for help or is a dry run
}

// shell walks shell code run at depth cx.depth (0: the command itself);
// only the depth and whether arguments come from input (xargs) carry
// into it.
func (w *walker) shell(src string, cx ctx) {
	depth := cx.depth
	if depth > w.r.MaxDepth {
		w.add(bot.Dangerous, fmt.Sprintf("shell code nested more than %d levels deep", w.r.MaxDepth))
		return
	}
	if tooDeep(src, maxBrackets) {
		w.add(bot.Dangerous, fmt.Sprintf("nests brackets more than %d deep; too deep to classify", maxBrackets))
		return
	}
	f, ok := (*syntax.File)(nil), false
	if !w.parserOnly {
		f, ok = w.fastParse(src)
	}
	if !ok {
		p := parsers.Get().(*syntax.Parser)
		w.rd.Reset(src) // the parse ends before any nested shell reuses it
		var err error
		f, err = p.Parse(&w.rd, "")
		parsers.Put(p)
		if err != nil {
			w.add(bot.Dangerous, "does not parse as a shell command: "+shortErr(err))
			return
		}
	}
	for _, s := range f.Stmts {
		w.stmt(src, s, in{}, ctx{depth: depth, inputArgs: cx.inputArgs})
	}
}

// maxBrackets bounds how deeply a command may nest parentheses, braces
// and brackets: the parser recurses per level, and a deep enough input
// would overflow the stack (a fatal error, not a panic).
const maxBrackets = 256

// tooDeep over-counts nesting (quotes are not skipped), which only errs
// towards dangerous.
func tooDeep(src string, limit int) bool {
	d := 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '(', '{', '[':
			d++
			if d > limit {
				return true
			}
		case ')', '}', ']':
			if d > 0 {
				d--
			}
		}
	}
	return false
}

func (w *walker) stmt(src string, s *syntax.Stmt, stdin in, cx ctx) {
	if s == nil {
		return
	}
	for _, r := range s.Redirs {
		w.redirect(src, r, &stdin, cx)
	}
	switch c := s.Cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		w.call(src, c, stdin, cx)
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			// each side of a pipe runs in a subshell: a cd there stays there
			saved := w.cwd
			w.stmt(src, c.X, stdin, cx)
			w.cwd = saved
			w.stmt(src, c.Y, pipeFrom(src, c.X), cx)
			w.cwd = saved
			w.envFiltered(c)
			return
		}
		w.stmt(src, c.X, stdin, cx)
		w.stmt(src, c.Y, stdin, cx)
	case *syntax.Subshell:
		saved, dirs := w.cwd, len(w.dirs)
		for _, st := range c.Stmts {
			w.stmt(src, st, stdin, cx)
		}
		w.cwd, w.dirs = saved, w.dirs[:dirs]
	case *syntax.Block:
		for _, st := range c.Stmts {
			w.stmt(src, st, stdin, cx)
		}
	case *syntax.TimeClause:
		w.stmt(src, c.Stmt, stdin, cx)
	case *syntax.FuncDecl:
		w.funcDecl(src, c, cx)
	case *syntax.DeclClause:
		for _, a := range c.Args {
			w.assign(src, a, cx)
		}
	case *syntax.LetClause:
		for _, x := range c.Exprs {
			syntax.Walk(x, func(n syntax.Node) bool {
				if wd, ok := n.(*syntax.Word); ok {
					if v := viewWord(wd); v.static && subscriptInjection(v.text) {
						w.addID(bot.Dangerous, "holds text that runs a command when bash evaluates it as an array subscript", "shell:subscript-injection")
					}
				}
				return true
			})
		}
		w.nested(src, c, cx)
	case *syntax.TestClause:
		w.testSubscripts(c.X)
		w.nested(src, c, cx)
	default:
		w.nested(src, c, cx)
	}
}

// testSubscripts: [[ ]] evaluates the operands of -eq, -ne, -lt, -le,
// -gt, -ge and of -v arithmetically, so a literal 'a[$(cmd)]' there runs
// cmd as surely as one held in a variable.
func (w *walker) testSubscripts(x syntax.TestExpr) {
	check := func(e syntax.TestExpr) {
		if wd, ok := e.(*syntax.Word); ok {
			if v := viewWord(wd); subscriptInjection(v.text) {
				w.addID(bot.Dangerous, "holds text that runs a command when bash evaluates it as an array subscript", "shell:subscript-injection")
			}
		}
	}
	switch e := x.(type) {
	case *syntax.BinaryTest:
		switch e.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			check(e.X)
			check(e.Y)
		default:
			w.testSubscripts(e.X)
			w.testSubscripts(e.Y)
		}
	case *syntax.UnaryTest:
		if e.Op == syntax.TsVarSet || e.Op == syntax.TsRefVar {
			check(e.X)
		}
		w.testSubscripts(e.X)
	case *syntax.ParenTest:
		w.testSubscripts(e.X)
	}
}

// nested walks any node for the statements and substitutions inside it.
func (w *walker) nested(src string, n syntax.Node, cx ctx) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.Stmt:
			w.stmt(src, x, in{}, cx)
			return false
		case *syntax.CmdSubst, *syntax.ProcSubst:
			w.subst(src, x, cx)
			return false
		case *syntax.Assign:
			w.assign(src, x, cx)
			return false
		}
		return true
	})
}

// subst walks the commands inside a $(…), `…`, <(…) or >(…).
func (w *walker) subst(src string, n syntax.Node, cx ctx) {
	var stmts []*syntax.Stmt
	switch x := n.(type) {
	case *syntax.CmdSubst:
		stmts = x.Stmts
	case *syntax.ProcSubst:
		stmts = x.Stmts
	}
	saved, dirs := w.cwd, len(w.dirs)
	for _, st := range stmts {
		w.stmt(src, st, in{}, cx)
	}
	w.cwd, w.dirs = saved, w.dirs[:dirs]
}

func (w *walker) words(src string, ws []*syntax.Word, cx ctx) {
	for _, x := range ws {
		if hasSubst(x) {
			w.nested(src, x, cx)
		}
	}
}

func (w *walker) assign(src string, a *syntax.Assign, cx ctx) {
	if a == nil {
		return
	}
	if a.Name != nil && w.r.envDangerous(a.Name.Value) && !a.Naked {
		w.add(bot.Dangerous, "sets "+a.Name.Value+", which changes what commands run or load")
	}
	if a.Value != nil && hasSubst(a.Value) {
		w.nested(src, a.Value, cx)
	}
	if a.Name != nil && a.Value != nil {
		v := viewWord(a.Value)
		if v.static {
			if subscriptInjection(v.text) {
				w.addID(bot.Dangerous, "holds text that runs a command when bash evaluates it as an array subscript", "shell:subscript-injection")
			}
			if w.vars == nil {
				w.vars = map[string]string{}
			}
			w.vars[a.Name.Value] = v.text
		} else if w.vars != nil {
			delete(w.vars, a.Name.Value)
		}
		if v.text != "" && !strings.Contains(v.text, unknownMark) {
			w.read(v)
		}
	}
	if a.Array != nil || a.Index != nil {
		syntax.Walk(a, func(n syntax.Node) bool {
			switch n.(type) {
			case *syntax.CmdSubst, *syntax.ProcSubst:
				w.subst(src, n, cx)
				return false
			}
			return true
		})
	}
}

func (w *walker) redirect(src string, r *syntax.Redirect, stdin *in, cx ctx) {
	if r.Word != nil && hasSubst(r.Word) {
		w.nested(src, r.Word, cx)
	}
	if r.Hdoc != nil && hasSubst(r.Hdoc) {
		w.nested(src, r.Hdoc, cx)
	}
	tw := viewWord(r.Word)
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.RdrAllClob,
		syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
		w.write(tw, "redirection")
		if r.Op == syntax.RdrInOut {
			w.read(tw)
		}
	case syntax.DplOut, syntax.DplIn:
		if !isFD(tw.text) {
			w.write(tw, "redirection")
		}
	case syntax.RdrIn:
		w.read(tw)
		*stdin = in{kind: inFile, what: tw.text}
	case syntax.Hdoc, syntax.DashHdoc:
		*stdin = in{kind: inLiteral, text: hdocBody(src, r)}
	case syntax.WordHdoc:
		if tw.static {
			*stdin = in{kind: inLiteral, text: tw.text}
		} else {
			*stdin = in{kind: inPipe}
		}
		w.read(tw)
	}
}

func isFD(t string) bool {
	if t == "-" || t == "" {
		return true
	}
	t = strings.TrimSuffix(t, "-")
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return true
}

// hdocBody returns a here-document's body as written, without the
// closing delimiter line (which the parser counts in the word).
func hdocBody(src string, r *syntax.Redirect) string {
	body := sourceOf(src, r.Hdoc)
	if i := strings.LastIndexByte(body, '\n'); i >= 0 || body != "" {
		last := body[i+1:]
		if strings.TrimLeft(last, "\t") == viewWord(r.Word).text {
			body = body[:i+1]
		}
	}
	return body
}

// nodeSource returns a node's source text, as written.
func nodeSource(src string, n syntax.Node) string {
	a, b := n.Pos(), n.End()
	if !a.IsValid() || !b.IsValid() {
		return ""
	}
	i, j := int(a.Offset()), int(b.Offset())
	if i < 0 || j > len(src) || i > j {
		return ""
	}
	return src[i:j]
}

// sourceOf returns a word's source text, as written.
func sourceOf(src string, n *syntax.Word) string {
	if n == nil {
		return ""
	}
	a, b := n.Pos(), n.End()
	if !a.IsValid() || !b.IsValid() {
		return ""
	}
	i, j := int(a.Offset()), int(b.Offset())
	if i < 0 || j > len(src) || i > j {
		return ""
	}
	return src[i:j]
}

// pipeFrom describes what a pipeline's left side writes into the pipe:
// literal text for echo/printf of literals and cat of a here-document,
// otherwise unseen output of the programs named.
func pipeFrom(src string, s *syntax.Stmt) in {
	if s == nil {
		return in{kind: inPipe}
	}
	if ce, ok := s.Cmd.(*syntax.CallExpr); ok && len(ce.Args) > 0 {
		name := viewWord(ce.Args[0])
		if name.static && (name.text == "echo" || name.text == "printf") && len(s.Redirs) == 0 {
			var b strings.Builder
			lit, escapes := true, false
			for i, a := range ce.Args[1:] {
				v := viewWord(a)
				if !v.static || v.glob {
					lit = false
					break
				}
				if name.text == "echo" && i == 0 && isOption(v.text) && len(v.text) <= 3 {
					escapes = strings.ContainsRune(v.text, 'e')
					continue // echo -n / -e
				}
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(v.text)
			}
			if lit && (name.text == "printf" || escapes) && strings.ContainsRune(b.String(), '\\') {
				// \x74ouch: escapes the shell will decode before running it
				return in{kind: inPipe, from: s}
			}
			if lit {
				return in{kind: inLiteral, text: b.String()}
			}
		}
		if name.static && name.text == "cat" && len(ce.Args) == 1 {
			for _, r := range s.Redirs {
				switch r.Op {
				case syntax.Hdoc, syntax.DashHdoc:
					return in{kind: inLiteral, text: hdocBody(src, r)}
				case syntax.WordHdoc:
					if v := viewWord(r.Word); v.static {
						return in{kind: inLiteral, text: v.text}
					}
				}
			}
		}
	}
	return in{kind: inPipe, from: s}
}

// programsIn lists the program names feeding a pipe, nearest last, for
// reasons: it follows the pipeline leftwards a few steps and looks a
// bounded distance into anything else, so long pipelines stay linear.
func programsIn(s *syntax.Stmt) []string {
	var out []string
	for steps := 0; s != nil && steps < 8; steps++ {
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
			out = append(namesIn(b.Y), out...)
			s = b.X
			continue
		}
		out = append(namesIn(s), out...)
		break
	}
	return out
}

func namesIn(s *syntax.Stmt) []string {
	var out []string
	visited := 0
	syntax.Walk(s, func(n syntax.Node) bool {
		visited++
		if visited > 64 {
			return false
		}
		if ce, ok := n.(*syntax.CallExpr); ok && len(ce.Args) > 0 {
			if v := viewWord(ce.Args[0]); v.static {
				out = append(out, path.Base(v.text))
			}
		}
		return true
	})
	return out
}

func (w *walker) funcDecl(src string, f *syntax.FuncDecl, cx ctx) {
	names := f.Names
	if f.Name != nil {
		names = append([]*syntax.Lit{f.Name}, names...)
	}
	if w.funcs == nil {
		w.funcs = map[string]bool{}
	}
	for _, n := range names {
		if n == nil {
			continue
		}
		w.funcs[n.Value] = true
		recursive := false
		syntax.Walk(f.Body, func(x syntax.Node) bool {
			if ce, ok := x.(*syntax.CallExpr); ok && len(ce.Args) > 0 {
				if v := viewWord(ce.Args[0]); v.text == n.Value {
					recursive = true
				}
			}
			return !recursive
		})
		if recursive {
			w.add(bot.Dangerous, "defines a function that calls itself (fork bomb pattern)")
		}
	}
	saved, dirs := w.cwd, len(w.dirs)
	w.stmt(src, f.Body, in{}, cx)
	if w.cwd != saved {
		if w.funcCwd == nil {
			w.funcCwd = map[string]string{}
		}
		for _, n := range names {
			if n != nil {
				w.funcCwd[n.Value] = w.cwd
			}
		}
	}
	w.cwd, w.dirs = saved, w.dirs[:dirs]
}

func (w *walker) call(src string, c *syntax.CallExpr, stdin in, cx ctx) {
	if w.explain {
		saved := w.span
		w.span = nodeSource(src, c)
		defer func() { w.span = saved }()
	}
	for _, a := range c.Assigns {
		w.assign(src, a, cx)
	}
	w.words(src, c.Args, cx)
	if len(c.Args) == 0 {
		return
	}
	// the words live on the walker's word stack until the command is
	// judged (nested commands push above them; a stack that grows moves,
	// and these stay where they are)
	base := len(w.wordStack)
	for range c.Args {
		w.wordStack = append(w.wordStack, word{})
	}
	args := w.wordStack[base:len(w.wordStack):len(w.wordStack)]
	defer func() { w.wordStack = w.wordStack[:base] }()
	static := true
	for i, a := range c.Args {
		args[i] = viewWord(a)
		static = static && args[i].static
	}
	if !static || w.r.scanLiterals(args) {
		w.callWords(c, args)
	}
	w.command(args, stdin, cx)
}

// resolve writes a relative path word as seen from the workspace, after
// the cds before it.
func (w *walker) resolve(t word) word {
	if w.cwd == "" || t.text == "" || t.text[0] == '/' || t.text[0] == '~' || isOption(t.text) {
		return t
	}
	if w.cwd == unknownMark {
		t.text = unknownMark + "/" + t.text
		t.static = false
		return t
	}
	t.text = path.Join(w.cwd, t.text)
	return t
}

// chdir follows cd, pushd and popd.
func (w *walker) chdir(prog string, args []word) {
	var target *word
	for i := 1; i < len(args); i++ {
		if args[i].text == "--" {
			if i+1 < len(args) {
				target = &args[i+1]
			}
			break
		}
		if isOption(args[i].text) && args[i].static {
			continue
		}
		target = &args[i]
		break
	}
	if prog == "popd" {
		if n := len(w.dirs); n > 0 {
			w.cwd, w.dirs = w.dirs[n-1], w.dirs[:n-1]
		} else {
			w.cwd = unknownMark
		}
		return
	}
	next := "~"
	if target != nil {
		t := *target
		switch {
		case t.text == "-" || strings.Contains(t.text, unknownMark) || t.glob:
			next = unknownMark
		default:
			next = w.resolve(t).text
			if next == "." || next == "" {
				next = w.cwd
			}
		}
	} else if prog == "pushd" {
		// pushd with no argument swaps the top two directories
		if n := len(w.dirs); n > 0 {
			next, w.dirs[n-1] = w.dirs[n-1], w.cwd
			w.cwd = next
			return
		}
		return
	}
	if next != unknownMark && next != "" && next[0] != '/' && next[0] != '~' {
		next = path.Clean(next)
		if next == "." {
			next = ""
		}
	}
	if prog == "pushd" {
		w.dirs = append(w.dirs, w.cwd)
	}
	w.cwd = next
}

// read checks a word that is read as a file.
func (w *walker) read(t word) {
	t = w.resolve(t)
	if p, ok := w.r.sensitiveArg(t.text); ok {
		w.add(bot.Dangerous, "touches a sensitive path ("+shorten(p)+")")
	}
}

// write checks a word that is written as a file.
func (w *walker) write(t word, how string) {
	if i := strings.IndexByte(t.text, ':'); i > 0 && !strings.ContainsRune(t.text[:i], '/') {
		t.text = t.text[i+1:] // host:path (scp, rsync): the remote path
		if t.text == "" {
			t.text = "~"
		}
	}
	t = w.resolve(t)
	if t.text == "/" || t.text == "/." {
		w.addID(bot.Dangerous, "writes into the root directory", "core.filesystem:write-root")
		return
	}
	reason, harmless := w.r.writeReason(t.text)
	switch {
	case harmless:
	case reason != "":
		w.add(bot.Dangerous, reason)
	case w.outside(t.text):
		w.addID(bot.Dangerous, "writes a file outside the workspace ("+shorten(t.text)+", "+how+")", "shape:write-outside")
	default:
		w.add(bot.Caution, "writes a file ("+how+")")
	}
}

// command classifies one simple command, given as words.
func (w *walker) command(args []word, stdin in, cx ctx) {
	if len(args) == 0 {
		return
	}
	if w.visit != nil {
		w.visit(args)
	}
	name := args[0]
	if !name.static {
		w.add(bot.Dangerous, "command name comes from a variable or substitution")
		return
	}
	if name.glob {
		w.add(bot.Dangerous, "command name is a wildcard or brace pattern")
		return
	}
	prog := name.text
	if cx.inputArgs && strings.Contains(prog, "{}") {
		w.addID(bot.Dangerous, "the command itself comes from input ("+shorten(prog)+")", "shell:command-from-input")
		return
	}
	if prog == "" {
		w.add(bot.Caution, "empty command name")
		return
	}
	if strings.Contains(prog, "/") {
		dir := strings.TrimSuffix(path.Dir(prog), "/")
		if !w.r.bins[dir] {
			w.script(name, cx, "runs a script or program by path ("+shorten(prog)+"); the classifier cannot see inside")
			return
		}
		prog = path.Base(prog)
	}
	for _, a := range args[1:] {
		if !isOption(a.text) || hasEqSlashTilde(a.text) {
			w.read(a)
		}
	}
	if w.funcs[prog] {
		if d, ok := w.funcCwd[prog]; ok {
			w.cwd = d
		}
		return // its body was classified where it was defined
	}
	if an := analyzers[prog]; an != nil {
		if an(w, args, stdin, cx) {
			return
		}
	}
	switch prog {
	case "cd", "pushd", "popd":
		w.chdir(prog, args)
		return
	case "find":
		w.find(args, cx)
		return
	case "trap":
		if len(args) > 1 {
			w.code(args[1], cx, "trap")
		}
		return
	case "alias":
		w.add(bot.Caution, "defines an alias")
		for _, a := range args[1:] {
			if i := strings.IndexByte(a.text, '='); i > 0 {
				w.code(word{text: a.text[i+1:], static: a.static}, cx, "alias")
			}
		}
		return
	}
	if strings.EqualFold(prog, "find") && prog != "find" {
		w.find(args, cx)
		return
	}
	e, ok := w.r.lookup(prog)
	if !ok && strings.ToLower(prog) != prog {
		// FIND runs find on a case-insensitive file system (macOS)
		if low := strings.ToLower(prog); low != prog {
			if le, lok := w.r.lookup(low); lok {
				if low == "find" {
					w.find(args, cx)
					return
				}
				e, ok, prog = le, true, low
			}
		}
	}
	if shapeFor(ok, e) {
		w.shapes(prog, ok, e, args[1:], stdin)
	}
	if !ok {
		w.unknown(prog, args[1:], cx)
		return
	}
	switch e.kind {
	case kWrapper:
		w.wrapper(prog, e.wrap, args, stdin, cx)
	case kShell:
		w.shellProgram(prog, args, stdin, cx)
	case kInterp:
		w.interpreter(prog, e.interp, args, stdin, cx)
	case kSQL:
		w.sqlClient(prog, e.sql, args, stdin, cx)
	case kKV:
		w.kvClient(prog, e.kv, args, stdin, cx)
	case kProgram:
		w.program(prog, e.prog, args[1:], cx)
	case kDangerous:
		w.addID(bot.Dangerous, reasonOr2(e.reason, prog, " is listed as dangerous"), e.id)
	case kCaution:
		w.add(bot.Caution, prog+" may change files or state")
	case kSafe:
	}
}

func reasonOr(r, def string) string {
	if r != "" {
		return r
	}
	return def
}

// reasonOr2 is reasonOr(r, a+b), joining a and b only when r is empty.
func reasonOr2(r, a, b string) string {
	if r != "" {
		return r
	}
	return a + b
}

// code classifies a word that a shell will run as code.
func (w *walker) code(t word, cx ctx, what string) {
	if !t.static {
		w.add(bot.Dangerous, "runs shell code from a variable or substitution ("+what+")")
		return
	}
	w.shell(t.text, cx.deeper())
}

func (w *walker) wrapper(prog string, wr *Wrapper, args []word, stdin in, cx ctx) {
	if wr.Level != "" {
		w.addID(wr.Level, reasonOr2(wr.Reason, prog, " wraps another command"), wr.id)
	}
	rest := args[1:]
	i := 0
	skip := wr.Skip
	placeholder, ranCode := "", false
	exact := func(t string) bool { return wr.withArg.hasExact(t) || wr.code.hasExact(t) || wr.query.hasExact(t) }
	takes := func(o opt) bool { return wr.withArg.takes(o) || wr.code.takes(o) }
	for i < len(rest) {
		a := rest[i]
		if !a.static {
			if skip > 0 {
				skip--
				i++
				continue
			}
			break
		}
		t := a.text
		if t == "--" {
			i++
			break
		}
		if wr.Assignments && isAssignment(t) {
			if w.r.envDangerous(t[:strings.IndexByte(t, '=')]) {
				w.add(bot.Dangerous, "sets "+t[:strings.IndexByte(t, '=')]+", which changes what commands run or load")
			}
			i++
			continue
		}
		if !isOption(t) || (t[0] == '+' && !exact(t)) {
			if skip > 0 {
				// a positional before the command (timeout's duration,
				// flock's file); options may follow it
				skip--
				i++
				continue
			}
			break
		}
		query := false
		var codeOpt *opt
		next := eachOpt(t, takes, exact, func(o opt) {
			if wr.query.has(&o) {
				query = true
			}
			if contains(wr.Placeholders, o.name) {
				ph := o.value
				if !o.has && o.next && i+1 < len(rest) {
					ph = rest[i+1].text
				}
				if ph == "" {
					ph = "{}"
				}
				placeholder = ph
			}
			for j := range wr.Flags {
				f := &wr.Flags[j]
				if !f.set.has(&o) {
					continue
				}
				value, hasValue := o.value, o.has
				if !hasValue && o.next && i+1 < len(rest) {
					value, hasValue = rest[i+1].text, true
				}
				if len(f.Values) > 0 && (!hasValue || !globAny(f.Values, strings.ToLower(value))) {
					continue
				}
				w.addID(f.Level, reasonOr2(f.Reason, prog, " with these options is dangerous"), f.ID)
			}
			if wr.code.has(&o) {
				oo := o
				codeOpt = &oo
			}
		})
		if query {
			return // command -v: nothing runs
		}
		if codeOpt != nil {
			ranCode = true
			if codeOpt.next {
				if i+1 < len(rest) {
					w.code(rest[i+1], cx, prog+" "+codeOpt.name)
				}
			} else {
				w.code(word{text: codeOpt.value, static: a.static}, cx, prog+" "+codeOpt.name)
			}
		}
		i++
		if next {
			i++
		}
	}
	if wr.NoCommand && !ranCode && len(wr.Default) > 0 {
		// script with no -c starts $SHELL: judge what it runs by default
		cmd := make([]word, 0, len(wr.Default))
		for _, d := range wr.Default {
			cmd = append(cmd, word{text: d, static: true})
		}
		w.command(cmd, stdin, cx.deeper())
		return
	}
	if wr.NoCommand || i > len(rest) {
		return
	}
	cmd := rest[i:]
	if len(cmd) == 0 && wr.InputCommands {
		w.addID(bot.Dangerous, "runs commands read from its input ("+prog+" with no command)", "shell:input-commands")
		return
	}
	if len(cmd) == 0 {
		if len(wr.Default) == 0 {
			return
		}
		for _, d := range wr.Default {
			cmd = append(cmd, word{text: d, static: true})
		}
	}
	sub := cx
	if wr.InputArgs {
		sub.inputArgs = true
	}
	if placeholder != "" && placeholder != "{}" {
		// xargs -I X: every X is replaced by input; write it {} so the
		// rules see input there
		cp := make([]word, len(cmd))
		for j, a := range cmd {
			cp[j] = a
			cp[j].text = strings.ReplaceAll(a.text, placeholder, "{}")
		}
		cmd = cp
	}
	if wr.InputCommands {
		// parallel CMD ::: ARGS: each ARG is pasted into CMD ({} or at
		// the end); with no CMD each ARG is a command
		for j, a := range cmd {
			if !strings.HasPrefix(a.text, ":::") {
				continue
			}
			inputs := cmd[j+1:]
			cmd = cmd[:j]
			if w.parallelInputs(prog, wr, cmd, inputs, stdin, sub) {
				return
			}
			sub.inputArgs = true
			break
		}
		if len(cmd) == 0 {
			w.addID(bot.Dangerous, "runs commands read from its input ("+prog+" with no command)", "shell:input-commands")
			return
		}
	}
	if wr.Cwd != "" {
		saved := w.cwd
		w.cwd = wr.Cwd
		defer func() { w.cwd = saved }()
	}
	if wr.Joins {
		var b strings.Builder
		for j, a := range cmd {
			if !a.static {
				w.add(bot.Dangerous, "runs shell code assembled from variables or substitutions ("+prog+")")
				return
			}
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(a.text)
		}
		joined := b.String()
		if len(cmd) > 1 {
			// the words as given, quoted, too: the runtime joins them
			// (watch sh -c 'git reset --hard' runs sh -c git …), a
			// reader sees them quoted; either may be what was meant
			if q, ok := quoteWords(cmd); ok && q != joined {
				w.shell(q, sub.deeper())
			}
		}
		if wr.InputCommands {
			// parallel runs the joined words; if they do not parse
			// joined, nothing runs — judge the words as given instead
			p := parsers.Get().(*syntax.Parser)
			_, err := p.Parse(strings.NewReader(joined), "")
			parsers.Put(p)
			if err != nil {
				if q, ok := quoteWords(cmd); ok {
					joined = q
				}
			}
		}
		w.shell(joined, sub.deeper())
		return
	}
	w.command(cmd, stdin, sub)
}

func isAssignment(t string) bool {
	i := strings.IndexByte(t, '=')
	if i <= 0 {
		return false
	}
	for j := 0; j < i; j++ {
		c := t[j]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

var downloaders = map[string]bool{"curl": true, "wget": true, "fetch": true, "http": true, "https": true, "aria2c": true, "nc": true, "ncat": true, "socat": true, "ssh": true, "scp": true, "gh": true}
var decoders = map[string]bool{"base64": true, "base32": true, "xxd": true, "openssl": true, "gzip": true, "gunzip": true, "zcat": true, "bzip2": true, "xz": true, "unxz": true, "rev": true, "tr": true, "uudecode": true, "od": true, "printf": true, "echo": true}

// unseenInput says why code arriving on stdin cannot be trusted.
func unseenInput(stdin in, what string) string {
	from := programsIn(stdin.from)
	for i := len(from) - 1; i >= 0; i-- {
		if p := from[i]; downloaders[p] {
			return "downloads and runs code (" + p + " | " + what + ")"
		}
	}
	for i := len(from) - 1; i >= 0; i-- {
		if p := from[i]; decoders[p] {
			return "decodes and runs hidden code (" + p + " | " + what + ")"
		}
	}
	return "pipes input the classifier cannot see into " + what
}

func (w *walker) shellProgram(prog string, args []word, stdin in, cx ctx) {
	opts := &w.r.shellOpts
	cflag := false
	var code *word
	for i := 1; i < len(args); i++ {
		a := args[i]
		t := a.text
		if !a.static && !cflag {
			w.add(bot.Dangerous, "runs a shell with arguments from a variable or substitution")
			return
		}
		if t == "--" || t == "-" {
			if i+1 < len(args) {
				if cflag {
					code = &args[i+1]
				} else {
					w.script(args[i+1], cx, "runs a script file the classifier cannot see ("+shorten(args[i+1].text)+")")
					return
				}
			}
			break
		}
		if t == "--version" || t == "--help" {
			return
		}
		if isOption(t) {
			next := false
			if opts.hasExact(t) || opts.hasLong(t) {
				next = true
			} else if t[0] == '-' && t[1] != '-' {
				if strings.IndexByte(t, 'c') > 0 {
					cflag = true
				}
				for _, ch := range []byte{'o', 'O'} {
					if strings.IndexByte(t, ch) > 0 {
						next = true
					}
				}
			}
			if next {
				i++
			}
			continue
		}
		if cflag {
			code = &args[i]
		} else {
			w.script(args[i], cx, "runs a script file the classifier cannot see ("+shorten(t)+")")
			return
		}
		break
	}
	if code != nil {
		if cx.inputArgs && hasPlaceholder(code.text) {
			w.addID(bot.Dangerous, "pastes its input into shell code ("+prog+" -c '…{}…')", "shell:input-in-code")
		}
		w.code(*code, cx, prog+" -c")
		return
	}
	if cflag && cx.inputArgs {
		w.addID(bot.Dangerous, "runs shell code read from input ("+prog+" -c under xargs)", "shell:code-from-input")
		return
	}
	if cflag {
		return // bash -c with no code: an error, nothing runs
	}
	w.stdinCode(prog, stdin, cx, func(text string) { w.shell(text, cx.deeper()) })
}

// stdinCode handles code a shell or interpreter reads from standard input.
func (w *walker) stdinCode(prog string, stdin in, cx ctx, literal func(string)) {
	switch stdin.kind {
	case inLiteral:
		literal(stdin.text)
	case inFile:
		w.script(word{text: stdin.what, static: true}, cx, "runs a script file the classifier cannot see ("+shorten(prog+" < "+stdin.what)+")")
	case inPipe:
		w.add(bot.Dangerous, unseenInput(stdin, prog))
	default:
		w.add(bot.Dangerous, "starts "+prog+" reading code the classifier cannot see")
	}
}

func (w *walker) interpreter(prog string, ip *Interpreter, args []word, stdin in, cx ctx) {
	exact := func(t string) bool {
		return ip.withArg.hasExact(t) || ip.code.hasExact(t) || ip.module.hasExact(t) || ip.file.hasExact(t)
	}
	takes := func(o opt) bool {
		return ip.withArg.takes(o) || ip.code.takes(o) || ip.module.takes(o) || ip.file.takes(o)
	}
	var code, script *word
	module, info, file := "", false, false
	codeNext, moduleNext, fileNext := false, false, false
	positional := 0
	codeAt, inplace := -1, false
	for i := 1; i < len(args); i++ {
		a := args[i]
		t := a.text
		if codeNext || moduleNext || fileNext {
			switch {
			case codeNext:
				code = &args[i]
				codeAt = i
			case moduleNext:
				module = t
			case fileNext:
				file = true
			}
			codeNext, moduleNext, fileNext = false, false, false
			if code != nil || module != "" {
				break
			}
			continue
		}
		if !a.static && code == nil {
			w.add(bot.Dangerous, "runs "+prog+" with arguments from a variable or substitution")
			return
		}
		if t == "--" {
			if i+1 < len(args) {
				if ip.CodeFirst && !file {
					code = &args[i+1]
				} else {
					script = &args[i+1]
				}
			}
			break
		}
		if isOption(t) && t != "-" {
			if ip.info.has(&opt{name: t}) || ip.info.hasExact(t) {
				info = true
			}
			var skip bool
			skip = eachOpt(t, takes, exact, func(o opt) {
				if ip.bad.has(&o) {
					w.addID(bot.Dangerous, "loads code or edits files in place ("+shorten(prog+" "+o.name)+")", "interp:"+prog+"-"+strings.TrimLeft(o.name, "-"))
				}
				if ip.inplace.has(&o) {
					inplace = true
				}
				switch {
				case ip.code.has(&o):
					if o.next {
						codeNext = true
					} else {
						v := word{text: o.value, static: true}
						code = &v
						codeAt = i
					}
				case ip.module.has(&o):
					if o.next {
						moduleNext = true
					} else {
						module = o.value
					}
				case ip.file.has(&o):
					file = true
					if o.next {
						fileNext = true
					}
				case ip.info.has(&o):
					info = true
				}
			})
			if code != nil || module != "" {
				break
			}
			if skip && !codeNext && !moduleNext && !fileNext {
				i++
			}
			continue
		}
		positional++
		if positional == 1 && ip.Commands[t] != nil {
			w.program(prog+" "+t, ip.Commands[t], args[i+1:], cx)
			return
		}
		if sp := ip.ScriptPrograms[path.Base(t)]; sp != "" && positional == 1 && code == nil {
			// a framework's task runner (php artisan, python manage.py)
			if e, ok := w.r.lookup(sp); ok && e.kind == kProgram {
				w.program(sp, e.prog, args[i+1:], cx)
				return
			}
		}
		if len(ip.ScriptArgs) > 0 && !ip.CodeFirst && !globAny(ip.ScriptArgs, strings.ToLower(t)) {
			continue // a database name or URL, not a script (mongosh app)
		}
		if positional == 1 && len(ip.CodeSubcommands) > 0 {
			// deno eval CODE; other subcommands (deno run x.ts) are
			// followed by a script
			codeNext = contains(ip.CodeSubcommands, t)
			continue
		}
		if ip.CodeFirst && !file {
			code = &args[i]
			codeAt = i
		} else if t == "-" {
			script = nil
		} else {
			script = &args[i]
		}
		break
	}
	switch {
	case code != nil:
		if !code.static {
			w.add(bot.Dangerous, "runs inline "+prog+" code from a variable or substitution")
			return
		}
		w.inlineCode(prog, ip, code.text)
		if inplace && codeAt > 0 {
			for _, a := range args[codeAt+1:] {
				if !isOption(a.text) {
					w.write(a, prog+" -i")
				}
			}
		}
	case module != "":
		w.add(bot.Caution, "runs a module ("+shorten(prog+" -m "+module)+")")
	case file:
		w.add(bot.Dangerous, "runs a script file the classifier cannot see ("+prog+" -f)")
	case script != nil:
		w.script(*script, cx, "runs a script file the classifier cannot see ("+shorten(script.text)+")")
	case info && stdin.kind == inNone:
	default:
		w.stdinCode(prog, stdin, cx, func(text string) { w.inlineCode(prog, ip, text) })
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// inlineCode judges code in another language by the words it uses.
func (w *walker) inlineCode(prog string, ip *Interpreter, code string) {
	words := ip.DangerousCode
	if len(words) == 0 {
		words = w.r.DangerousCode
	}
	norm := normalizeCode(code)
	if ip.CodeFirst && awkRedirects(code) {
		w.addID(bot.Dangerous, "inline "+prog+" code writes a file or runs a command (print > / | )", "interp:awk-redirect")
		return
	}
	for _, d := range words {
		if strings.Contains(code, d) || strings.Contains(norm, d) {
			w.addID(bot.Dangerous, "inline "+prog+" code uses "+quote(d), "interp:dangerous-code")
			return
		}
	}
	for _, b := range []string{"/bin/", "/sbin/"} {
		if strings.Contains(norm, b) {
			w.addID(bot.Dangerous, "inline "+prog+" code names a program by path", "interp:program-path")
			return
		}
	}
	for _, s := range w.r.sensWords {
		if strings.Contains(code, s) {
			w.add(bot.Dangerous, "inline "+prog+" code names a sensitive path ("+s+")")
			return
		}
	}
	level := ip.Harmless
	if level == "" {
		level = bot.Caution
	}
	w.add(level, "runs inline "+prog+" code")
}

func (w *walker) find(args []word, cx ctx) {
	if cx.inputArgs {
		w.addID(bot.Dangerous, "find gets more arguments from input, which may be -delete or -exec", "core.filesystem:find-input-args")
	}
	var roots []word
	i := 1
	for ; i < len(args); i++ {
		t := args[i].text
		if strings.HasPrefix(t, "-") || t == "(" || t == "!" {
			if t == "-H" || t == "-L" || t == "-P" {
				continue
			}
			break
		}
		roots = append(roots, args[i])
	}
	// {} in -exec is a file found under the roots: write it under the
	// widest root, so rm -rf {} under . stays in the workspace
	found := "{}"
	if len(roots) == 0 {
		found = "./{}"
	}
	// (the roots themselves are found too: find . -exec rm -rf {} is rm -rf .)
	widest := -1
	for _, r := range roots {
		if d := deleteTarget(w.resolve(r)); d > widest {
			widest = d
			found = w.resolve(r).text
			if d == 1 {
				found = "{}"
			}
		}
	}
	for ; i < len(args); i++ {
		switch args[i].text {
		case "-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-wholename", "-iwholename", "-lname", "-ilname",
			"-gid", "-uid", "-inum", "-samefile", "-newer", "-anewer", "-cnewer", "-perm", "-size", "-type", "-xtype",
			"-user", "-group", "-mtime", "-atime", "-ctime", "-mmin", "-amin", "-cmin", "-links", "-maxdepth", "-mindepth",
			"-fstype", "-context", "-printf", "-used", "-regextype", "-files0-from", "-newerXY":
			i++ // its value is not an action (find . -name -delete)
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].text != ";" && args[j].text != "+" {
				j++
			}
			saved := w.cwd
			inner := make([]word, j-i-1)
			copy(inner, args[i+1:j])
			if strings.HasSuffix(args[i].text, "dir") {
				w.cwd = unknownMark // runs in each found file's directory
			} else {
				for k := range inner {
					if inner[k].text == "{}" {
						inner[k].text = found
					}
				}
			}
			if len(inner) > 0 {
				switch path.Base(inner[0].text) {
				case "rm", "unlink", "shred":
					w.addID(bot.Dangerous, "deletes every file found, with no list to review (find -exec rm)", "core.filesystem:find-exec-rm")
				}
			}
			w.command(inner, in{}, ctx{depth: cx.depth, inputArgs: true})
			w.cwd = saved
			i = j
		case "-delete":
			broad := len(roots) == 0 && cx.inputArgs
			for _, r := range roots {
				if r.text != "." && r.text != "./" && deleteTarget(r) != 0 {
					broad = true
				}
			}
			if broad {
				w.addID(bot.Dangerous, "find -delete under a root, home, wildcard or outside-workspace path", "core.filesystem:find-delete-broad")
			} else {
				w.addID(bot.Dangerous, "deletes every file found, with no list to review (find -delete)", "core.filesystem:find-delete")
			}
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(args) {
				w.write(args[i+1], "find "+args[i].text)
			}
		}
	}
}

// hasEqSlashTilde is strings.ContainsAny(s, "=/~") in one pass.
func hasEqSlashTilde(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '=', '/', '~':
			return true
		}
	}
	return false
}

// script judges running a script file (./run.sh, bash x.sh, python3
// x.py). The classifier cannot see inside it. One in the workspace is the
// agent's own file, like a Makefile or a test: caution, as make and go
// test are. One outside the workspace, above it, named by a variable, or
// in the home directory is dangerous.
func (w *walker) script(t word, cx ctx, reason string) {
	p := w.resolve(t).text
	if !t.static || cx.inputArgs || strings.Contains(p, "{") || p == "" || strings.HasPrefix(p, "-") || strings.HasPrefix(p, "!") || w.isShellName(path.Base(p)) || strings.Contains(p, unknownMark) || p == ".." || strings.HasPrefix(p, "../") ||
		strings.Contains(p, "/../") || w.outside(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") {
		w.add(bot.Dangerous, reason)
		return
	}
	w.addID(bot.Caution, reason+"; it is in the workspace, which the agent can edit", "shell:workspace-script")
}
