package risk

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/signoff/signoff/bot"
)

// ToolCall classifies an agent's tool call: the tool's name and its JSON
// input as the agent sent it (Claude Code's Bash {command}, Read
// {file_path}, Write/Edit {file_path}, Glob/Grep {path, pattern}, WebFetch
// {url} …), with cwd the workspace the agent works in ("" when unknown:
// relative paths are then taken to be inside it). Input that is not a JSON
// object, or lacks the field the tool needs, is dangerous.
func (c *Classifier) ToolCall(tool string, input json.RawMessage, cwd string) bot.Assessment {
	if c.bad != "" {
		return dangerous(c.bad)
	}
	in := bytes.TrimSpace(input)
	if len(in) == 0 {
		in = []byte("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(in, &fields); err != nil {
		if !json.Valid(in) {
			return dangerous("tool input is not valid JSON: " + shortErr(err))
		}
		return dangerous("tool input is not a JSON object")
	}
	t := c.rules.tool(tool)
	if t == nil {
		reason := c.rules.UnknownTool.Reason
		if reason == "" {
			reason = "unknown tool"
		}
		return bot.Assessment{Level: c.rules.UnknownTool.Level, Reasons: []string{reason + " (" + shorten(tool) + ")"}}
	}
	var v verdict
	switch {
	case t.Patch != "":
		patch, ok, reason := stringField(fields, t.Patch)
		if !ok && reason == "" {
			patch, ok, reason = stringField(fields, "patch")
		}
		if reason != "" {
			return dangerous(tool + " input: " + reason)
		}
		if !ok {
			return dangerous(tool + " input has no " + t.Patch)
		}
		c.patchPaths(&v, patch, cwd)
	case t.Command != "":
		cmd, reason := commandField(fields, t.Command)
		if reason != "" {
			return dangerous(tool + " input: " + reason)
		}
		return c.Command(cmd)
	case t.Reads != "":
		p, ok, reason := stringField(fields, t.Reads)
		if reason != "" {
			return dangerous(tool + " input: " + reason)
		}
		if !ok && !t.Optional && len(t.Also) == 0 {
			return dangerous(tool + " input has no " + t.Reads)
		}
		if ok {
			c.readPath(&v, p, cwd)
		} else {
			v.add(bot.Safe, "")
		}
		for _, f := range t.Also {
			p, ok, reason := stringField(fields, f)
			if reason != "" {
				return dangerous(tool + " input: " + reason)
			}
			if ok {
				c.readPath(&v, p, cwd)
			}
		}
	case t.Writes != "":
		p, ok, reason := stringField(fields, t.Writes)
		if reason != "" {
			return dangerous(tool + " input: " + reason)
		}
		if !ok || p == "" {
			return dangerous(tool + " input has no " + t.Writes)
		}
		c.writePath(&v, p, cwd)
	default:
		level := t.Level
		if level == "" {
			level = bot.Caution
		}
		v.add(level, reasonOr(t.Reason, "runs "+tool))
	}
	return v.result()
}

func stringField(fields map[string]json.RawMessage, name string) (string, bool, string) {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return "", false, ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, name + " is not a string"
	}
	return s, true, ""
}

// commandField reads a shell command: a string, or an argv array (as some
// agents send), quoted back into one command.
func commandField(fields map[string]json.RawMessage, name string) (string, string) {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return "", "no " + name
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, ""
	}
	var argv []string
	if err := json.Unmarshal(raw, &argv); err != nil {
		return "", name + " is neither a string nor a list of strings"
	}
	if len(argv) == 0 {
		return "", name + " is empty"
	}
	var b strings.Builder
	for i, a := range argv {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			return "", name + " holds an argument that cannot be quoted for a shell"
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(q)
	}
	return b.String(), ""
}

// workspacePath returns the path as the rules see it (relative when inside
// the workspace) and whether it is inside.
func workspacePath(p, cwd string) (string, bool) {
	if p == "" {
		return ".", true
	}
	if strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$HOME") {
		return "~" + strings.TrimPrefix(strings.TrimPrefix(p, "~"), "$HOME"), false
	}
	if !filepath.IsAbs(p) {
		if cwd == "" {
			rel := filepath.Clean(p)
			return rel, rel != ".." && !strings.HasPrefix(rel, "../")
		}
		p = filepath.Join(cwd, p)
	}
	p = filepath.Clean(p)
	if cwd != "" {
		cwd = filepath.Clean(cwd)
		if p == cwd {
			return ".", true
		}
		if cwd == "/" || strings.HasPrefix(p, strings.TrimSuffix(cwd, "/")+"/") {
			rel := strings.TrimPrefix(p, strings.TrimSuffix(cwd, "/")+"/")
			return rel, true
		}
	}
	return p, false
}

func (c *Classifier) readPath(v *verdict, p, cwd string) {
	if real, ok := realTarget(p, cwd); ok {
		if c.rules.sensitive(real) || c.rules.sensitive(filepath.ToSlash(real)) {
			v.add(bot.Dangerous, withID("reads a sensitive path through a symlink ("+shorten(p)+" → "+shorten(real)+")", "tools:symlink"))
			return
		}
		if _, inside := workspacePath(real, cwd); !inside {
			v.add(bot.Caution, "reads outside the workspace through a symlink ("+shorten(p)+" → "+shorten(real)+")")
			return
		}
	}
	rel, inside := workspacePath(p, cwd)
	if c.rules.sensitive(rel) || c.rules.sensitive(p) {
		v.add(bot.Dangerous, "reads a sensitive path ("+shorten(p)+")")
		return
	}
	if inside {
		v.add(bot.Safe, "")
		return
	}
	v.add(bot.Caution, "reads outside the workspace ("+shorten(p)+")")
}

// patchPaths judges a Codex apply_patch patch by the files it touches.
func (c *Classifier) patchPaths(v *verdict, patch, cwd string) {
	s := strings.TrimSpace(patch)
	if !strings.HasPrefix(s, "*** Begin Patch") {
		v.add(bot.Dangerous, withID("apply_patch input is not a patch (no *** Begin Patch)", "tools:apply-patch-malformed"))
		return
	}
	n := 0
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, "\r")
		for _, h := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if p, ok := strings.CutPrefix(line, h); ok {
				p = strings.TrimSpace(p)
				if p == "" {
					v.add(bot.Dangerous, withID("apply_patch names an empty path", "tools:apply-patch-malformed"))
					return
				}
				n++
				c.writePath(v, p, cwd)
			}
		}
	}
	if n == 0 {
		v.add(bot.Dangerous, withID("apply_patch touches no file it names", "tools:apply-patch-malformed"))
	}
}

func (c *Classifier) writePath(v *verdict, p, cwd string) {
	if real, ok := realTarget(p, cwd); ok {
		// a symlink inside the workspace may point anywhere: judge where
		// the write lands
		c.writeResolved(v, p, real, cwd)
		return
	}
	c.writeResolved(v, p, p, cwd)
}

// realTarget resolves symlinks in a path the agent names (against the
// workspace, the nearest existing parent when the file is new). It
// reports false when nothing resolves differently.
func realTarget(p, cwd string) (string, bool) {
	if cwd == "" || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$") {
		return "", false
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(cwd, abs)
	}
	abs = filepath.Clean(abs)
	rest := ""
	dir := abs
	for i := 0; i < 64; i++ {
		if fi, err := os.Lstat(dir); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if _, err := filepath.EvalSymlinks(dir); err != nil {
				// a dangling link: follow it by hand
				target, err := os.Readlink(dir)
				if err != nil {
					return "", false
				}
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(dir), target)
				}
				dir = filepath.Clean(target)
				continue
			}
		}
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			real := filepath.Join(r, rest)
			rc, err := filepath.EvalSymlinks(filepath.Clean(cwd))
			if err != nil {
				rc = filepath.Clean(cwd)
			}
			// the workspace itself may sit behind a symlink (/tmp on macOS)
			if rel, err := filepath.Rel(rc, real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				real = filepath.Join(filepath.Clean(cwd), rel)
			}
			if real == abs {
				return "", false
			}
			return real, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
	return "", false
}

func (c *Classifier) writeResolved(v *verdict, shown, p, cwd string) {
	if shown != p {
		v.add(bot.Caution, withID("writes through a symlink ("+shorten(shown)+" → "+shorten(p)+")", "tools:symlink"))
	}
	rel, inside := workspacePath(p, cwd)
	if c.rules.sensitive(rel) || c.rules.sensitive(p) {
		v.add(bot.Dangerous, "writes a sensitive path ("+shorten(p)+")")
		return
	}
	for _, q := range []string{rel, p} {
		if reason, _ := c.rules.writeReason(filepath.ToSlash(q)); reason != "" {
			r, id := splitID(reason)
			v.add(bot.Dangerous, withID(r+" ("+shorten(p)+")", id))
			return
		}
	}
	if !inside && shown != p {
		v.add(bot.Dangerous, withID("writes outside the workspace through a symlink ("+shorten(shown)+" → "+shorten(p)+")", "tools:symlink-outside"))
		return
	}
	if !inside {
		sp := splitPath(filepath.ToSlash(p))
		if anyMatch(c.rules.scratch, &sp) {
			v.add(bot.Caution, "writes a scratch file outside the workspace ("+shorten(p)+")")
			return
		}
		v.add(bot.Dangerous, "writes outside the workspace ("+shorten(p)+")")
		return
	}
	v.add(bot.Caution, "edits a file in the workspace")
}
