package proxy_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/signoff/signoff/bot/proxy"
	"github.com/signoff/signoff/bot/tokens"
)

const sampleToken = "sgn_ABCDEFGHIJKLMNOP_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"

func TestProxyTokenForms(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	good := map[string]string{
		"Basic " + b64("ext:"+sampleToken):  sampleToken,
		"basic " + b64(sampleToken+":"):     sampleToken, // user name, empty password
		"Basic " + b64(sampleToken):         sampleToken, // no colon at all
		"Bearer " + sampleToken:             sampleToken,
		"Basic  " + b64("a:b:"+sampleToken): "", // password "b:sgn_…" is not a token
		"":                                  "",
	}
	for h, want := range good {
		got, err := proxy.ProxyToken(h)
		if got != want || (want != "" && err != nil) || (want == "" && h != "" && err == nil) {
			t.Errorf("ProxyToken(%q) = %q, %v; want %q", h, got, err, want)
		}
	}
	for _, h := range []string{"Basic", "Basic !!", "Token " + sampleToken, sampleToken, "Bearer " + sampleToken + "x",
		"Basic " + b64("ext:"+sampleToken+"\r\n"), "Basic " + b64("ext: "+sampleToken), "Bearer  " + sampleToken + " x"} {
		if got, err := proxy.ProxyToken(h); got != "" || err == nil {
			t.Errorf("ProxyToken(%q) = %q, %v; want an error", h, got, err)
		}
	}
}

func FuzzProxyAuthorization(f *testing.F) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, s := range []string{"", "Basic " + b64("ext:"+sampleToken), "Bearer " + sampleToken, "Basic " + b64(sampleToken+":"),
		"Basic !!!", "Digest x", "Basic " + b64("ext:sgn_x"), "Basic " + strings.Repeat("A", 2000), "Bearer \x00"} {
		f.Add(s, "ext", sampleToken)
	}
	f.Fuzz(func(t *testing.T, header, user, pass string) {
		tok, err := proxy.ProxyToken(header)
		switch {
		case err != nil && tok != "":
			t.Fatalf("%q: both a token %q and an error %v", header, tok, err)
		case err == nil && tok == "" && header != "":
			t.Fatalf("%q: neither a token nor an error", header)
		case tok != "":
			if _, exact, err := tokens.ParseBearer("Bearer " + tok); err != nil || exact != tok {
				t.Fatalf("%q gave %q, which is not exactly a signoff token", header, tok)
			}
		}
		// What curl sends for http://user:pass@proxy is read back as pass
		// (or user when pass is empty), when that is a token.
		h := "Basic " + b64(user+":"+pass)
		want := pass
		if want == "" {
			want = user
		}
		got, err := proxy.ProxyToken(h)
		if _, exact, perr := tokens.ParseBearer("Bearer " + want); perr == nil && exact == want && len(h) <= 1030 {
			if err != nil || got != want {
				t.Fatalf("user %q pass %q: got %q, %v", user, pass, got, err)
			}
		} else if got != "" && got != want {
			t.Fatalf("user %q pass %q: got %q", user, pass, got)
		}
	})
}
