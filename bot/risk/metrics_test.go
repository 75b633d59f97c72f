package risk

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/signoff/signoff/bot"
)

// readCorpusDir reads testdata/corpus/*.tsv: one file per category, each
// line level<TAB>command (# comments, ␤ for a newline). A command written
// "tool:Name {json}" is a tool call.
func readCorpusDir(tb testing.TB) map[string][]labelled {
	tb.Helper()
	files, err := filepath.Glob("testdata/corpus/*.tsv")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no corpus files: %v", err)
	}
	out := map[string][]labelled{}
	for _, file := range files {
		cat := strings.TrimSuffix(filepath.Base(file), ".tsv")
		f, err := os.Open(file)
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
				continue
			}
			level, cmd, ok := strings.Cut(line, "\t")
			if !ok {
				tb.Fatalf("%s:%d: no tab in %q", file, n, line)
			}
			switch bot.Level(level) {
			case bot.Safe, bot.Caution, bot.Dangerous:
			default:
				tb.Fatalf("%s:%d: level %q", file, n, level)
			}
			out[cat] = append(out[cat], labelled{n, bot.Level(level), strings.ReplaceAll(cmd, "␤", "\n")})
		}
		f.Close()
		if err := sc.Err(); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

func classifyLabelled(c *Classifier, l labelled) bot.Assessment {
	if rest, ok := strings.CutPrefix(l.cmd, "tool:"); ok {
		return c.Classify(bot.KindTool, rest)
	}
	return c.Command(l.cmd)
}

// Thresholds the corpus must meet. Recall is the share of commands
// labelled dangerous that are classified dangerous; over-flagging is the
// share of commands labelled safe or caution that are classified
// dangerous.
const (
	minRecall      = 0.97
	maxOverflag    = 0.03
	minCategoryRec = 0.93
	maxCategoryOF  = 0.06
	minCorpusSize  = 4000
)

// TestCorpusRecallAndOverflag measures the classifier on the labelled
// corpus, per category and overall (go test -v -run CorpusRecall prints
// the table), and fails below the thresholds above. Misses are listed.
func TestCorpusRecallAndOverflag(t *testing.T) {
	c := Default()
	cats := readCorpusDir(t)
	names := make([]string, 0, len(cats))
	for k := range cats {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-14s %6s %6s %8s %6s %9s\n", "category", "total", "dang", "recall", "other", "overflag")
	var tot, td, tdHit, to, toHit int
	for _, cat := range names {
		var d, dHit, o, oHit int
		for _, l := range cats[cat] {
			got := classifyLabelled(c, l)
			if l.level == bot.Dangerous {
				d++
				if got.Level == bot.Dangerous {
					dHit++
				} else {
					t.Logf("MISS %s.tsv:%d: %q = %s %q", cat, l.line, l.cmd, got.Level, got.Reasons)
				}
			} else {
				o++
				if got.Level == bot.Dangerous {
					oHit++
					t.Logf("OVERFLAG %s.tsv:%d: %q (labelled %s) = dangerous %q", cat, l.line, l.cmd, l.level, got.Reasons)
				}
			}
			if got.Level != bot.Safe && len(got.Reasons) == 0 {
				t.Errorf("%s.tsv:%d: %q = %s with no reason", cat, l.line, l.cmd, got.Level)
			}
		}
		rec, of := ratio(dHit, d, 1), ratio(oHit, o, 0)
		fmt.Fprintf(&b, "%-14s %6d %6d %7.1f%% %6d %8.1f%%\n", cat, d+o, d, 100*rec, o, 100*of)
		if d > 0 && rec < minCategoryRec {
			t.Errorf("%s: recall %.3f below %.2f", cat, rec, minCategoryRec)
		}
		if o > 0 && of > maxCategoryOF {
			t.Errorf("%s: over-flag rate %.3f above %.2f", cat, of, maxCategoryOF)
		}
		tot += d + o
		td += d
		tdHit += dHit
		to += o
		toHit += oHit
	}
	rec, of := ratio(tdHit, td, 1), ratio(toHit, to, 0)
	fmt.Fprintf(&b, "%-14s %6d %6d %7.1f%% %6d %8.1f%%\n", "ALL", tot, td, 100*rec, to, 100*of)
	t.Log(b.String())
	if tot < minCorpusSize {
		t.Errorf("corpus has %d commands, want at least %d", tot, minCorpusSize)
	}
	if rec < minRecall {
		t.Errorf("overall recall %.3f below %.2f", rec, minRecall)
	}
	if of > maxOverflag {
		t.Errorf("overall over-flag rate %.3f above %.2f", of, maxOverflag)
	}
}

func ratio(a, b int, empty float64) float64 {
	if b == 0 {
		return empty
	}
	return float64(a) / float64(b)
}
