package main

import (
	"net"
	"strings"
	"testing"
)

func TestHealthcheck(t *testing.T) {
	gateway(t, demoPersona)
	for _, args := range [][]string{{"healthcheck"}, {"healthcheck", "--ready"}} {
		if code, out, errs := cli(args...); code != 0 || !strings.HasPrefix(out, "ok: ") {
			t.Errorf("%v = %d %q %q, want 0 ok", args, code, out, errs)
		}
	}
}

func TestHealthcheckOfNothingListeningFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	code, _, errs := cli("healthcheck", "--url", "http://"+addr)
	if code != 1 || !strings.Contains(errs, "unhealthy: cannot reach http://"+addr+"/healthz") {
		t.Fatalf("healthcheck of a closed port = %d %q, want 1 and why", code, errs)
	}
	if code, _, errs := cli("healthcheck", "extra"); code != 2 || !strings.Contains(errs, "no arguments") {
		t.Fatalf("healthcheck extra = %d %q, want usage error", code, errs)
	}
}
