package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestServePprofOnItsOwnLoopbackListener: SIGNOFF_PPROF_LISTEN offers
// /debug/pprof there and not on the API; a non-loopback address is refused.
func TestServePprofOnItsOwnLoopbackListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	t.Setenv("SIGNOFF_PPROF_LISTEN", addr)
	gateway(t, demoPersona)
	resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("pprof listener: %s, want 200", resp.Status)
	}
	api := strings.TrimSuffix(cfgURL(t), "/")
	resp, err = http.Get(api + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("the API serves /debug/pprof too")
	}

	t.Setenv("SIGNOFF_PPROF_LISTEN", "0.0.0.0:0")
	t.Setenv("SIGNOFF_DATA_DIR", t.TempDir())
	t.Setenv("SIGNOFF_LISTEN", "127.0.0.1:0")
	errs := &syncBuffer{}
	a := &app{stdout: io.Discard, stderr: errs}
	if code := a.run(context.Background(), []string{"serve"}); code != 2 || !strings.Contains(errs.String(), "not a loopback address") {
		t.Errorf("serve with SIGNOFF_PPROF_LISTEN=0.0.0.0:0 = %d, %q; want 2 and a refusal", code, errs)
	}
}

func cfgURL(t *testing.T) string {
	t.Helper()
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg.URL
}
