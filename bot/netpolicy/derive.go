package netpolicy

import (
	"slices"
)

// ChangeKind says what an approval did to the policy.
type ChangeKind string

const (
	Added          ChangeKind = "added"
	Widened        ChangeKind = "widened"
	AlreadyAllowed ChangeKind = "already allowed"
	Replaced       ChangeKind = "replaced" // --policy-from: an edited copy
)

// Change is what approving a destination does to a policy.
type Change struct {
	Kind ChangeKind `json:"kind"`
	// Index is the entry added, widened, or that already allows; -1 for
	// a replaced policy.
	Index  int    `json:"index"`
	Entry  Entry  `json:"entry"`
	Before *Entry `json:"before,omitempty"` // a widened entry as it was
}

// Narrowest is the smallest entry that lets d through: GET, HEAD or
// OPTIONS → read-only; another method → read-write with that method; no
// method → every method; the path and the program when named.
func Narrowest(d Dest) Entry {
	e := Entry{Host: d.Host, Port: d.Port, Access: ReadWrite}
	switch {
	case d.Method == "":
	case slices.Contains(ReadOnlyMethods, d.Method):
		e.Access = ReadOnly
	default:
		e.Methods = []string{d.Method}
	}
	if d.Path != "" {
		e.Paths = []string{d.Path}
	}
	if d.Program != "" {
		e.Programs = []string{d.Program}
	}
	return e
}

// Derive returns p with d let through: unchanged when p already allows d;
// else the entry for the same host and port widened just enough; else
// with the narrowest entry added at the end. p is not modified.
func Derive(p Policy, d Dest) (Policy, Change) {
	if i, ok := p.Allows(d); ok {
		return p, Change{Kind: AlreadyAllowed, Index: i, Entry: p.Hosts[i]}
	}
	out := p.Clone()
	for i, e := range out.Hosts {
		if e.Host != d.Host || e.Port != d.Port {
			continue
		}
		before := p.Clone().Hosts[i]
		widen(&e, d)
		out.Hosts[i] = e
		return out, Change{Kind: Widened, Index: i, Entry: e, Before: &before}
	}
	e := Narrowest(d)
	out.Hosts = append(out.Hosts, e)
	return out, Change{Kind: Added, Index: len(out.Hosts) - 1, Entry: e}
}

// widen makes e let d through, opening no more than d needs beyond what
// the entry's shape forces (one list of methods and one of paths).
func widen(e *Entry, d Dest) {
	if len(e.Programs) > 0 && !e.matchProgram(d.Program) {
		if d.Program == "" {
			e.Programs = nil
		} else {
			e.Programs = append(e.Programs, d.Program)
		}
	}
	if d.Method == "" {
		e.Access, e.Methods, e.Paths = ReadWrite, nil, nil
		return
	}
	if !e.allowsMethod(d.Method) {
		if e.Access == ReadOnly {
			e.Access = ReadWrite
			e.Methods = append(slices.Clone(ReadOnlyMethods), d.Method)
		} else {
			e.Methods = append(e.Methods, d.Method)
		}
	}
	switch {
	case d.Path == "":
		e.Paths = nil
	case !e.allowsPath(d.Path):
		e.Paths = append(e.Paths, d.Path)
	}
}
