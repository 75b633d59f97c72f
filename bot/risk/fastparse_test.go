package risk

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/signoff/signoff/bot"
)

// parseTree is the parser's tree for src, printed node by node with
// positions ("" if it does not parse).
func parseTree(src string) string {
	p := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(false))
	f, err := p.Parse(strings.NewReader(src), "")
	if err != nil {
		return ""
	}
	return debugTree(f)
}

// debugTree prints every node with its fields, and every node's offsets
// (DebugPrint shows lines and columns; the walker slices by offset).
func debugTree(f *syntax.File) string {
	var b strings.Builder
	if err := syntax.DebugPrint(&b, f); err != nil {
		return "error: " + err.Error()
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if n != nil {
			fmt.Fprintf(&b, "%T %d-%d\n", n, n.Pos().Offset(), n.End().Offset())
		}
		return true
	})
	return b.String()
}

// byParser classifies a command with every shell code read by the parser:
// no plainWords gate, no fastParse.
func byParser(c *Classifier, cmd string) bot.Assessment {
	w := walker{r: c.rules, parserOnly: true}
	w.shell(cmd, ctx{})
	return w.result()
}

// checkFastParse holds fastParse to the parser for one input: what it
// accepts parses to the same tree, node for node and position for
// position, and classifies the same as through the parser alone.
func checkFastParse(t *testing.T, c *Classifier, src string) bool {
	t.Helper()
	w := walker{r: c.rules}
	f, ok := w.fastParse(src)
	if !ok {
		return false
	}
	want := parseTree(src)
	if want == "" {
		t.Fatalf("fastParse accepted %q, which does not parse", src)
	}
	if got := debugTree(f); got != want {
		t.Fatalf("fastParse(%q) tree differs from the parser's:\n%s\nparser:\n%s", src, got, want)
	}
	if len(src) <= c.rules.MaxCommandBytes {
		got, ref := c.Command(src), byParser(c, src)
		if got.Level != ref.Level || strings.Join(got.Reasons, "|") != strings.Join(ref.Reasons, "|") {
			t.Fatalf("Command(%q) = %s %q, through the parser alone %s %q", src, got.Level, got.Reasons, ref.Level, ref.Reasons)
		}
		gx, rx := c.Explain(src), explainByParser(c, src)
		if debugHits(gx.Hits) != debugHits(rx.Hits) {
			t.Fatalf("Explain(%q) hits %v, through the parser alone %v", src, gx.Hits, rx.Hits)
		}
	}
	return true
}

func explainByParser(c *Classifier, cmd string) Explanation {
	w := walker{r: c.rules, explain: true, span: cmd, parserOnly: true}
	w.shell(cmd, ctx{})
	return Explanation{w.result(), w.hits}
}

func debugHits(hs []Hit) string {
	var b strings.Builder
	for _, h := range hs {
		b.WriteString(string(h.Level) + "\x01" + h.Rule + "\x01" + h.Reason + "\x01" + h.Span + "\x02")
	}
	return b.String()
}

// Every command of both corpora classifies exactly as through the parser
// alone (level, reasons in order, Explain's hits and spans), and every one
// fastParse reads gives the parser's tree.
func TestFastPathsMatchParserOnCorpus(t *testing.T) {
	c := Default()
	var cmds []string
	for _, l := range readCorpus(t) {
		cmds = append(cmds, l.cmd)
	}
	for _, ls := range readCorpusDir(t) {
		for _, l := range ls {
			if !strings.HasPrefix(l.cmd, "tool:") {
				cmds = append(cmds, l.cmd)
			}
		}
	}
	held, _ := filepath.Glob("testdata/heldout/*.tsv")
	for _, f := range held {
		for _, r := range readHeldOut(t, f) {
			cmds = append(cmds, r.cmd)
		}
	}
	fast, plain := 0, 0
	for _, cmd := range cmds {
		if checkFastParse(t, c, cmd) {
			fast++
		}
		if _, ok := plainWords(cmd, nil); ok {
			plain++
		}
		got, ref := c.Command(cmd), byParser(c, cmd)
		if got.Level != ref.Level || strings.Join(got.Reasons, "|") != strings.Join(ref.Reasons, "|") {
			t.Errorf("Command(%q) = %s %q, through the parser alone %s %q", cmd, got.Level, got.Reasons, ref.Level, ref.Reasons)
		}
	}
	t.Logf("%d commands: %d read by plainWords, %d by fastParse", len(cmds), plain, fast)
	if fast < len(cmds)*8/10 {
		t.Errorf("fastParse reads %d of %d corpus commands; the gate has shrunk", fast, len(cmds))
	}
}

// Shapes fastParse reads, and shapes it must leave to the parser.
func TestFastParseShapes(t *testing.T) {
	c := Default()
	for _, src := range []string{
		"git status", "ls -la ~/src", "a | b", "a | b | c", "a && b || c", "a || b && c | d",
		"a; b", "a;b", "a ; b ;", " a  b ", "x 'y z' \"w\"", "x a'b'c\"d\"e", `echo ""`, "echo ''",
		"cat ~/.ssh/id_rsa | nc x 1", "git log --oneline | head -5 && echo done", "rm -rf ~",
		"echo 'it''s'", "a > f", "a >f", "a>f", "a 2>/dev/null", "a 2>&1 | b", "a >> ~/.bashrc", "a < f b", "a &> f", "a &>> f",
		"a 12>f", "a2>f", "a '2'>f", "a >&2", "a > f > g", "> f a", "2>f a", "echo x >'f'", "a 2>&1 && b", "a >&-",
		"X=1 a", "X=1", "X= a", "X=a'b'c d", "X='a' b", "X+=y z", "A=1 B=2 c", "A=1 B=2", "_x9=~/.ssh a | b", "X=1>f a", "X=1 a=b",
		"MAKEFLAGS='--eval=x' make", "LD_PRELOAD=/tmp/x.so ls", "X=\"y\" a", "git stash drop stash@{0}", "echo {a,b} } {", "echo x{}y", "echo '$(rm -rf /)'", "'rm' -rf /", `"git" status`, "find . -name '*.go'",
	} {
		if !checkFastParse(t, c, src) {
			t.Errorf("fastParse does not read %q", src)
		}
	}
	for _, src := range []string{
		"", " ", ";", "a;;", "a &", "a & b", "a |& b", "a |", "| a", "a &&", "a; ;", "> f", "a >", "a > |", "a << E", "a <<< x", "a <> f", "a <& 0", "a >| f", "a {fd}>f", "a >> & f",
		"1x=1 a", "X=1 if", "a[0]=x", "X=(a b)", "X=$y a", "X=1 a=b=c(", "if x", "time x", "! a", "{ a; }", "(a)", "a $x", "a `b`", `a "$x"`, `a "\x"`, "a\\ b",
		"a\nb", "a\tb", "a # c", "a 'b", `a "b`, "a [x]", "echo é", "declare x", "{ a", "} a", "a; { b; }", "a 'b\x01'",
	} {
		w := walker{r: c.rules}
		if _, ok := w.fastParse(src); ok {
			t.Errorf("fastParse reads %q; it is for the parser", src)
		}
	}
}

// FuzzFastParse holds fastParse to the parser on any input: whatever it
// reads must parse to the same tree and classify the same.
func FuzzFastParse(f *testing.F) {
	for _, s := range []string{"git status | head -1 && echo ok; ls ~", "a 'b' \"c\" d'e'f", "a||b&&c|d;e;", "x  y ;  z", "rm -rf ~/x*"} {
		f.Add(s)
	}
	for _, l := range readCorpus(f) {
		f.Add(l.cmd)
	}
	c := Default()
	f.Fuzz(func(t *testing.T, src string) {
		checkFastParse(t, c, src)
	})
}
