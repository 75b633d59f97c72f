package risk

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/signoff/signoff/bot"
)

type labelled struct {
	line  int
	level bot.Level
	cmd   string
}

// readCorpus reads testdata/corpus.tsv: level<TAB>command, # comments,
// ␤ for a newline.
func readCorpus(tb testing.TB) []labelled {
	tb.Helper()
	f, err := os.Open("testdata/corpus.tsv")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []labelled
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		level, cmd, ok := strings.Cut(line, "\t")
		if !ok {
			tb.Fatalf("corpus.tsv:%d: no tab in %q", n, line)
		}
		switch bot.Level(level) {
		case bot.Safe, bot.Caution, bot.Dangerous:
		default:
			tb.Fatalf("corpus.tsv:%d: level %q", n, level)
		}
		out = append(out, labelled{n, bot.Level(level), strings.ReplaceAll(cmd, "␤", "\n")})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestCorpus(t *testing.T) {
	c := Default()
	corpus := readCorpus(t)
	if len(corpus) < 300 {
		t.Errorf("corpus has %d commands, want at least 300", len(corpus))
	}
	for _, l := range corpus {
		got := c.Command(l.cmd)
		if got.Level != l.level {
			t.Errorf("corpus.tsv:%d: Command(%q) = %s %q, want %s", l.line, l.cmd, got.Level, got.Reasons, l.level)
		}
		if got.Level != bot.Safe && len(got.Reasons) == 0 {
			t.Errorf("corpus.tsv:%d: Command(%q) = %s with no reason", l.line, l.cmd, got.Level)
		}
	}
}
