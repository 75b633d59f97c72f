package discord_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/signoff/signoff/adapters/discord"
	"github.com/signoff/signoff/adapters/discord/discordfake"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/bottest"
	"github.com/signoff/signoff/signing"
)

// FuzzInteractionsHandler sends the endpoint validly signed, fresh bodies
// of every shape, through to the real gateway and store. Whatever the
// body: no panic, a 200 / 400 / 413 with JSON, a PONG only for a PING, an
// ephemeral message for anything else it accepts, and never a vote that
// does not come from a signoff button.
func FuzzInteractionsHandler(f *testing.F) {
	p := persona(2)
	p.Channels = nil // the terminal channel: no Discord needed to post
	env := bottest.New(f, p, map[bot.Platform]bot.Channel{})
	r := env.Submit(f, bot.NewRequest{Persona: "demo", Action: "rm -rf /tmp/fuzz"})
	pub, priv, _ := ed25519.GenerateKey(nil)
	sink := &observed{sink: env.Gateway, changed: make(chan struct{})}
	a, err := discord.New(discord.Config{PublicKey: hex.EncodeToString(pub), AppID: "700000000000000001", Logger: testLogger()}, sink)
	if err != nil {
		f.Fatal(err)
	}
	handler := a.InteractionsHandler()

	f.Add([]byte(`{"type":1,"application_id":"700000000000000001"}`))
	f.Add([]byte(discordfake.InteractionPayload("700000000000000001", "990000000000000001", "t", channel, "1100000000000000001", bob, "signoff:approve:"+r.ID)))
	f.Add([]byte(discordfake.InteractionPayload("700000000000000001", "990000000000000002", "t", channel, "1100000000000000001", stranger, "signoff:deny:"+r.ID)))
	f.Add([]byte(discordfake.InteractionPayload("700000000000000001", "990000000000000003", "t", channel, "1100000000000000001", carol, "signoff:approve:nosuchrequest")))
	f.Add([]byte(`{"type":3,"application_id":"700000000000000001","id":"1","data":{"custom_id":"signoff:approve:","component_type":2},"user":{"id":"1"}}`))
	f.Add([]byte(`{"type":2,"application_id":"700000000000000001","id":"1","data":{"name":"approve"}}`))
	f.Add([]byte(`{"type":3,"application_id":"700000000000000001","id":"1","data":{"custom_id":7}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, body []byte) {
		before := len(sink.all())
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req := httptest.NewRequest(http.MethodPost, "/discord/interactions", bytes.NewReader(body))
		req.Header.Set(signing.DiscordTimestampHeader, ts)
		req.Header.Set(signing.DiscordSignatureHeader, signing.SignDiscord(priv, ts, body))
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, req)

		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%d with a non-JSON body %q", w.Code, w.Body)
		}
		switch w.Code {
		case http.StatusOK:
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			if n := len(sink.all()); n != before {
				t.Fatalf("a refused body reached the gateway")
			}
			return
		default:
			t.Fatalf("status %d for a signed, fresh body: %s", w.Code, w.Body)
		}
		var in struct {
			Type int `json:"type"`
		}
		json.Unmarshal(body, &in)
		var resp struct {
			Type int `json:"type"`
			Data *struct {
				Content string `json:"content"`
				Flags   int    `json:"flags"`
			} `json:"data"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
			t.Fatalf("response %s: %v", w.Body, err)
		}
		if in.Type == 1 {
			if resp.Type != 1 {
				t.Fatalf("PING answered %s", w.Body)
			}
			return
		}
		if resp.Type != 4 || resp.Data == nil || resp.Data.Flags != 64 || resp.Data.Content == "" {
			t.Fatalf("answer %s, want an ephemeral message", w.Body)
		}
		for _, c := range sink.all()[before:] {
			if c.b.Voter.Platform != bot.Discord || c.b.Voter.ID == "" || c.b.Proof != bot.ProofPlatform ||
				(c.b.Choice != bot.Approve && c.b.Choice != bot.Deny) || len(c.b.DedupKey) <= len("discord:interaction:") {
				t.Fatalf("ballot %+v from body %q", c.b, body)
			}
		}
	})
}
