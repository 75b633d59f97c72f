package risk

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// fastParse reads the commonest shapes of shell code without the parser
// (which allocates kilobytes for any input): one line of simple commands
// of plain words, simple redirections and assignments, joined by |, &&,
// || and ;. It builds the same syntax
// tree the parser builds — node for node, positions included (the tests
// and FuzzFastParse hold it to that) — in nodes kept with the pooled
// walker, so the walk that follows is the parser's walk. Anything else
// (expansions, here-documents, brackets, reserved words, arrays,
// escapes, comments, newlines, tabs, non-ASCII) reports false, and the
// parser reads the code.
//
// The nodes live until the walker is reset: nested code (bash -c) takes
// new ones, and nodes handed out are never reused within one command.
func (w *walker) fastParse(src string) (*syntax.File, bool) {
	if len(src) > 512 {
		return nil, false
	}
	a := &w.nodes
	a.used = true
	mark := a.mark()
	fp := fastParser{a: a, src: src}
	f, ok := fp.file()
	if !ok {
		a.release(mark)
		return nil, false
	}
	return f, true
}

type fastParser struct {
	a   *nodeArena
	src string
	i   int
}

func pos(off int) syntax.Pos { return syntax.NewPos(uint(off), 1, uint(off)+1) }

func (p *fastParser) spaces() {
	for p.i < len(p.src) && p.src[p.i] == ' ' {
		p.i++
	}
}

// file: list (';' list)* [';']
func (p *fastParser) file() (*syntax.File, bool) {
	var stmts [8]*syntax.Stmt
	n := 0
	p.spaces()
	for p.i < len(p.src) {
		if n == len(stmts) {
			return nil, false
		}
		s, ok := p.andOr()
		if !ok {
			return nil, false
		}
		stmts[n] = s
		n++
		p.spaces()
		if p.i < len(p.src) && p.src[p.i] == ';' {
			if p.i+1 < len(p.src) && p.src[p.i+1] == ';' {
				return nil, false // ;; belongs to case
			}
			s.Semicolon = pos(p.i)
			p.i++
			p.spaces()
			continue
		}
		if p.i < len(p.src) {
			return nil, false // statements must be separated
		}
	}
	if n == 0 {
		return nil, false
	}
	f := p.a.file()
	f.Stmts = p.a.stmtList(stmts[:n])
	return f, true
}

// andOr: pipeline (('&&' | '||') pipeline)*, left-associative.
func (p *fastParser) andOr() (*syntax.Stmt, bool) {
	s, ok := p.pipeline()
	if !ok {
		return nil, false
	}
	for {
		p.spaces()
		if p.i+1 >= len(p.src) {
			return s, true
		}
		var op syntax.BinCmdOperator
		switch p.src[p.i : p.i+2] {
		case "&&":
			op = syntax.AndStmt
		case "||":
			op = syntax.OrStmt
		default:
			return s, true
		}
		opPos := p.i
		p.i += 2
		p.spaces()
		y, ok := p.pipeline()
		if !ok {
			return nil, false
		}
		b := p.a.binary()
		*b = syntax.BinaryCmd{OpPos: pos(opPos), Op: op, X: s, Y: y}
		outer := p.a.stmt()
		outer.Position = s.Position
		outer.Cmd = b
		s = outer
	}
}

// pipeline: command ('|' command)*, left-associative.
func (p *fastParser) pipeline() (*syntax.Stmt, bool) {
	s, ok := p.command()
	if !ok {
		return nil, false
	}
	for {
		p.spaces()
		if p.i >= len(p.src) || p.src[p.i] != '|' {
			return s, true
		}
		if p.i+1 < len(p.src) && (p.src[p.i+1] == '|' || p.src[p.i+1] == '&') {
			return s, true // || is for andOr; |& is not read here
		}
		opPos := p.i
		p.i++
		p.spaces()
		y, ok := p.command()
		if !ok {
			return nil, false
		}
		b := p.a.binary()
		*b = syntax.BinaryCmd{OpPos: pos(opPos), Op: syntax.Pipe, X: s, Y: y}
		outer := p.a.stmt()
		outer.Position = s.Position
		outer.Cmd = b
		s = outer
	}
}

// command: assignments, then words, and redirections (> >> < >& &> &>>,
// with a file descriptor number before the first four) anywhere; at least
// one word or assignment; the first word neither a reserved word nor
// holding '='.
func (p *fastParser) command() (*syntax.Stmt, bool) {
	start := p.i
	var args [16]*syntax.Word
	var redirs [4]*syntax.Redirect
	var assigns [4]*syntax.Assign
	n, nr, na := 0, 0, 0
	for p.i < len(p.src) {
		c := p.src[p.i]
		if c == ' ' {
			p.spaces()
			continue
		}
		if c == '|' || c == ';' || c == '&' && !(p.i+1 < len(p.src) && p.src[p.i+1] == '>') {
			break
		}
		if nr == len(redirs) || n == len(args) || na == len(assigns) {
			return nil, false
		}
		if n == 0 {
			if as, ok, isAssign := p.assign(); isAssign {
				if !ok {
					return nil, false
				}
				assigns[na] = as
				na++
				continue
			}
		}
		if r, ok, isRedir := p.redirect(); isRedir {
			if !ok {
				return nil, false
			}
			redirs[nr] = r
			nr++
			continue
		}
		wd, ok := p.word(n == 0)
		if !ok {
			return nil, false
		}
		args[n] = wd
		n++
	}
	if n == 0 && na == 0 {
		return nil, false
	}
	ce := p.a.call()
	if n > 0 {
		ce.Args = p.a.wordList(args[:n])
	}
	if na > 0 {
		ce.Assigns = p.a.assignList(assigns[:na])
	}
	s := p.a.stmt()
	s.Position = pos(start)
	s.Cmd = ce
	if nr > 0 {
		s.Redirs = p.a.redirList(redirs[:nr])
	}
	return s, true
}

// assign reads NAME=VALUE or NAME+=VALUE at p.i, if one starts there
// (isAssign); VALUE is a word or nothing.
func (p *fastParser) assign() (as *syntax.Assign, ok, isAssign bool) {
	i := p.i
	for i < len(p.src) {
		c := p.src[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > p.i && c >= '0' && c <= '9' {
			i++
			continue
		}
		break
	}
	nameEnd := i
	if nameEnd == p.i {
		return nil, false, false
	}
	app := false
	if i < len(p.src) && p.src[i] == '+' {
		app = true
		i++
	}
	if i >= len(p.src) || p.src[i] != '=' {
		return nil, false, false
	}
	as = p.a.assign()
	name := p.a.lit()
	*name = syntax.Lit{ValuePos: pos(p.i), ValueEnd: pos(nameEnd), Value: p.src[p.i:nameEnd]}
	as.Name, as.Append = name, app
	p.i = i + 1
	if p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ', '|', '&', ';', '<', '>':
		default:
			wd, ok := p.word(false)
			if !ok {
				return nil, false, true
			}
			as.Value = wd
		}
	}
	return as, true, true
}

// redirect reads a redirection at p.i, if one starts there (isRedir).
func (p *fastParser) redirect() (r *syntax.Redirect, ok, isRedir bool) {
	i := p.i
	for i < len(p.src) && p.src[i] >= '0' && p.src[i] <= '9' {
		i++
	}
	if i == len(p.src) {
		return nil, false, false
	}
	numEnd := i
	var op syntax.RedirOperator
	switch c := p.src[i]; {
	case c == '&' && numEnd == p.i && strings.HasPrefix(p.src[i:], "&>>"):
		op, i = syntax.AppAll, i+3
	case c == '&' && numEnd == p.i && strings.HasPrefix(p.src[i:], "&>"):
		op, i = syntax.RdrAll, i+2
	case strings.HasPrefix(p.src[i:], ">>"):
		op, i = syntax.AppOut, i+2
	case strings.HasPrefix(p.src[i:], ">&"):
		op, i = syntax.DplOut, i+2
	case c == '>':
		op, i = syntax.RdrOut, i+1
	case c == '<':
		op, i = syntax.RdrIn, i+1
	default:
		return nil, false, false // digits that are a word
	}
	if i < len(p.src) && (p.src[i] == '<' || p.src[i] == '>' || p.src[i] == '&' || p.src[i] == '|') {
		return nil, false, true // <<, <<<, <>, <&, >|, >>& …: the parser's
	}
	r = p.a.redir()
	r.Op, r.OpPos = op, pos(numEnd)
	if numEnd > p.i {
		l := p.a.lit()
		*l = syntax.Lit{ValuePos: pos(p.i), ValueEnd: pos(numEnd), Value: p.src[p.i:numEnd]}
		r.N = l
	}
	p.i = i
	p.spaces()
	wd, ok := p.word(false)
	if !ok {
		return nil, false, true
	}
	r.Word = wd
	return r, true, true
}

// word reads one word: unquoted runs of plain bytes (and ~), '…' and "…"
// with printable ASCII inside ("…" without $ ` \ !).
func (p *fastParser) word(first bool) (*syntax.Word, bool) {
	start := p.i
	var parts [8]syntax.WordPart
	n := 0
	for p.i < len(p.src) {
		c := p.src[p.i]
		if c == ' ' || c == '|' || c == '&' || c == ';' || c == '<' || c == '>' {
			break
		}
		if n == len(parts) {
			return nil, false
		}
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(p.src[p.i+1:], c)
			if j < 0 {
				return nil, false
			}
			q := p.src[p.i+1 : p.i+1+j]
			for k := 0; k < len(q); k++ {
				x := q[k]
				if x < 0x20 || x > 0x7e || c == '"' && (x == '$' || x == '`' || x == '\\' || x == '!') {
					return nil, false
				}
			}
			left, right := p.i, p.i+1+j
			if c == '\'' {
				sq := p.a.sgl()
				*sq = syntax.SglQuoted{Left: pos(left), Right: pos(right), Value: q}
				parts[n] = sq
			} else {
				dq := p.a.dbl()
				*dq = syntax.DblQuoted{Left: pos(left), Right: pos(right)}
				if len(q) > 0 {
					l := p.a.lit()
					*l = syntax.Lit{ValuePos: pos(left + 1), ValueEnd: pos(right), Value: q}
					dq.Parts = p.a.partList1(l)
				}
				parts[n] = dq
			}
			n++
			p.i = right + 1
		case fastLit[c]:
			j := p.i
			for j < len(p.src) && fastLit[p.src[j]] {
				j++
			}
			l := p.a.lit()
			*l = syntax.Lit{ValuePos: pos(p.i), ValueEnd: pos(j), Value: p.src[p.i:j]}
			parts[n] = l
			n++
			p.i = j
		default:
			return nil, false
		}
	}
	if n == 0 {
		return nil, false
	}
	if p.i < len(p.src) && (p.src[p.i] == '<' || p.src[p.i] == '>') && p.src[start] == '{' {
		return nil, false // {fd}>file names a descriptor variable
	}
	if first {
		text := p.src[start:p.i]
		if strings.IndexByte(text, '=') >= 0 || isReserved(text) {
			return nil, false
		}
	}
	wd := p.a.word()
	wd.Parts = p.a.partList(parts[:n])
	return wd, true
}

// fastLit are the bytes of unquoted literal text fastParse reads: those
// plainWords reads, ~, and braces (literal text to the parser; a lone {
// or } first is a reserved word, and refused).
var fastLit = func() (t [256]bool) {
	for c := range plainClass {
		k := plainClass[c]
		t[c] = k == plainWordByte || k == plainGlobByte
	}
	t['~'], t['{'], t['}'] = true, true, true
	return t
}()

// nodeArena hands out syntax nodes from chunks kept with a pooled walker.
// A chunk that fills is replaced, never grown, so nodes handed out stay
// where they are.
type nodeArena struct {
	files   []syntax.File
	stmts   []syntax.Stmt
	bins    []syntax.BinaryCmd
	calls   []syntax.CallExpr
	words   []syntax.Word
	lits    []syntax.Lit
	sgls    []syntax.SglQuoted
	dbls    []syntax.DblQuoted
	stmtPtr []*syntax.Stmt
	wordPtr []*syntax.Word
	parts   []syntax.WordPart
	redirs  []syntax.Redirect
	redirP  []*syntax.Redirect
	assigns []syntax.Assign
	assignP []*syntax.Assign
	used    bool // nodes may have been taken since the last reset
}

// arenaMark is where an arena's chunks were filled to.
type arenaMark [15]int

func (a *nodeArena) mark() arenaMark {
	return arenaMark{len(a.files), len(a.stmts), len(a.bins), len(a.calls), len(a.words), len(a.lits), len(a.sgls), len(a.dbls), len(a.stmtPtr), len(a.wordPtr), len(a.parts), len(a.redirs), len(a.redirP), len(a.assigns), len(a.assignP)}
}

// release gives back what a failed parse took (only from the chunks it
// ended in; a replaced chunk's nodes are simply left).
func (a *nodeArena) release(m arenaMark) {
	a.files = a.files[:min(m[0], len(a.files))]
	a.stmts = a.stmts[:min(m[1], len(a.stmts))]
	a.bins = a.bins[:min(m[2], len(a.bins))]
	a.calls = a.calls[:min(m[3], len(a.calls))]
	a.words = a.words[:min(m[4], len(a.words))]
	a.lits = a.lits[:min(m[5], len(a.lits))]
	a.sgls = a.sgls[:min(m[6], len(a.sgls))]
	a.dbls = a.dbls[:min(m[7], len(a.dbls))]
	a.stmtPtr = a.stmtPtr[:min(m[8], len(a.stmtPtr))]
	a.wordPtr = a.wordPtr[:min(m[9], len(a.wordPtr))]
	a.parts = a.parts[:min(m[10], len(a.parts))]
	a.redirs = a.redirs[:min(m[11], len(a.redirs))]
	a.redirP = a.redirP[:min(m[12], len(a.redirP))]
	a.assigns = a.assigns[:min(m[13], len(a.assigns))]
	a.assignP = a.assignP[:min(m[14], len(a.assignP))]
}

// reset makes every node free again (a new command).
func (a *nodeArena) reset() {
	if a.used {
		a.release(arenaMark{})
		a.used = false
	}
}

// take returns the next zeroed element of a chunk, replacing a full chunk.
func take[T any](chunk *[]T, size int) *T {
	c := *chunk
	if len(c) == cap(c) {
		c = make([]T, 0, size)
	}
	c = c[:len(c)+1]
	var zero T
	c[len(c)-1] = zero
	*chunk = c
	return &c[len(c)-1]
}

// takeN returns n zeroed elements of a chunk, capacity n (an append to
// them copies).
func takeN[T any](chunk *[]T, n, size int) []T {
	c := *chunk
	if cap(c)-len(c) < n {
		c = make([]T, 0, max(size, n))
	}
	l := len(c)
	c = c[:l+n]
	clear(c[l:])
	*chunk = c
	return c[l : l+n : l+n]
}

func (a *nodeArena) file() *syntax.File        { return take(&a.files, 8) }
func (a *nodeArena) stmt() *syntax.Stmt        { return take(&a.stmts, 32) }
func (a *nodeArena) binary() *syntax.BinaryCmd { return take(&a.bins, 16) }
func (a *nodeArena) call() *syntax.CallExpr    { return take(&a.calls, 16) }
func (a *nodeArena) word() *syntax.Word        { return take(&a.words, 64) }
func (a *nodeArena) lit() *syntax.Lit          { return take(&a.lits, 64) }
func (a *nodeArena) sgl() *syntax.SglQuoted    { return take(&a.sgls, 16) }
func (a *nodeArena) dbl() *syntax.DblQuoted    { return take(&a.dbls, 16) }

func (a *nodeArena) redir() *syntax.Redirect { return take(&a.redirs, 16) }
func (a *nodeArena) assign() *syntax.Assign  { return take(&a.assigns, 16) }

func (a *nodeArena) assignList(as []*syntax.Assign) []*syntax.Assign {
	out := takeN(&a.assignP, len(as), 16)
	copy(out, as)
	return out
}

func (a *nodeArena) redirList(rs []*syntax.Redirect) []*syntax.Redirect {
	out := takeN(&a.redirP, len(rs), 16)
	copy(out, rs)
	return out
}

func (a *nodeArena) stmtList(s []*syntax.Stmt) []*syntax.Stmt {
	out := takeN(&a.stmtPtr, len(s), 32)
	copy(out, s)
	return out
}

func (a *nodeArena) wordList(ws []*syntax.Word) []*syntax.Word {
	out := takeN(&a.wordPtr, len(ws), 64)
	copy(out, ws)
	return out
}

func (a *nodeArena) partList(ps []syntax.WordPart) []syntax.WordPart {
	out := takeN(&a.parts, len(ps), 64)
	copy(out, ps)
	return out
}

func (a *nodeArena) partList1(p syntax.WordPart) []syntax.WordPart {
	out := takeN(&a.parts, 1, 64)
	out[0] = p
	return out
}
