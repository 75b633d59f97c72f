package netpolicy

import (
	"os"
	"testing"
)

func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(examplePolicy); err == nil {
		f.Add(data)
	}
	f.Add([]byte("hosts:\n  - {host: \"*.a.com\", port: 443, access: read-write, methods: [POST], paths: [\"/a/*\"], programs: [git]}\n"))
	f.Add([]byte("hosts: [&a {host: a.com}, *a]\n"))
	f.Add([]byte("hosts:\n  - host: !!binary aGk=\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, ps := Parse("f.yaml", data)
		if len(ps) > 0 {
			for _, pr := range ps {
				if pr.Message == "" {
					t.Fatal("a problem without a message")
				}
			}
			return
		}
		// A policy that parses is canonical: checking it again changes nothing,
		// and editing it in keeps it valid.
		q := p.Clone()
		if err := q.Check(); err != nil {
			t.Fatalf("parsed policy fails its own check: %v", err)
		}
		if len(Diff(p, q)) != 0 {
			t.Fatal("Check changed a parsed policy")
		}
		if out, _, err := editForFuzz("f.yaml", data, Dest{Host: "fuzz.example", Port: 443, Method: "GET"}, nil); err == nil {
			if _, ps := Parse("f.yaml", out); len(ps) > 0 {
				t.Fatalf("EditFile produced an invalid file: %v", ps)
			}
		}
	})
}

func FuzzSplitHostPort(f *testing.F) {
	for _, s := range []string{"pypi.org:443", "[::1]:80", "a.com", "a.com:0", "[::1", "1.2.3.4:65535", "*.a.com:1", "a%00.com:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, p, err := SplitHostPort(s, 80)
		if err != nil {
			return
		}
		if p < 1 || p > 65535 {
			t.Fatalf("port %d accepted from %q", p, s)
		}
		h2, p2, err := SplitHostPort(JoinHostPort(h, p), 0)
		if err != nil || h2 != h || p2 != p {
			t.Fatalf("%q → %q %d does not round-trip: %q %d %v", s, h, p, h2, p2, err)
		}
	})
}

func FuzzBoundary(f *testing.F) {
	f.Add([]byte("*.pypi.org:443\ngithub.com:*\n[::1]:8080\n# c\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, ps := ParseBoundary("b", data)
		if len(ps) == 0 && b == nil {
			t.Fatal("no boundary and no problem")
		}
	})
}

var editForFuzz = func(file string, data []byte, d Dest, b *Boundary) ([]byte, Change, error) {
	if os.Getenv("FUZZ_NO_EDIT") != "" {
		return nil, Change{}, os.ErrInvalid
	}
	return EditFile(file, data, d, b)
}
