package signing

import (
	"testing"
	"time"
)

// BenchmarkKeySignEvent is one request event or receipt signed by the
// gateway (a parsed key: no public point derived per signature).
func BenchmarkKeySignEvent(b *testing.B) {
	k := NewKey()
	at := time.Now()
	for b.Loop() {
		if _, _, err := k.SignEvent(1, "hello", [][]string{{"t", "signoff"}}, at); err != nil {
			b.Fatal(err)
		}
	}
}
