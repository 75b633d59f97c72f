package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"runtime/pprof"
	"sync"
	"testing"
	"time"
)

func TestParseRedisCPU(t *testing.T) {
	got, err := parseRedisCPU("# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:2.500000\r\nused_cpu_sys_children:9.0\r\n")
	if err != nil || got != 3750*time.Millisecond {
		t.Errorf("parseRedisCPU = %s, %v; want 3.75s", got, err)
	}
	for _, bad := range []string{"", "# CPU\r\nused_cpu_sys:1.0\r\n", "used_cpu_sys:x\r\nused_cpu_user:1\r\n", "used_cpu_sys:-1\r\nused_cpu_user:1\r\n"} {
		if _, err := parseRedisCPU(bad); err == nil {
			t.Errorf("parseRedisCPU(%q): no error", bad)
		}
	}
}

// TestLabeledCPUTellsClientFromRest: two goroutines spin for the same
// work, one started under the client's label (through a goroutine it
// starts, as the HTTP transport's are); the profile gives each about half.
func TestLabeledCPUTellsClientFromRest(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skip("cannot profile here:", err)
	}
	// The same work for each (not the same wall time: on a busy machine
	// one may get less of it).
	spin := func() {
		h := sha256.Sum256(nil)
		for range 3000000 {
			h = sha256.Sum256(h[:])
		}
	}
	var wg sync.WaitGroup
	pprof.Do(context.Background(), pprof.Labels(clientLabel, "client"), func(context.Context) {
		wg.Go(spin)
	})
	wg.Go(spin)
	wg.Wait()
	pprof.StopCPUProfile()
	client, total, err := labeledCPU(buf.Bytes(), clientLabel)
	if err != nil {
		t.Fatal(err)
	}
	if total < 100*time.Millisecond {
		t.Skipf("only %s of samples: too few to tell", total)
	}
	if share := float64(client) / float64(total); share < 0.25 || share > 0.75 {
		t.Errorf("client's share %.2f of %s, want about half", share, total)
	}
	if _, _, err := labeledCPU([]byte("not a profile"), clientLabel); err == nil {
		t.Error("labeledCPU of garbage: no error")
	}
}
