// Package risk is signoff's mechanical risk classifier. It gives a shell
// command or an agent's tool call a level — safe, caution or dangerous —
// and every reason that raised it, before anything else happens to a
// request.
//
// Shell commands are parsed (mvdan.cc/sh, bash syntax), never matched as
// strings. The commonest shapes skip the parser: plain words are split
// directly, and one line of simple commands joined by |, &&, || and ;
// (with redirections and assignments) is read by fastParse into the
// parser's own syntax tree; tests and fuzzing hold both to the parser
// (same tree, same verdict and reasons). The walk sees every command that would run: lists, pipelines,
// subshells, blocks, functions, $(…), backticks, process substitution,
// redirections, here-documents and here-strings fed to a shell or
// interpreter, bash -c strings (parsed again, to a bounded depth), and
// wrappers that run another command (sudo, env, xargs, timeout, find
// -exec …). Quoting and escaping are undone first, so r”m, \rm, "rm" and
// $'rm' are rm. A compound command is as dangerous as its worst part.
//
// What cannot be seen through is dangerous — fail closed: eval, source, a
// command name from a variable or substitution, a script outside the
// workspace run by path or by an interpreter, code piped into a shell or
// interpreter (curl | sh, base64 -d | sh), and anything that does not
// parse. What runs code from files the agent can edit — a script in the
// workspace, make, go test, npm test, cargo, pytest — is caution, never
// safe.
//
// Shapes (shapes.go) judge any program by its words, named by a pack or
// not: a shell or interpreter handed to it, an option that runs a program
// or loads a library, a file written by an option (as a redirection's
// target: outside the workspace, a dotfile or a guard file is dangerous),
// a local file sent to another host. The packs hold the option names.
//
// The rules are data: packs in configs/rules/*.yaml, one per family of
// programs, embedded by default (Default) and overridable from a
// directory (LoadRules, New). The packs name programs and their
// subcommands, flags and arguments, wrappers, shells, interpreters, SQL and
// key-value clients, sensitive and protected paths, environment variables
// and tools; every rule has an id shown after its reason and by Explain.
// The code parses and walks, and keeps what packs cannot say: the working
// directory (cd, pushd, subshells, functions), what reaches a program's
// input, words known only at run time, sed scripts, input pasted into code
// by xargs and parallel. A program no pack names is caution, and dangerous
// when it is given a destructive verb or a flag that skips a confirmation;
// a dry run or a help request lowers a command's own rules.
//
// Tool calls (ToolCall, or Classify with bot.KindTool and the action
// "Name {json}" or a Claude Code hook payload) are judged by their input:
// Bash by its command; Read, Glob, Grep by the path (inside the workspace
// safe, outside caution, a secret dangerous); Write and Edit by the path
// (inside caution, outside or protected dangerous). A tool the rules do
// not name (an MCP server's) is dangerous: trust one by name or by
// wildcard under tools:. Network destinations and free text are
// dangerous: people decide.
//
// What it cannot see: the contents of scripts and files it is asked to
// run, aliases and functions defined outside the command, what a program
// does with configuration it reads (git aliases, Makefiles, package.json
// scripts, go generate), values of variables, and the meaning of
// commands it does not know (those are caution).
//
// Package risk owns classification only. It imports nothing from the
// module but bot (the domain types) and configs/rules (the embedded
// data); its only I/O is LoadRules reading rules and, for tool calls with
// a workspace, resolving symlinks in the paths they name.
package risk
