package permissions_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/permissions"
)

// TestReviewer runs mode auto against a local reviewer endpoint answering
// each way. Only allow and deny resolve; unsure, garbage, an error status
// and silence go to people; a dangerous call is never let through by it.
func TestReviewer(t *testing.T) {
	// The handler runs on the server's goroutines, and a timed-out one
	// may still be running when the next case starts: both are shared
	// under mu.
	var (
		mu     sync.Mutex
		answer func(w http.ResponseWriter)
		got    permissions.ReviewRequest
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req permissions.ReviewRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("reviewer got a body that is not the documented JSON: %v", err)
		}
		mu.Lock()
		got = req
		reply := answer
		mu.Unlock()
		reply(w)
	}))
	defer srv.Close()
	w := newWorld(t, "demo", "mode: auto\nreviewer:\n  url: "+srv.URL+"\n  timeout: 300ms\npermissions:\n  bash:\n    \"npm *\": ask\n")
	app := w.dir("app")
	say := func(body string) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) { w.Write([]byte(body)) }
	}
	for _, tc := range []struct {
		name, cmd string
		answer    func(http.ResponseWriter)
		want, by  string
	}{
		{"allow", "npm install", say(`{"verdict":"allow","reason":"lockfile unchanged"}`), "allow", permissions.ByReviewer},
		{"deny", "npm install", say(`{"verdict":"deny","reason":"not on a Friday"}`), "deny", permissions.ByReviewer},
		{"unsure", "npm install", say(`{"verdict":"unsure"}`), "ask", permissions.ByPeople},
		{"garbage", "npm install", say(`<html>oops</html>`), "ask", permissions.ByPeople},
		{"unknown verdict", "npm install", say(`{"verdict":"yolo"}`), "ask", permissions.ByPeople},
		{"error status", "npm install", func(w http.ResponseWriter) { http.Error(w, "boom", 500) }, "ask", permissions.ByPeople},
		{"timeout", "npm install", func(w http.ResponseWriter) { time.Sleep(time.Second); w.Write([]byte(`{"verdict":"allow"}`)) }, "ask", permissions.ByPeople},
		{"allow cannot pass a dangerous call", "terraform apply", say(`{"verdict":"allow","reason":"looks fine"}`), "ask", permissions.ByPeople},
		{"deny stops a dangerous call", "terraform apply", say(`{"verdict":"deny","reason":"prod freeze"}`), "deny", permissions.ByReviewer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			answer = tc.answer
			mu.Unlock()
			start := time.Now()
			res := w.check(t, permissions.Check{Persona: "demo", Action: tc.cmd, Cwd: app})
			if res.Decision != tc.want || res.By != tc.by {
				t.Errorf("decision %s by %s (%s), want %s by %s", res.Decision, res.By, res.Why, tc.want, tc.by)
			}
			if res.Review == nil {
				t.Fatalf("no review in the result")
			}
			mu.Lock()
			sent := got
			mu.Unlock()
			if sent.Persona != "demo" || sent.Action != tc.cmd || sent.Cwd != app || sent.Kind != bot.KindCommand || sent.Level == "" {
				t.Errorf("reviewer was sent %+v", sent)
			}
			if time.Since(start) > 900*time.Millisecond {
				t.Errorf("the check took %s: the reviewer's timeout was not kept", time.Since(start))
			}
		})
	}
	if n := len(w.audit(t, "review")); n != 9 {
		t.Errorf("%d review records in the audit, want one per verdict (9)", n)
	}
}

func FuzzParseVerdict(f *testing.F) {
	for _, s := range []string{`{"verdict":"allow"}`, `{"verdict":"deny","reason":"x"}`, `{"verdict":1}`, `null`, `{"verdict":"allow"}{}`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v := permissions.ParseVerdict(b)
		switch v.Verdict {
		case permissions.VerdictAllow, permissions.VerdictDeny:
			if v.Error != "" {
				t.Errorf("a resolving verdict with an error: %+v", v)
			}
		case permissions.VerdictUnsure:
		default:
			t.Errorf("verdict %q from %q", v.Verdict, b)
		}
	})
}
