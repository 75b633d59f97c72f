package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
)

func init() {
	commands["version"] = versionCommand
	commands["completion"] = completion
}

// version is set at build time (-ldflags "-X main.version=v1.2.3"); else
// the module's version from the build info.
var version = ""

// buildVersion returns the version, the commit (with "+dirty" when the
// tree had changes) and the Go version this binary was built with.
func buildVersion() (v, commit, goVersion string) {
	v, commit = version, "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return orText(v, "devel"), commit, "unknown"
	}
	if v == "" {
		v = bi.Main.Version
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && commit != "unknown" {
		commit += "+dirty"
	}
	return v, commit, bi.GoVersion
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func versionCommand(_ context.Context, a *app, args []string) int {
	fs := a.flags("version", "version")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	v, commit, gov := buildVersion()
	fmt.Fprintf(a.stdout, "signoff %s (commit %s, %s)\n", v, commit, gov)
	return 0
}

// completion prints a shell completion script: the subcommands, then
// files.
func completion(_ context.Context, a *app, args []string) int {
	fs := a.flags("completion", "completion bash|zsh|fish   (bash: source <(signoff completion bash))")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	words := strings.Join(names, " ")
	switch fs.Arg(0) {
	case "bash":
		fmt.Fprintf(a.stdout, `# signoff completion for bash: source <(signoff completion bash)
_signoff() {
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W %q -- "${COMP_WORDS[1]}"))
  else
    COMPREPLY=($(compgen -f -- "${COMP_WORDS[COMP_CWORD]}"))
  fi
}
complete -F _signoff signoff
`, words)
	case "zsh":
		fmt.Fprintf(a.stdout, `#compdef signoff
# signoff completion for zsh: source <(signoff completion zsh)
_signoff() {
  if (( CURRENT == 2 )); then
    compadd -- %s
  else
    _files
  fi
}
compdef _signoff signoff
`, words)
	case "fish":
		fmt.Fprintf(a.stdout, "# signoff completion for fish: signoff completion fish | source\ncomplete -c signoff -n __fish_use_subcommand -f -a %q\n", words)
	default:
		fs.Usage()
		return a.failf("completion takes one shell: bash, zsh or fish")
	}
	return 0
}
