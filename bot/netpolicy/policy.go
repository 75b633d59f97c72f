package netpolicy

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Access is what an entry lets through on plain HTTP.
type Access string

const (
	// ReadOnly lets through GET, HEAD and OPTIONS.
	ReadOnly Access = "read-only"
	// ReadWrite lets through the entry's methods (every method when it
	// names none).
	ReadWrite Access = "read-write"
)

// ReadOnlyMethods are the methods read-only access allows.
var ReadOnlyMethods = []string{"GET", "HEAD", "OPTIONS"}

// Entry is one door: a host (or *.domain), a port, what may pass.
type Entry struct {
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Access Access `json:"access"`
	// Methods narrows read-write access; empty: every method.
	Methods []string `json:"methods,omitempty"`
	// Paths narrows either access (path patterns, * matches anything);
	// empty: every path.
	Paths []string `json:"paths,omitempty"`
	// Programs that may use the door (a full path, or a name matched
	// against the program's file name); empty: any program.
	Programs []string `json:"programs,omitempty"`
}

// Policy is the set of doors.
type Policy struct {
	Hosts []Entry `json:"hosts"`
}

// Dest is what a request asks for, or what the proxy sees.
type Dest struct {
	Host string `json:"host"`
	Port int    `json:"port"`
	// Program is the executable's path; "" when it cannot be known.
	Program string `json:"program,omitempty"`
	// Method and Path name one kind of call. With no method the request
	// asks for every method (and every path) on the host and port.
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	// Extension names the extension whose token the client carried at
	// the proxy (a label for the person; it opens nothing by itself).
	Extension string `json:"extension,omitempty"`
}

// Revision is one numbered state of the policy: what it is, what changed,
// who made it, when and why.
type Revision struct {
	N       int       `json:"n"`
	Policy  Policy    `json:"policy"`
	Diff    []string  `json:"diff"`
	By      []string  `json:"by,omitempty"`
	At      time.Time `json:"at"`
	Request string    `json:"request,omitempty"`
	Why     string    `json:"why"`
	// Change and Entry say what an approval did: the entry added or
	// widened (none for a replaced policy).
	Change ChangeKind `json:"change,omitempty"`
	Entry  string     `json:"entry,omitempty"`
}

// Normalize checks d and puts it in canonical form.
func (d *Dest) Normalize() error {
	h, err := NormalizeHost(d.Host)
	if err != nil {
		return err
	}
	d.Host = h
	if d.Port < 1 || d.Port > 65535 {
		return fmt.Errorf("port %d is not from 1 to 65535", d.Port)
	}
	if len(d.Program) > 4096 || !shownAsIs(d.Program) {
		return fmt.Errorf("program must be a path of at most 4096 bytes of printable characters")
	}
	if len(d.Extension) > 64 || !shownAsIs(d.Extension) {
		return fmt.Errorf("extension must be a name of at most 64 printable characters")
	}
	if d.Method != "" {
		m, err := normalizeMethod(d.Method)
		if err != nil {
			return err
		}
		d.Method = m
	}
	if d.Path != "" {
		if d.Method == "" {
			return fmt.Errorf("a path needs a method (--method GET --path %s)", clip(d.Path))
		}
		if err := checkPath(d.Path, false); err != nil {
			return err
		}
	}
	return nil
}

func normalizeMethod(m string) (string, error) {
	u := strings.ToUpper(m)
	if len(u) == 0 || len(u) > 20 || strings.Trim(u, "ABCDEFGHIJKLMNOPQRSTUVWXYZ-") != "" {
		return "", fmt.Errorf("method %q is not an HTTP method", clip(m))
	}
	if u == "CONNECT" {
		return "", fmt.Errorf("method CONNECT is what the proxy sees for HTTPS: ask for the host and port without a method")
	}
	return u, nil
}

func checkPath(p string, pattern bool) error {
	switch {
	case len(p) > MaxPathLen:
		return fmt.Errorf("path is longer than %d bytes", MaxPathLen)
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q must start with /", clip(p))
	case strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '?' || r == '#' }):
		return fmt.Errorf("path %q must be printable ASCII (%%-encoded) without a space, ? or #", clip(p))
	case !pattern && strings.Contains(p, "*"):
		return fmt.Errorf("path %q: a request names one path, without *", clip(p))
	}
	return nil
}

// Check validates an entry and puts it in canonical form.
func (e *Entry) Check() error {
	h, err := NormalizePattern(e.Host)
	if err != nil {
		return err
	}
	e.Host = h
	if e.Port < 1 || e.Port > 65535 {
		return fmt.Errorf("port %d is not from 1 to 65535", e.Port)
	}
	switch e.Access {
	case ReadOnly:
		if len(e.Methods) > 0 {
			return fmt.Errorf("%s: read-only allows GET, HEAD and OPTIONS; methods belong to read-write", e.Key())
		}
	case ReadWrite:
	default:
		return fmt.Errorf("%s: access %q is not read-only or read-write", e.Key(), e.Access)
	}
	for i, m := range e.Methods {
		if e.Methods[i], err = normalizeMethod(m); err != nil {
			return fmt.Errorf("%s: %v", e.Key(), err)
		}
	}
	for _, p := range e.Paths {
		if err := checkPath(p, true); err != nil {
			return fmt.Errorf("%s: %v", e.Key(), err)
		}
	}
	for _, p := range e.Programs {
		if p == "" || len(p) > 4096 || !shownAsIs(p) || strings.Contains(p, "*") {
			return fmt.Errorf("%s: program %q must be a path or a file name", e.Key(), clip(p))
		}
	}
	return nil
}

// Key names the entry's door: host:port.
func (e Entry) Key() string { return JoinHostPort(e.Host, e.Port) }

func (e Entry) matchProgram(program string) bool {
	if len(e.Programs) == 0 {
		return true
	}
	if program == "" {
		return false
	}
	for _, p := range e.Programs {
		if p == program || !strings.Contains(p, "/") && p == path.Base(program) {
			return true
		}
	}
	return false
}

func (e Entry) methods() []string {
	if e.Access == ReadOnly {
		return ReadOnlyMethods
	}
	return e.Methods // nil: every method
}

func (e Entry) allowsMethod(m string) bool {
	ms := e.methods()
	return ms == nil || slices.Contains(ms, m)
}

func (e Entry) allowsPath(p string) bool {
	if len(e.Paths) == 0 {
		return true
	}
	for _, pat := range e.Paths {
		if Glob(pat, p) {
			return true
		}
	}
	return false
}

// allowsEvery reports whether e lets through every method and path.
func (e Entry) allowsEvery() bool {
	return e.Access == ReadWrite && len(e.Methods) == 0 && len(e.Paths) == 0
}

// Allows reports whether e lets d through; a d without a method asks for
// every method and path.
func (e Entry) Allows(d Dest) bool {
	if e.Port != d.Port || !MatchHost(e.Host, d.Host) || !e.matchProgram(d.Program) {
		return false
	}
	if d.Method == "" {
		return e.allowsEvery()
	}
	return e.allowsMethod(d.Method) && (d.Path == "" && len(e.Paths) == 0 || d.Path != "" && e.allowsPath(d.Path))
}

// Allows returns the index of the first entry that lets d through.
func (p Policy) Allows(d Dest) (int, bool) {
	for i, e := range p.Hosts {
		if e.Allows(d) {
			return i, true
		}
	}
	return -1, false
}

// Inspected reports whether the door narrows methods or paths (read-only
// access, named methods, or paths): HTTPS through it is opened by the
// proxy and each request checked, never passed as a tunnel.
func (e Entry) Inspected() bool { return !e.allowsEvery() }

// TunnelKind is how a CONNECT is let through.
type TunnelKind int

const (
	// TunnelRefused: no door opens the host and port to the program.
	TunnelRefused TunnelKind = iota
	// TunnelOpen: a door lets every method and path through; the bytes
	// pass as they are, by host and port.
	TunnelOpen
	// TunnelInspected: only doors that narrow methods or paths open the
	// host and port; the proxy terminates TLS with its local CA and
	// checks each request with AllowsCall.
	TunnelInspected
)

// Tunnel says how a CONNECT to host:port by program is let through, and
// the index of the entry that decides it (an open door before a narrowed
// one).
func (p Policy) Tunnel(host string, port int, program string) (int, TunnelKind) {
	at, kind := -1, TunnelRefused
	for i, e := range p.Hosts {
		if e.Port != port || !MatchHost(e.Host, host) || !e.matchProgram(program) {
			continue
		}
		if !e.Inspected() {
			return i, TunnelOpen
		}
		if kind == TunnelRefused {
			at, kind = i, TunnelInspected
		}
	}
	return at, kind
}

// AllowsTunnel reports whether some entry opens host:port to program as a
// plain CONNECT tunnel: one that lets every method and path through (the
// proxy sees no method or path in a tunnel). A narrowed door is not a
// tunnel: see Tunnel.
func (p Policy) AllowsTunnel(host string, port int, program string) (int, bool) {
	i, k := p.Tunnel(host, port, program)
	if k != TunnelOpen {
		return -1, false
	}
	return i, true
}

// AllowsCall reports whether a plain HTTP call passes.
func (p Policy) AllowsCall(host string, port int, program, method, urlPath string) (int, bool) {
	for i, e := range p.Hosts {
		if e.Port == port && MatchHost(e.Host, host) && e.matchProgram(program) &&
			e.allowsMethod(method) && e.allowsPath(urlPath) {
			return i, true
		}
	}
	return -1, false
}

// Check validates every entry of p, in place.
func (p *Policy) Check() error {
	for i := range p.Hosts {
		if err := p.Hosts[i].Check(); err != nil {
			return fmt.Errorf("hosts[%d]: %w", i, err)
		}
	}
	return nil
}

// Clone returns a deep copy.
func (p Policy) Clone() Policy {
	out := Policy{Hosts: make([]Entry, len(p.Hosts))}
	for i, e := range p.Hosts {
		e.Methods = slices.Clone(e.Methods)
		e.Paths = slices.Clone(e.Paths)
		e.Programs = slices.Clone(e.Programs)
		out.Hosts[i] = e
	}
	return out
}

// String is an entry on one line: "pypi.org:443 read-only paths /simple/* programs pip".
func (e Entry) String() string {
	s := e.Key() + " " + string(e.Access)
	if e.Access == ReadWrite {
		if len(e.Methods) == 0 {
			s += " every method"
		} else {
			s += " methods " + strings.Join(e.Methods, ",")
		}
	}
	if len(e.Paths) > 0 {
		s += " paths " + strings.Join(e.Paths, ",")
	}
	if len(e.Programs) > 0 {
		s += " programs " + strings.Join(e.Programs, ",")
	}
	return s
}

// Describe says in plain words exactly what approving d opens.
func Describe(d Dest) string {
	s := JoinHostPort(d.Host, d.Port)
	switch {
	case d.Method == "":
		s += ": every method on this host and port"
	case slices.Contains(ReadOnlyMethods, d.Method):
		s += ": read-only (GET, HEAD, OPTIONS)"
	default:
		s += ": read-write, " + d.Method
	}
	if d.Method != "" {
		if d.Path == "" {
			s += " on every path"
		} else {
			s += " on " + d.Path
		}
	}
	if d.Program != "" {
		s += ", for " + d.Program
	} else {
		s += ", for any program"
	}
	if d.Method == "" {
		s += "; HTTPS passes as a tunnel, by host and port"
	} else {
		s += "; HTTPS is inspected (the proxy opens TLS with its local CA and checks each method and path)"
	}
	return s
}

// Glob matches a path against a pattern where * matches any run of
// characters, / included. It runs in linear time in the path's length
// for each star (no backtracking blow-up).
func Glob(pattern, s string) bool {
	px, sx := 0, 0
	nextPx, nextSx := -1, -1
	for px < len(pattern) || sx < len(s) {
		if px < len(pattern) {
			c := pattern[px]
			if c == '*' {
				nextPx, nextSx = px, sx+1
				px++
				continue
			}
			if sx < len(s) && s[sx] == c {
				px++
				sx++
				continue
			}
		}
		if nextPx >= 0 && nextSx <= len(s) {
			px, sx = nextPx, nextSx
			continue
		}
		return false
	}
	return true
}

// shownAsIs reports whether s can be shown to a person as it is: no
// control characters, no bidi overrides, only valid UTF-8.
func shownAsIs(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsGraphic(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u200b' {
			return false
		}
	}
	return true
}
