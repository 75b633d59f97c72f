package risk

import (
	"path"
	"strings"

	"github.com/signoff/signoff/bot"
)

// Shapes: what a command's words say it does, whoever the program is.
// A program no pack names, or a pack's rule that does not mention an
// option, still shows by its arguments that it starts a shell, runs a
// command string, loads a library, writes a file or sends one away.
// The option names are data (generic: in core.yaml); the shapes are here.

// shapeFor reports whether the shapes judge a command of this kind:
// shells, interpreters, wrappers and database clients read their own
// arguments as code already.
func shapeFor(known bool, e entry) bool {
	if !known {
		return true
	}
	switch e.kind {
	case kProgram, kCaution, kSafe:
		return true
	}
	return false
}

// shapes judges one command's arguments (args without the program name).
func (w *walker) shapes(prog string, known bool, e entry, args []word, stdin in) {
	g := &w.r.Generic
	positional := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		t := a.text
		if t == "--" {
			if !known {
				w.shellWords(prog, args[i+1:])
			}
			break
		}
		if !isOption(t) {
			if known && e.kind != kSafe && strings.ContainsRune(t, '/') && w.isShellName(path.Base(t)) {
				// npm exec /bin/sh, service ../../bin/sh
				w.addID(bot.Dangerous, "hands a shell or interpreter to "+shorten(prog)+" ("+shorten(t)+")", "shape:shell-operand")
			}
			if !known {
				if positional == 0 && g.shellSub[strings.ToLower(t)] {
					w.addID(bot.Dangerous, "starts a shell or runs a command ("+shorten(prog+" "+t)+")", "shape:shell-subcommand")
				}
				w.shellWord(prog, t, true)
			}
			positional++
			continue
		}
		if i+1 < len(args) && isVCSAlias(args[i+1].text) || isVCSAlias(t) {
			// --config alias.x='!sh', -c alias.x=!sh: any VCS's shell alias
			w.addID(bot.Dangerous, "sets an alias that runs a shell command ("+shorten(prog)+")", "shape:exec-option")
		}
		name, value, has := strings.Cut(t, "=")
		next := ""
		if i+1 < len(args) {
			next = args[i+1].text
		}
		if !known && (strings.Contains(strings.ToLower(next), "command=") || strings.Contains(strings.ToLower(value), "command=")) {
			// -o ssh_command=PROG, --opt=proxycommand=…: a program to run
			w.addID(bot.Dangerous, "an option names a command to run ("+shorten(prog+" "+t)+")", "shape:exec-option")
		}
		if has {
			w.shellWord(prog, value, !known)
		} else if !strings.HasPrefix(t, "--") && len(t) > 2 && !g.exec.hasExact(t) && !g.lib.hasExact(t) && !g.output.hasExact(t) {
			// -H/bin/sh, -e'code': a short option with its value attached
			if strings.ContainsRune(t, '/') || !known {
				w.shellWord(prog, t[2:], !known)
			}
			if g.code.short[t[1]] && !known && looksLikeCode(t[2:]) {
				w.addID(bot.Dangerous, "an option runs code ("+shorten(prog+" "+t)+")", "shape:exec-option")
			}
		}
		switch {
		case optIn(&g.exec, name):
			w.addID(bot.Dangerous, "an option runs a program or code ("+shorten(prog+" "+name)+")", "shape:exec-option")
		case optIn(&g.lib, name):
			w.addID(bot.Dangerous, "an option loads a library or plugin ("+shorten(prog+" "+name)+")", "shape:library-load")
		case optIn(&g.output, name) && (!known || has || strings.HasPrefix(name, "--") || takesValue(e, t)):
			// a known program's short option writes only if its rule says
			// the option takes a value: ls -o and du -o name no file
			v := value
			if !has {
				v = next
				if i+1 < len(args) {
					i++
				}
			}
			if v != "" && v != "-" {
				w.optionWrite(prog, name, word{text: v, static: true}, !known)
			}
		case !known && optIn(&g.code, name) && (has && looksLikeCode(value) || !has && looksLikeCode(next)):
			w.addID(bot.Dangerous, "an option runs code ("+shorten(prog+" "+t)+")", "shape:exec-option")
		}
	}
	if stdin.kind == inFile && g.net[prog] {
		if _, harmless := w.r.writeReason(stdin.what); !harmless {
			w.addID(bot.Dangerous, "sends a local file to another host ("+shorten(prog+" < "+stdin.what)+")", "shape:upload")
		}
	}
	if g.copy[prog] {
		w.remoteCopy(prog, args)
	}
	if g.installers[prog] {
		for _, a := range args {
			if !isOption(a.text) && globAny(g.LocalPackages, strings.ToLower(path.Base(a.text))) {
				w.addID(bot.Dangerous, "installs a package file, whose install scripts run as root ("+shorten(a.text)+")", "shape:local-package")
				break
			}
		}
	}
}

// optIn reports whether an option word's name (before any =) is in s.
func optIn(s *optSet, name string) bool {
	if strings.HasPrefix(name, "--") {
		return s.hasLong(name)
	}
	if len(name) == 2 {
		return s.short[name[1]]
	}
	return s.hasExact(name)
}

// looksLikeCode reports whether an option's value reads as code or a
// command line rather than a name: it has spaces, separators, calls or
// substitutions.
func looksLikeCode(v string) bool {
	return v != "" && strings.ContainsAny(v, " \t;|&()`${}\n")
}

// shellWord judges a word handed to a program: a path to a shell or an
// interpreter anywhere in it (--on-event=/bin/sh, -H/bin/sh) starts it;
// with bare, a word that is a shell's or interpreter's name does too.
func (w *walker) shellWord(prog, t string, bare bool) {
	if t == "" {
		return
	}
	if bare {
		first, _, _ := strings.Cut(strings.TrimSpace(t), " ")
		if w.isShellName(first) {
			w.addID(bot.Dangerous, "hands a shell or interpreter to "+shorten(prog)+" ("+shorten(t)+")", "shape:shell-operand")
			return
		}
	}
	for _, tok := range strings.FieldsFunc(t, func(r rune) bool {
		return strings.ContainsRune(" \t\n=,:;'\"()|&<>{}#%!", r)
	}) {
		if strings.ContainsRune(tok, '/') && w.isShellName(path.Base(tok)) {
			w.addID(bot.Dangerous, "hands a shell or interpreter to "+shorten(prog)+" ("+shorten(tok)+")", "shape:shell-operand")
			return
		}
	}
}

// shellWords judges what follows -- for a program no pack names: a
// command it will run, if it starts with a shell or interpreter.
func (w *walker) shellWords(prog string, rest []word) {
	if len(rest) > 0 {
		w.shellWord(prog, rest[0].text, true)
	}
}

func (w *walker) isShellName(n string) bool {
	if n == "" {
		return false
	}
	if w.r.Generic.shells[n] {
		return true
	}
	if e, ok := w.r.lookup(n); ok && (e.kind == kShell || e.kind == kInterp) {
		return true
	}
	return false
}

// optionWrite judges a file an option writes (-o FILE, --output=FILE) as
// a redirection's: a guard file, dotfile, system or sensitive path is
// dangerous, and so is any path outside the workspace that is not
// scratch. For a program no pack names, a write inside the workspace is
// caution, as any write is.
func (w *walker) optionWrite(prog, opt string, t word, full bool) {
	t = w.resolve(t)
	reason, harmless := w.r.writeReason(t.text)
	switch {
	case harmless:
	case reason != "":
		w.add(bot.Dangerous, reason)
	case w.outside(t.text):
		w.addID(bot.Dangerous, "writes a file outside the workspace ("+shorten(prog+" "+opt+" "+t.text)+")", "shape:write-outside")
	case full:
		w.add(bot.Caution, "writes a file ("+shorten(prog+" "+opt)+")")
	}
}

// outside reports whether a path written is outside the workspace and
// not scratch space: absolute, in the home directory, or above it.
func (w *walker) outside(p string) bool {
	if p == "" {
		return false
	}
	if !(strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || p == ".." || strings.HasPrefix(p, "../")) {
		if w.cwd == "" || !(strings.HasPrefix(w.cwd, "/") || strings.HasPrefix(w.cwd, "~") || strings.HasPrefix(w.cwd, "..")) {
			return false
		}
		p = path.Join(w.cwd, p)
	}
	if strings.Contains(p, unknownMark) {
		return true
	}
	var buf [16]string
	pp := splitPathBuf(p, buf[:0])
	return !anyMatch(w.r.scratch, &pp)
}

// remoteCopy: a copying program (scp, rsync …) whose destination is on
// another host and whose sources are local sends files away.
func (w *walker) remoteCopy(prog string, args []word) {
	var pos []string
	for _, a := range args {
		if !isOption(a.text) {
			pos = append(pos, a.text)
		}
	}
	if len(pos) < 2 || !isRemote(pos[len(pos)-1]) {
		return
	}
	for _, s := range pos[:len(pos)-1] {
		if !isRemote(s) {
			w.addID(bot.Dangerous, "sends a local file to another host ("+shorten(prog+" "+s)+")", "shape:upload")
			return
		}
	}
}

// isRemote: host:path or user@host:path (scp, rsync), rsync://.
func isRemote(s string) bool {
	if strings.Contains(s, "://") {
		return true
	}
	i := strings.IndexByte(s, ':')
	return i > 0 && !strings.ContainsRune(s[:i], '/')
}

// isVCSAlias: alias.NAME=!command (git, hg, and their kin).
func isVCSAlias(t string) bool {
	i := strings.Index(strings.ToLower(t), "alias.")
	return i >= 0 && strings.Contains(t[i:], "=!")
}

// takesValue: the pack's rule for a known program says option t takes
// the next word as its value.
func takesValue(e entry, t string) bool {
	if e.prog == nil {
		return false
	}
	if e.prog.withArg.hasExact(t) {
		return true
	}
	return len(t) == 2 && e.prog.withArg.short[t[1]]
}
