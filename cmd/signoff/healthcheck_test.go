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

// TestHealthcheckListening: --listening checks a port (the egress proxy's
// container, which has no gateway to ask): 0 while it accepts, 1 once
// nothing does, and a usage error beside --url or --ready.
func TestHealthcheckListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if code, out, errs := cli("healthcheck", "--listening", addr); code != 0 || !strings.Contains(out, "ok: "+addr) {
		t.Errorf("--listening on an open port = %d %q %q, want 0 ok", code, out, errs)
	}
	ln.Close()
	if code, _, errs := cli("healthcheck", "--listening", addr); code != 1 || !strings.Contains(errs, "nothing accepts connections at "+addr) {
		t.Errorf("--listening on a closed port = %d %q, want 1 and why", code, errs)
	}
	if code, _, errs := cli("healthcheck", "--listening", addr, "--ready"); code != 2 || !strings.Contains(errs, "--listening checks a port") {
		t.Errorf("--listening with --ready = %d %q, want a usage error", code, errs)
	}
}
