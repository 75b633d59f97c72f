// Package sandbox owns `signoff run`: the walls and doors an agent runs
// inside (docs/sandbox.md).
//
// Walls: a mount namespace whose view of the filesystem is read-only
// except the workspace, a private /tmp and the persona's writable paths;
// credentials, the person's signoff config and the gateway's data dir are
// masked by empty read-only mounts; guard files (.git, .claude, the
// home's shell and git config …) are mounted read-only even inside a
// writable root. The walls file (configs/sandbox/walls.yaml) holds the
// defaults as data; a persona's `sandbox:` adds to them.
//
// Doors: a network namespace with only loopback, where the sandbox's init
// listens on the doors' ports and carries each connection over a Unix
// socket to its server outside (the egress proxy, the gateway's door).
// A program that ignores the proxy variables has no route.
//
// Processes: a PID, IPC and UTS namespace; the agent runs with no
// capabilities (bounding set emptied, securebits locked), no_new_privs,
// a seccomp filter refusing what an agent never needs, and Landlock as a
// second layer where the kernel has it.
//
// Three stages of one binary: Run (outside, as the person) starts Init
// (PID 1 inside the new namespaces: builds the view, serves the doors'
// inside ends, reaps), which starts Exec (drops every privilege, then
// execs the agent). A missing kernel part stops Run with the part named
// (Probe); there is no weaker mode.
//
// It imports bot (the persona's walls) and configs/sandbox (the defaults)
// only; cmd/signoff wires the proxy and the gateway's door.
package sandbox
