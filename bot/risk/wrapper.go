package risk

// Wrappers: programs that run another command (sudo, env, xargs,
// timeout, ssh …); the command they run is judged as if typed.

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/signoff/signoff/bot"
)

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
	if wr.WritesArgs && i < len(rest) {
		// script … FILE: the operands are files it writes
		for _, a := range rest[i:] {
			if !isOption(a.text) {
				w.write(a, prog)
			}
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
