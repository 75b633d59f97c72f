package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/signoff/signoff"

// row is one line of docs/architecture.md's layer table.
type row struct {
	layer   string
	any     bool            // "*": any package that is not a test helper
	allowed map[string]bool // relative import paths
	line    int
}

// layerTable reads the table that follows the archtest marker.
func layerTable(t *testing.T, path string) map[string]row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]row{}
	sc := bufio.NewScanner(f)
	in, n := false, 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if strings.Contains(line, "archtest: the table below") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			t.Fatalf("%s:%d: a row has %d cells, want 4 (package, layer, job, may import)", path, n, len(cells))
		}
		pkg := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if pkg == "package" || strings.HasPrefix(pkg, "---") {
			continue
		}
		r := row{layer: strings.TrimSpace(cells[1]), allowed: map[string]bool{}, line: n}
		for _, imp := range strings.Split(cells[3], ",") {
			imp = strings.Trim(strings.TrimSpace(imp), "`")
			switch imp {
			case "—", "-", "":
			case "*":
				r.any = true
			default:
				r.allowed[imp] = true
			}
		}
		if _, dup := rows[pkg]; dup {
			t.Errorf("%s:%d: %s has two rows", path, n, pkg)
		}
		rows[pkg] = r
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no layer table after the archtest marker", path)
	}
	return rows
}

// pkg is what go list says of one package of the module.
type pkg struct {
	ImportPath string
	Imports    []string // not its tests'
	Deps       []string
}

func listModule(t *testing.T, root string) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// violations checks every package against its row and returns what is
// wrong, one line each.
func violations(rows map[string]row, pkgs []pkg) []string {
	var bad []string
	seen := map[string]bool{}
	for _, p := range pkgs {
		name, _ := rel(p.ImportPath)
		seen[name] = true
		r, ok := rows[name]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s has no row in the layer table: add one (its layer, its job, what it may import)", name))
			continue
		}
		for _, imp := range p.Imports {
			ip, own := rel(imp)
			if !own {
				continue
			}
			target, known := rows[ip]
			switch {
			case known && target.layer == "test" && r.layer != "test":
				bad = append(bad, fmt.Sprintf("%s imports %s, a test helper (tests only)", name, ip))
			case r.any || r.allowed[ip]:
			default:
				bad = append(bad, fmt.Sprintf("%s imports %s, which its row (docs/architecture.md:%d) does not allow", name, ip, r.line))
			}
		}
		if r.layer == "domain" {
			for _, d := range p.Deps {
				if dp, own := rel(d); own {
					bad = append(bad, fmt.Sprintf("%s is the domain, yet depends on %s of this module (go list -deps)", name, dp))
				}
			}
		}
	}
	for name := range rows {
		if !seen[name] {
			bad = append(bad, fmt.Sprintf("the layer table has a row for %s, which is not a package of the module", name))
		}
	}
	sort.Strings(bad)
	return bad
}

// TestImportsFollowTheLayerTable: every package of the module imports only
// what docs/architecture.md's layer table allows it.
func TestImportsFollowTheLayerTable(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rows := layerTable(t, filepath.Join(root, "docs", "architecture.md"))
	for _, v := range violations(rows, listModule(t, root)) {
		t.Error(v)
	}
}

// TestLayerCheckCatchesABrokenRule: the check itself fails on each kind of
// break, so a table that allows everything by mistake is noticed.
func TestLayerCheckCatchesABrokenRule(t *testing.T) {
	rows := map[string]row{
		"bot":             {layer: "domain", allowed: map[string]bool{}},
		"bot/risk":        {layer: "policy", allowed: map[string]bool{"bot": true}},
		"bot/bottest":     {layer: "test", allowed: map[string]bool{"bot": true}},
		"cmd/signoff":     {layer: "wiring", any: true},
		"bot/permissions": {layer: "policy", allowed: map[string]bool{"bot": true}},
	}
	pkgs := []pkg{
		{ImportPath: module + "/bot", Deps: []string{module + "/bot/steptrace"}},
		{ImportPath: module + "/bot/risk", Imports: []string{module + "/bot", module + "/quorum/redis"}},
		{ImportPath: module + "/cmd/signoff", Imports: []string{module + "/bot/bottest"}},
		{ImportPath: module + "/bot/bottest", Imports: []string{module + "/bot"}},
		{ImportPath: module + "/bot/new"},
	}
	got, want := violations(rows, pkgs), []string{
		"bot is the domain, yet depends on bot/steptrace of this module (go list -deps)",
		"bot/new has no row in the layer table: add one (its layer, its job, what it may import)",
		"bot/risk imports quorum/redis, which its row (docs/architecture.md:0) does not allow",
		"cmd/signoff imports bot/bottest, a test helper (tests only)",
		"the layer table has a row for bot/permissions, which is not a package of the module",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
