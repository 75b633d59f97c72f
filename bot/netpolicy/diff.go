package netpolicy

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
