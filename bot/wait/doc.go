// Package wait shows a person (or an agent's log) a request while it waits:
// the votes counted so far, who voted which way and what they said, how
// many are still needed and of whom, and a countdown. On a terminal it is
// one line rewritten in place every second; elsewhere a plain line each
// time something changes, and otherwise at most every 30 seconds.
//
// It owns only the display: it imports bot, never the HTTP client or the
// gateway, and is fed the request by whoever long-polls it.
package wait
