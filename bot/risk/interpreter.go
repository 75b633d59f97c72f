package risk

// Code handed to shells and interpreters: -c strings, script files,
// here-documents and what is piped into them.

import (
	"path"
	"strings"

	"github.com/signoff/signoff/bot"
)

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
