package netpolicy

import "strings"

// Diff lists what changed from a to b, one entry a line: "- old" for an
// entry removed or changed, "+ new" for one added or changed, in b's
// order. Equal policies give no lines.
func Diff(a, b Policy) []string {
	out := []string{}
	inB := map[string]bool{}
	for _, e := range b.Hosts {
		inB[e.String()] = true
	}
	inA := map[string]bool{}
	for _, e := range a.Hosts {
		inA[e.String()] = true
		if !inB[e.String()] {
			out = append(out, "- "+e.String())
		}
	}
	for _, e := range b.Hosts {
		if !inA[e.String()] {
			out = append(out, "+ "+e.String())
		}
	}
	return out
}

// NewEntries returns the entries of b that are not, as written, in a: what a
// new revision opens or changes.
func NewEntries(a, b Policy) Policy {
	in := map[string]bool{}
	for _, e := range a.Hosts {
		in[e.String()] = true
	}
	out := Policy{Hosts: []Entry{}}
	for _, e := range b.Hosts {
		if !in[e.String()] {
			out.Hosts = append(out.Hosts, e)
		}
	}
	return out
}

// LineDiff shows how text a became b, line by line ("  " kept, "- "
// removed, "+ " added), with up to two lines of context around changes.
func LineDiff(a, b string) []string {
	x, y := strings.Split(strings.TrimSuffix(a, "\n"), "\n"), strings.Split(strings.TrimSuffix(b, "\n"), "\n")
	// Longest common subsequence; policy files are small.
	if len(x)*len(y) > 4_000_000 {
		return []string{"(files too large to compare line by line)"}
	}
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var all []string
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			all = append(all, "  "+x[i])
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			all = append(all, "+ "+y[j])
			j++
		default:
			all = append(all, "- "+x[i])
			i++
		}
	}
	var out []string
	for k, l := range all {
		near := false
		for m := max(0, k-2); m <= min(len(all)-1, k+2); m++ {
			if !strings.HasPrefix(all[m], "  ") {
				near = true
			}
		}
		if near {
			if len(out) > 0 && k > 0 && !nearChange(all, k-1) {
				out = append(out, "  …")
			}
			out = append(out, l)
		}
	}
	return out
}

func nearChange(all []string, k int) bool {
	for m := max(0, k-2); m <= min(len(all)-1, k+2); m++ {
		if !strings.HasPrefix(all[m], "  ") {
			return true
		}
	}
	return false
}
