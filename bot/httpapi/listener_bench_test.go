package httpapi_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/bot/httpapi"
)

// cpuTime is the CPU this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLongPollRepoll: a client long-polls a pending request, is
// answered when its 1ms wait passes (the poll parked, answered as a
// change would answer it), and polls again. On an httpapi.Listener the
// answered connection is given back and the next poll goes on it; on a
// plain listener each answer closes its connection and the next poll
// dials a new one. cpu-ns/op is this process's CPU (client and server)
// per poll; dials/op the TCP connections the server accepted per poll.
func BenchmarkLongPollRepoll(b *testing.B) {
	alice := bot.Identity{Platform: bot.Slack, ID: "U0ALICE"}
	p := bot.Persona{Name: "demo", Owner: &bot.Person{Name: "alice", Identities: []bot.Identity{alice}}, DenyQuorum: 1, Timeout: time.Hour}
	env := bottest.New(b, p, nil)
	r := env.Submit(b, bot.NewRequest{Persona: "demo", Action: "deploy"})
	for _, tc := range []struct {
		name string
		keep bool
	}{{"given-back", true}, {"new-conn", false}} {
		b.Run(tc.name, func(b *testing.B) {
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			tcp := &acceptCounter{Listener: inner}
			var ln net.Listener = tcp
			if tc.keep {
				ln = httpapi.NewListener(tcp)
			}
			srv := &http.Server{Handler: (&httpapi.Server{Gateway: env.Gateway}).Handler()}
			go srv.Serve(ln)
			defer srv.Close()
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			url := "http://" + inner.Addr().String() + "/v1/requests/" + r.ID + "?wait=1ms"
			cpu0 := cpuTime(b)
			for b.Loop() {
				resp, err := c.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"pending"`) {
					b.Fatalf("long-poll answered %d %.100s, want 200 pending", resp.StatusCode, body)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(tcp.n.Load())/float64(b.N), "dials/op")
		})
	}
}
