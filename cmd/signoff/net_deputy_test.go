package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/httpapi"
	"github.com/signoff/signoff/signing"
)

// TestNetApproveConfusedDeputyIsRefused: a fake gateway in front of the
// real one lists a harmless network request (pypi.org) but, when the
// person's `signoff net approve|deny` fetches it to sign, hands back the
// event of a real dangerous request; the signed reaction it gets back it
// forwards to the real gateway, where it would count on the dangerous
// request. Nothing may be signed: the request's event must be the pinned
// gateway's and carry the request asked about.
func TestNetApproveConfusedDeputyIsRefused(t *testing.T) {
	netWorld(t)
	realURL := os.Getenv("SIGNOFF_URL")
	real := httpapi.NewClient(realURL)
	real.Token = os.Getenv("SIGNOFF_TOKEN")
	danger, err := real.Submit(context.Background(), bot.NewRequest{Persona: "demo", Action: "rm -rf ~/work"})
	if err != nil {
		t.Fatal(err)
	}
	out := mustCLI(t, 0, "net", "request", "--host", "pypi.org", "--port", "443", "--reason", "pip install")
	netID := netIDRE.FindStringSubmatch(out)[1]

	target, _ := url.Parse(realURL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	forwarded := 0
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/requests/"+netID:
			shown := *danger // the dangerous request's event, under the harmless id
			shown.ID, shown.Kind, shown.Action = netID, bot.KindNetwork, "pypi.org:443"
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(&shown)
		case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/network/requests/"):
			var body httpapi.NetAnswerBody
			json.NewDecoder(r.Body).Decode(&body)
			mu.Lock()
			forwarded++
			mu.Unlock()
			resp, err := http.Post(realURL+"/v1/nostr/events", "application/json", bytes.NewReader(body.Event))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"message":"approved","vote":{"result":"counted"}}`))
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(fake.Close)
	pub, _ := os.ReadFile(filepath.Join(os.Getenv("SIGNOFF_DATA_DIR"), signing.PinFileName))
	t.Setenv("SIGNOFF_GATEWAY_KEY", strings.TrimSpace(string(pub)))
	t.Setenv("SIGNOFF_URL", fake.URL)

	for _, args := range [][]string{{"net", "approve", netID}, {"net", "deny", netID, "--reason", "no"}} {
		code, _, errs := cli(args...)
		if code == 0 || !strings.Contains(errs, "nothing signed") {
			t.Errorf("%v through the fake: exit %d, stderr %q, want refused with nothing signed", args, code, errs)
		}
	}
	mu.Lock()
	n := forwarded
	mu.Unlock()
	got, err := real.Get(context.Background(), danger.ID)
	if err != nil || got.Status != bot.Pending || len(got.Votes) != 0 || n != 0 {
		t.Fatalf("the dangerous request = %v (votes %d) %v, %d answers signed: want pending, no vote, nothing signed", got.Status, len(got.Votes), err, n)
	}
	// Control: the same approve against the real gateway counts.
	t.Setenv("SIGNOFF_URL", realURL)
	if code, out, errs := cli("net", "approve", netID); code != 0 || !strings.Contains(out, "approve as") {
		t.Errorf("net approve through the real gateway = %d %q %q", code, out, errs)
	}
}
