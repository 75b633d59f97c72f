package risk

// find: its tests are harmless, its actions (-exec, -delete, -fprint)
// are judged like the commands and writes they are.

import (
	"path"
	"strings"

	"github.com/signoff/signoff/bot"
)

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
