package discord

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestRewrittenCallErrorNamesWhereItWent: a failed call through APIURL
// says which server it dialed, not only discord.com.
func TestRewrittenCallErrorNamesWhereItWent(t *testing.T) {
	base, _ := url.Parse("http://127.0.0.1:1")
	hc := &http.Client{Transport: rewriteTransport{base: base, next: http.DefaultTransport}}
	req, _ := http.NewRequestWithContext(context.Background(), "GET", "https://discord.com/api/v9/gateway", nil)
	_, err := hc.Do(req)
	if err == nil || !strings.Contains(err.Error(), "sent to http://127.0.0.1:1/api/v9/gateway") {
		t.Fatalf("err = %v; want it to name the server dialed", err)
	}
}
