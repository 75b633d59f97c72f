package netpolicy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const examplePolicy = "../../configs/network/policy.yaml"

func mustParse(t *testing.T, src string) Policy {
	t.Helper()
	p, ps := Parse("p.yaml", []byte(src))
	if len(ps) > 0 {
		t.Fatalf("Parse: %v", ps)
	}
	return p
}

func TestExamplePolicyParses(t *testing.T) {
	data, err := os.ReadFile(examplePolicy)
	if err != nil {
		t.Fatal(err)
	}
	p, ps := Parse(examplePolicy, data)
	if len(ps) > 0 {
		t.Fatalf("example policy: %v", ps)
	}
	if len(p.Hosts) != 4 {
		t.Fatalf("got %d entries, want 4", len(p.Hosts))
	}
}

func TestParseProblemsHaveLines(t *testing.T) {
	cases := []struct {
		name, src string
		line      int
		want      string
	}{
		{"unknown top key", "hostz: []\n", 1, `unknown key "hostz"`},
		{"not a list", "hosts: 3\n", 1, "must be a list"},
		{"bad port", "hosts:\n  - host: a.com\n    port: 70000\n    access: read-only\n", 3, "port must be a number"},
		{"port zero", "hosts:\n  - host: a.com\n    port: 0\n    access: read-only\n", 3, "port must be a number"},
		{"bad access", "hosts:\n  - host: a.com\n    port: 1\n    access: all\n", 4, "access must be"},
		{"missing host", "hosts:\n  - port: 1\n    access: read-only\n", 2, "entry has no host"},
		{"unknown entry key", "hosts:\n  - host: a.com\n    port: 1\n    access: read-only\n    verbs: [GET]\n", 5, `unknown key "verbs"`},
		{"bad host", "hosts:\n  - host: a..com\n    port: 1\n    access: read-only\n", 2, "empty or over-long label"},
		{"host with port", "hosts:\n  - host: a.com:443\n    port: 1\n    access: read-only\n", 2, "not a name or an IP"},
		{"wildcard inside", "hosts:\n  - host: a.*.com\n    port: 1\n    access: read-only\n", 2, "wildcard may only be the first label"},
		{"methods on read-only", "hosts:\n  - host: a.com\n    port: 1\n    access: read-only\n    methods: [POST]\n", 2, "methods belong to read-write"},
		{"path without slash", "hosts:\n  - host: a.com\n    port: 1\n    access: read-only\n    paths: [x]\n", 2, "must start with /"},
		{"duplicate", "hosts:\n  - {host: a.com, port: 1, access: read-only}\n  - {host: a.com, port: 1, access: read-write}\n", 3, "listed twice (first at line 2)"},
		{"yaml syntax", "hosts:\n  - host: [a\n", 1, "did not find expected"},
		{"two documents", "hosts: []\n---\nhosts: []\n", 2, "one document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ps := Parse("p.yaml", []byte(c.src))
			if len(ps) == 0 {
				t.Fatalf("no problem reported")
			}
			if ps[0].Line != c.line || !strings.Contains(ps[0].Message, c.want) {
				t.Fatalf("got %v, want line %d with %q", ps, c.line, c.want)
			}
			if !strings.HasPrefix(ps.Error(), "p.yaml:") {
				t.Fatalf("problem does not name the file: %v", ps)
			}
		})
	}
}

func TestMatching(t *testing.T) {
	p := mustParse(t, `hosts:
  - {host: pypi.org, port: 443, access: read-only}
  - {host: "*.example.com", port: 80, access: read-write, methods: [POST], paths: ["/api/*"]}
  - {host: git.local, port: 8080, access: read-write, programs: [git, /opt/bin/tool]}
`)
	cases := []struct {
		name string
		d    Dest
		want bool
	}{
		{"read-only GET", Dest{Host: "pypi.org", Port: 443, Method: "GET", Path: "/simple/"}, true},
		{"read-only HEAD any path", Dest{Host: "pypi.org", Port: 443, Method: "HEAD"}, true},
		{"read-only refuses POST", Dest{Host: "pypi.org", Port: 443, Method: "POST", Path: "/x"}, false},
		{"read-only is not every method", Dest{Host: "pypi.org", Port: 443}, false},
		{"other port", Dest{Host: "pypi.org", Port: 80, Method: "GET", Path: "/"}, false},
		{"wildcard subdomain", Dest{Host: "a.example.com", Port: 80, Method: "POST", Path: "/api/v1"}, true},
		{"wildcard deep subdomain", Dest{Host: "a.b.example.com", Port: 80, Method: "POST", Path: "/api/"}, true},
		{"wildcard not the bare domain", Dest{Host: "example.com", Port: 80, Method: "POST", Path: "/api/x"}, false},
		{"wildcard not a suffix lookalike", Dest{Host: "badexample.com", Port: 80, Method: "POST", Path: "/api/x"}, false},
		{"method not listed", Dest{Host: "a.example.com", Port: 80, Method: "GET", Path: "/api/x"}, false},
		{"path outside", Dest{Host: "a.example.com", Port: 80, Method: "POST", Path: "/admin"}, false},
		{"program by name", Dest{Host: "git.local", Port: 8080, Program: "/usr/bin/git"}, true},
		{"program by path", Dest{Host: "git.local", Port: 8080, Program: "/opt/bin/tool"}, true},
		{"other program", Dest{Host: "git.local", Port: 8080, Program: "/usr/bin/curl"}, false},
		{"unknown program", Dest{Host: "git.local", Port: 8080}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, got := p.Allows(c.d); got != c.want {
				t.Fatalf("Allows(%+v) = %v, want %v", c.d, got, c.want)
			}
		})
	}
	if _, ok := p.AllowsTunnel("pypi.org", 443, ""); ok {
		t.Fatal("a read-only entry opened a plain CONNECT tunnel: its methods would not be checked")
	}
	if _, k := p.Tunnel("pypi.org", 443, ""); k != TunnelInspected {
		t.Fatalf("a read-only entry's CONNECT is %v, want inspected", k)
	}
	if _, ok := p.AllowsCall("pypi.org", 443, "", "DELETE", "/"); ok {
		t.Fatal("a read-only entry let DELETE through")
	}
}

func TestDerive(t *testing.T) {
	base := mustParse(t, `hosts:
  - {host: pypi.org, port: 443, access: read-only, paths: ["/simple/*"]}
  - {host: api.x.com, port: 443, access: read-write, methods: [POST], paths: ["/a"]}
`)
	cases := []struct {
		name  string
		d     Dest
		kind  ChangeKind
		entry string
	}{
		{"already allowed", Dest{Host: "pypi.org", Port: 443, Method: "GET", Path: "/simple/x"}, AlreadyAllowed, "pypi.org:443 read-only paths /simple/*"},
		{"GET adds read-only", Dest{Host: "b.com", Port: 443, Method: "GET", Path: "/f"}, Added, "b.com:443 read-only paths /f"},
		{"HEAD without path", Dest{Host: "b.com", Port: 443, Method: "HEAD"}, Added, "b.com:443 read-only"},
		{"write adds read-write with method and path", Dest{Host: "b.com", Port: 443, Method: "PUT", Path: "/u"}, Added, "b.com:443 read-write methods PUT paths /u"},
		{"no method opens every method", Dest{Host: "b.com", Port: 22, Program: "/usr/bin/ssh"}, Added, "b.com:22 read-write every method programs /usr/bin/ssh"},
		{"widen paths", Dest{Host: "pypi.org", Port: 443, Method: "GET", Path: "/pypi/x/json"}, Widened, "pypi.org:443 read-only paths /simple/*,/pypi/x/json"},
		{"widen read-only to a write", Dest{Host: "pypi.org", Port: 443, Method: "POST", Path: "/legacy/"}, Widened, "pypi.org:443 read-write methods GET,HEAD,OPTIONS,POST paths /simple/*,/legacy/"},
		{"widen methods", Dest{Host: "api.x.com", Port: 443, Method: "DELETE", Path: "/a"}, Widened, "api.x.com:443 read-write methods POST,DELETE paths /a"},
		{"widen to every method", Dest{Host: "api.x.com", Port: 443}, Widened, "api.x.com:443 read-write every method"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.d.Normalize(); err != nil {
				t.Fatal(err)
			}
			got, ch := Derive(base, c.d)
			if ch.Kind != c.kind || ch.Entry.String() != c.entry {
				t.Fatalf("got %s %q, want %s %q", ch.Kind, ch.Entry.String(), c.kind, c.entry)
			}
			if _, ok := got.Allows(c.d); !ok {
				t.Fatalf("derived policy does not allow %+v", c.d)
			}
			if c.kind != Added && len(got.Hosts) != len(base.Hosts) {
				t.Fatalf("%s added an entry: %v", c.kind, got.Hosts)
			}
			if base.Hosts[0].String() != "pypi.org:443 read-only paths /simple/*" {
				t.Fatal("Derive modified its input")
			}
		})
	}
}

func TestDiffIsExact(t *testing.T) {
	a := mustParse(t, "hosts:\n  - {host: a.com, port: 443, access: read-only}\n  - {host: b.com, port: 443, access: read-only}\n")
	d := Dest{Host: "b.com", Port: 443, Method: "POST", Path: "/p"}
	b, _ := Derive(a, d)
	got := Diff(a, b)
	want := []string{"- b.com:443 read-only", "+ b.com:443 read-write methods GET,HEAD,OPTIONS,POST"}
	if !slices.Equal(got, want) {
		t.Fatalf("Diff = %q, want %q", got, want)
	}
	if len(Diff(a, a)) != 0 {
		t.Fatal("equal policies differ")
	}
}

func TestBoundary(t *testing.T) {
	b, ps := ParseBoundary("boundary", []byte("# allowed\n*.pypi.org:443\npypi.org:443\ngithub.com:*\n[::1]:8080\n"))
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	cases := []struct {
		host string
		port int
		want bool
	}{
		{"pypi.org", 443, true}, {"files.pypi.org", 443, true}, {"*.pypi.org", 443, true}, {"*.a.pypi.org", 443, true},
		{"pypi.org", 80, false}, {"evil.org", 443, false}, {"github.com", 22, true}, {"*.github.com", 443, false},
		{"::1", 8080, true}, {"::1", 8081, false},
	}
	for _, c := range cases {
		if got := b.Allows(c.host, c.port); got != c.want {
			t.Errorf("Allows(%s, %d) = %v, want %v", c.host, c.port, got, c.want)
		}
	}
	var none *Boundary
	if !none.Allows("anything.com", 1) {
		t.Fatal("no boundary must allow everything")
	}
	_, ps = ParseBoundary("boundary", []byte("ok.com:443\nnoport.com\nbad..com:1\nx.com:99999\n"))
	if len(ps) != 3 || ps[0].Line != 2 || ps[1].Line != 3 || ps[2].Line != 4 {
		t.Fatalf("problems = %v, want lines 2, 3, 4", ps)
	}
}

func TestHostForms(t *testing.T) {
	good := map[string]string{
		"PyPI.org.": "pypi.org", "127.0.0.1": "127.0.0.1", "[::1]": "::1", "::1": "::1", "a-b.c_d.com": "a-b.c_d.com",
	}
	for in, want := range good {
		if got, err := NormalizeHost(in); err != nil || got != want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a..b", "-a.com", "a.com:80", "user@a.com", "a/b", "*.a.com", "1.2.3.4.5", "0x7f", "fe80::1%eth0",
		strings.Repeat("a", 64) + ".com", strings.Repeat("a.", 130) + "com", "a b.com", "ä.com"} {
		if got, err := NormalizeHost(in); err == nil {
			t.Errorf("NormalizeHost(%q) = %q, want an error", in, got)
		}
	}
	hp := []struct {
		in   string
		host string
		port int
		ok   bool
	}{
		{"pypi.org:443", "pypi.org", 443, true}, {"[::1]:8080", "::1", 8080, true}, {"a.com", "a.com", 80, true},
		{"a.com:0", "", 0, false}, {"a.com:65536", "", 0, false}, {"a.com:-1", "", 0, false}, {"a.com:+80", "", 0, false},
		{"a.com:080", "", 0, false}, {":443", "", 0, false}, {"a.com:", "", 0, false}, {"[::1]", "::1", 80, true}, {"::1:80", "", 0, false},
	}
	for _, c := range hp {
		h, p, err := SplitHostPort(c.in, 80)
		if (err == nil) != c.ok || h != c.host || p != c.port {
			t.Errorf("SplitHostPort(%q) = %q, %d, %v; want %q, %d, ok=%v", c.in, h, p, err, c.host, c.port, c.ok)
		}
	}
	if _, _, err := SplitHostPort("a.com", 0); err == nil {
		t.Error("a destination without a port was accepted where one is required")
	}
}

func TestDestNormalizeRefusesBadInput(t *testing.T) {
	for _, d := range []Dest{
		{Host: "a.com", Port: 0}, {Host: "a.com", Port: 65536}, {Host: "", Port: 1}, {Host: "a.com", Port: 1, Method: "G E T"},
		{Host: "a.com", Port: 1, Method: "CONNECT"}, {Host: "a.com", Port: 1, Path: "/x"},
		{Host: "a.com", Port: 1, Method: "GET", Path: "/" + strings.Repeat("a", MaxPathLen)},
		{Host: "a.com", Port: 1, Method: "GET", Path: "x"}, {Host: "a.com", Port: 1, Method: "GET", Path: "/a*"},
		{Host: "a.com", Port: 1, Program: "a\nb"}, {Host: "a.com", Port: 1, Program: "/usr/bin/\u202ecurl"},
		{Host: "a.com", Port: 1, Program: "/x\x1b[2J"}, {Host: "a.com", Port: 1, Method: "GET", Path: "/\x1b[2J"},
		{Host: "a.com", Port: 1, Method: "GET", Path: "/ä"},
	} {
		if err := d.Normalize(); err == nil {
			t.Errorf("Normalize(%+v) accepted bad input", d)
		}
	}
}

func TestGlob(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"/a", "/a", true}, {"/a", "/ab", false}, {"/a/*", "/a/b/c", true}, {"/a/*", "/a", false}, {"*", "", true},
		{"/*/x", "/a/b/x", true}, {"/*/x", "/a/b/y", false}, {"/a*b*c", "/aXbYc", true}, {"/a*b*c", "/aXbY", false},
	}
	for _, c := range cases {
		if got := Glob(c.p, c.s); got != c.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
	long := "/" + strings.Repeat("a", MaxPathLen)
	if Glob("/*a*a*a*a*a*a*a*b", long) {
		t.Error("matched")
	}
}

func TestEditFileKeepsCommentsAndStyle(t *testing.T) {
	data, err := os.ReadFile(examplePolicy)
	if err != nil {
		t.Fatal(err)
	}
	d := Dest{Host: "proxy.golang.org", Port: 443, Method: "GET", Path: "/x"}
	out, ch, err := EditFile("policy.yaml", data, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Kind != Added {
		t.Fatalf("change %s, want added", ch.Kind)
	}
	for _, comment := range []string{"# The network doors", "# Python packages.", "# wheels and sdists", "# Reading code from GitHub"} {
		if !strings.Contains(string(out), comment) {
			t.Errorf("comment %q lost:\n%s", comment, out)
		}
	}
	if !strings.Contains(string(out), "  - host: proxy.golang.org\n    port: 443\n    access: read-only\n    paths: [/x]\n") {
		t.Errorf("new entry not in the file's style:\n%s", out)
	}
	if !strings.HasPrefix(string(out), string(data[:strings.Index(string(data), "  - host: api.github.com")])) {
		t.Errorf("the file before the new entry changed:\n%s", out)
	}

	// Widening keeps the entry's own line comment.
	out, ch, err = EditFile("policy.yaml", data, Dest{Host: "files.pythonhosted.org", Port: 443, Method: "GET", Path: "/x"}, nil)
	if err != nil || ch.Kind != AlreadyAllowed || string(out) != string(data) {
		t.Fatalf("already allowed: %v %s, data changed=%v", err, ch.Kind, string(out) != string(data))
	}
	out, ch, err = EditFile("policy.yaml", data, Dest{Host: "files.pythonhosted.org", Port: 443, Method: "PUT", Path: "/up"}, nil)
	if err != nil || ch.Kind != Widened {
		t.Fatalf("widen: %v %s", err, ch.Kind)
	}
	if !strings.Contains(string(out), "access: read-write # wheels and sdists\n    methods: [GET, HEAD, OPTIONS, PUT]\n") {
		t.Errorf("widened entry:\n%s", out)
	}
}

func TestEditFileRefusesWhatWouldBeInvalid(t *testing.T) {
	bad := []byte("hosts:\n  - host: a.com\n    port: 99999\n    access: read-only\n")
	if _, _, err := EditFile("policy.yaml", bad, Dest{Host: "b.com", Port: 443}, nil); err == nil || !strings.Contains(err.Error(), "policy.yaml:3") {
		t.Fatalf("an invalid file was edited: %v", err)
	}
	b, _ := ParseBoundary("boundary", []byte("*.pypi.org:443\n"))
	data, _ := os.ReadFile(examplePolicy)
	_, _, err := EditFile("policy.yaml", data, Dest{Host: "evil.com", Port: 443}, b)
	if err == nil || !strings.Contains(err.Error(), "evil.com:443 is outside the network boundary") {
		t.Fatalf("edit outside the boundary: %v", err)
	}
}

func TestEditFileEmptyAndMissingHosts(t *testing.T) {
	for _, src := range []string{"", "# only a comment\n", "hosts:\n", "hosts: []\n"} {
		out, ch, err := EditFile("p.yaml", []byte(src), Dest{Host: "a.com", Port: 443, Method: "GET"}, nil)
		if err != nil || ch.Kind != Added {
			t.Fatalf("%q: %v %s", src, err, ch.Kind)
		}
		p := mustParse(t, string(out))
		if len(p.Hosts) != 1 || p.Hosts[0].String() != "a.com:443 read-only" {
			t.Fatalf("%q → %q", src, out)
		}
		if strings.HasPrefix(src, "#") && !strings.Contains(string(out), "# only a comment") {
			t.Fatalf("comment lost: %q", out)
		}
	}
}

func TestCheckCopy(t *testing.T) {
	d := Dest{Host: "b.com", Port: 443, Method: "GET"}
	if _, err := CheckCopy("copy.yaml", []byte("hosts:\n  - {host: b.com, port: 443, access: read-only}\n"), Policy{}, d, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckCopy("copy.yaml", []byte("hosts:\n  - {host: c.com, port: 443, access: read-only}\n"), Policy{}, d, nil); err == nil || !strings.Contains(err.Error(), "does not let the request through") {
		t.Fatalf("a copy that does not cover the request: %v", err)
	}
	if _, err := CheckCopy("copy.yaml", []byte("hosts:\n  - {host: b.com, port: 443, access: readonly}\n"), Policy{}, d, nil); err == nil || !strings.Contains(err.Error(), "copy.yaml:2") {
		t.Fatalf("an invalid copy: %v", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "new" || st.Mode().Perm() != 0o600 {
		t.Fatalf("got %q mode %v", b, st.Mode())
	}
}

func TestLineDiff(t *testing.T) {
	a := "a\nb\nc\nd\ne\nf\ng\n"
	b := "a\nb\nc\nd\nX\ne\nf\ng\n"
	got := LineDiff(a, b)
	want := []string{"  c", "  d", "+ X", "  e", "  f"}
	if !slices.Equal(got, want) {
		t.Fatalf("LineDiff = %q, want %q", got, want)
	}
	if len(LineDiff(a, a)) != 0 {
		t.Fatal("equal texts differ")
	}
}

func TestExampleBoundaryParses(t *testing.T) {
	data, err := os.ReadFile("../../configs/network/boundary")
	if err != nil {
		t.Fatal(err)
	}
	b, ps := ParseBoundary("boundary", data)
	if len(ps) > 0 || !b.Allows("pypi.org", 443) || b.Allows("evil.example", 443) {
		t.Fatalf("example boundary: %v", ps)
	}
}

func TestDoorPolicy(t *testing.T) {
	p, err := DoorPolicy([]string{"pypi.org:443", "*.pythonhosted.org:443", "[::1]:8080"})
	if err != nil {
		t.Fatal(err)
	}
	if got := Diff(Policy{}, p); !slices.Equal(got, []string{"+ pypi.org:443 read-write every method", "+ *.pythonhosted.org:443 read-write every method", "+ [::1]:8080 read-write every method"}) {
		t.Fatalf("doors → %q", got)
	}
	for _, bad := range []string{"*:443", "pypi.org:*", "pypi.org", "pypi.org:0", "a..b:1"} {
		if _, err := DoorPolicy([]string{bad}); err == nil {
			t.Errorf("door %q accepted", bad)
		}
	}
	base := mustParse(t, "hosts:\n  - {host: pypi.org, port: 443, access: read-write}\n")
	if w := base.With(p); len(w.Hosts) != 3 || len(base.Hosts) != 1 {
		t.Fatalf("With: %v (base %v)", w.Hosts, base.Hosts)
	}
}
