package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"testing"
)

// TestServeKeepsLongPollConnections: serve's listener takes back an
// answered long-poll's connection, so an agent's next poll goes on the
// connection of the one before rather than a new one.
func TestServeKeepsLongPollConnections(t *testing.T) {
	startServe(t)
	addr := strings.TrimPrefix(os.Getenv("SIGNOFF_URL"), "http://")
	r := submitHTTP(t, addr, "deploy")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	var reused []bool
	for range 3 {
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) },
		})
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v1/requests/"+r.ID+"?wait=100ms", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"pending"`) {
			t.Fatalf("long-poll answered %d %.100s, want 200 pending", resp.StatusCode, body)
		}
	}
	if len(reused) != 3 || reused[0] || !reused[1] || !reused[2] {
		t.Errorf("three long-polls in a row: reused %v, want [false true true] (one connection)", reused)
	}
}
