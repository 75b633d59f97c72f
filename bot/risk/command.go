package risk

// The judgement of one simple command: what it is (a function, a
// program a pack names, a wrapper, a shell, an interpreter, an unknown
// program), the files it reads and writes, and scripts it runs.

import (
	"path"
	"strings"

	"github.com/signoff/signoff/bot"
)

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
	remote := false
	if i := strings.IndexByte(t.text, ':'); i > 0 && !strings.ContainsRune(t.text[:i], '/') {
		t.text = t.text[i+1:] // host:path (scp, rsync): the remote path
		if t.text == "" {
			t.text = "~"
		}
		remote = true // its dotfiles and system paths count; "outside the workspace" does not
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
	case !remote && w.outside(t.text):
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
