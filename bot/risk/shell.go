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
