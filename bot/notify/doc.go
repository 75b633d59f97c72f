// Package notify tells a person that a request waits for them, outside the
// platforms signoff posts on: it runs the command a persona names under
// `notify:` (for ntfy, a pager, a webhook, a desktop notifier) once for
// each new request, on the gateway replica that created the request, with
// the request as JSON on stdin and a time limit.
//
// The command is an argument list, never a shell line built from the
// request: the agent writes the action and reason, so they reach the
// command only as data on stdin. It runs with a small environment (no
// SIGNOFF_* variable, so the gateway's key and tokens stay out of it) in a
// process group of its own that is killed whole when the limit passes.
//
// It owns running that command; it imports bot for the request and the
// persona's Notify, and nothing else from this module.
package notify
