package risk

import "strings"

// Commands returns each simple command that cmd would run, as the
// classifier sees it: through lists, pipelines, substitutions, `bash -c`
// strings, eval and wrappers (sudo, env, nohup, timeout, xargs, find
// -exec, signoff exec, docker exec …), one line per command with its
// words unquoted, the wrappers' own commands included. Rules use it so a
// deny of `git push *` also holds for `sudo git push` and
// `bash -c 'git push'`.
func (c *Classifier) Commands(cmd string) []string {
	if c.bad != "" || len(cmd) > c.rules.MaxCommandBytes {
		return nil
	}
	var out []string
	w := walker{r: c.rules, visit: func(args []word) {
		var b strings.Builder
		for i, a := range args {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(a.text)
		}
		out = append(out, b.String())
	}}
	w.shell(cmd, ctx{})
	return out
}
