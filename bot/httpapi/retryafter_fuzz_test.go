package httpapi

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzParseRetryAfter: a gateway's Retry-After header is outside input
// (the client may be talking to anything at SIGNOFF_URL). Whatever it
// holds, reading it never panics and never yields a negative wait; whole
// seconds read as that many seconds, an HTTP date as the time until it
// (none when past), anything else as no value (the client then guesses).
func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{"", "0", "1", " 7 ", "30", "31", "4294967295", "4294967296", "-3", "1.5", "soon",
		"Tue, 01 Dec 2026 12:00:30 GMT", "Tue, 01 Dec 2026 11:00:00 GMT", "Monday, 01-Dec-26 12:00:05 GMT", "\x00", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		wait, ok := parseRetryAfter(v, now)
		if wait < 0 {
			t.Fatalf("parseRetryAfter(%q) = %s: a negative wait", v, wait)
		}
		if !ok && wait != 0 {
			t.Fatalf("parseRetryAfter(%q) = %s with no value", v, wait)
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
			if !ok || wait != time.Duration(n)*time.Second {
				t.Fatalf("parseRetryAfter(%q) = %s, %v; want %ds", v, wait, ok, n)
			}
		}
	})
}
