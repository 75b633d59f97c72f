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

// heldRow is one row of a held-out set: its label, command, and the
// comment above it (for GTFOBins: "program function").
type heldRow struct {
	labelled
	note string
}

func readHeldOut(tb testing.TB, file string) []heldRow {
	tb.Helper()
	f, err := os.Open(file)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []heldRow
	note := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if c, ok := strings.CutPrefix(line, "# "); ok {
			note = c
			continue
		}
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		level, cmd, ok := strings.Cut(line, "\t")
		if !ok {
			tb.Fatalf("%s:%d: no tab in %q", file, n, line)
		}
		out = append(out, heldRow{labelled{n, bot.Level(level), strings.ReplaceAll(cmd, "␤", "\n")}, note})
	}
	return out
}

// heldScore counts one set: rows labelled dangerous and how many are
// classified dangerous and safe; rows labelled not dangerous and how many
// are classified dangerous.
type heldScore struct{ d, dHit, dSafe, o, oHit int }

func (s heldScore) String() string {
	return fmt.Sprintf("dangerous %4d: caught %5.1f%%, safe %3d | others %4d: over-flagged %4.1f%%",
		s.d, 100*ratio(s.dHit, s.d, 1), s.dSafe, s.o, 100*ratio(s.oHit, s.o, 0))
}

func (s *heldScore) add(l bot.Level, got bot.Level) {
	if l == bot.Dangerous {
		s.d++
		if got == bot.Dangerous {
			s.dHit++
		}
		if got == bot.Safe {
			s.dSafe++
		}
		return
	}
	s.o++
	if got == bot.Dangerous {
		s.oHit++
	}
}

// heldOutFloors are the least each held-out set must score: the share of
// rows labelled dangerous that are caught, and the most over-flagged share
// of the others. (docs/classifier.md has the measurements.)
var heldOutFloors = map[string]struct{ recall, overflag float64 }{
	"gtfobins": {0.78, 0},
	"peer":     {0.52, 0.51}, // the peers' newest tests run in modes signoff does not copy; see docs/classifier.md
	"everyday": {1, 0.015},
}

// TestHeldOut measures the classifier on sets built from public sources
// it was not written against (testdata/heldout, see extract.py there).
// HELDOUT=dev (the default) reads the *-dev.tsv files, HELDOUT=unseen the
// *-unseen.tsv ones, which are looked at only when a piece of work ends.
// go test -v -run HeldOut prints the table; misses are logged.
func TestHeldOut(t *testing.T) {
	part := os.Getenv("HELDOUT")
	if part == "" {
		part = "dev"
	}
	files, err := filepath.Glob("testdata/heldout/*-" + part + ".tsv")
	if err != nil || len(files) == 0 {
		t.Fatalf("no held-out files for %q: %v", part, err)
	}
	c := Default()
	var b strings.Builder
	fmt.Fprintln(&b)
	sums := map[string]*heldScore{}
	for _, file := range files {
		set := strings.TrimSuffix(filepath.Base(file), "-"+part+".tsv")
		family, _, _ := strings.Cut(set, "-")
		var all, named, unnamed heldScore
		for _, r := range readHeldOut(t, file) {
			got := c.Command(r.cmd)
			all.add(r.level, got.Level)
			if family == "gtfobins" {
				prog, _, _ := strings.Cut(r.note, " ")
				if _, ok := c.rules.lookup(prog); ok {
					named.add(r.level, got.Level)
				} else {
					unnamed.add(r.level, got.Level)
				}
			}
			if (r.level == bot.Dangerous) != (got.Level == bot.Dangerous) || r.level == bot.Dangerous && got.Level == bot.Safe {
				t.Logf("%s %s:%d [%s] %q = %s %q", map[bool]string{true: "MISS", false: "OVERFLAG"}[r.level == bot.Dangerous], filepath.Base(file), r.line, r.note, r.cmd, got.Level, got.Reasons)
			}
		}
		fmt.Fprintf(&b, "%-22s %s\n", set, all)
		if family == "gtfobins" {
			fmt.Fprintf(&b, "%-22s %s\n", "  programs packs name", named)
			fmt.Fprintf(&b, "%-22s %s\n", "  programs never named", unnamed)
		}
		if sums[family] == nil {
			sums[family] = &heldScore{}
		}
		s := sums[family]
		s.d, s.dHit, s.dSafe, s.o, s.oHit = s.d+all.d, s.dHit+all.dHit, s.dSafe+all.dSafe, s.o+all.o, s.oHit+all.oHit
	}
	t.Log(b.String())
	fams := make([]string, 0, len(sums))
	for f := range sums {
		fams = append(fams, f)
	}
	sort.Strings(fams)
	for _, f := range fams {
		s, floor := sums[f], heldOutFloors[f]
		if rec := ratio(s.dHit, s.d, 1); rec < floor.recall {
			t.Errorf("%s (%s): %.3f of dangerous rows caught, want at least %.2f", f, part, rec, floor.recall)
		}
		if of := ratio(s.oHit, s.o, 0); of > floor.overflag {
			t.Errorf("%s (%s): %.3f of other rows over-flagged, want at most %.2f", f, part, of, floor.overflag)
		}
	}
}
