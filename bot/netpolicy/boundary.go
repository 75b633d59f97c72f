package netpolicy

import (
	"fmt"
	"strings"
)

// Boundary is what may ever be approved: host and port patterns, one a
// line in its file ("*.pypi.org:443", "github.com:*", "*:443"; # starts a
// comment). A nil *Boundary is no boundary; an empty one allows nothing.
type Boundary struct {
	File     string
	Patterns []BoundaryPattern
}

// BoundaryPattern is one line of a boundary file. Port 0 is any port.
type BoundaryPattern struct {
	Host string
	Port int
	Line int
}

func (b BoundaryPattern) String() string {
	port := "*"
	if b.Port != 0 {
		port = fmt.Sprint(b.Port)
	}
	if strings.Contains(b.Host, ":") {
		return "[" + b.Host + "]:" + port
	}
	return b.Host + ":" + port
}

// ParseBoundary reads a boundary file.
func ParseBoundary(file string, data []byte) (*Boundary, Problems) {
	b := &Boundary{File: file, Patterns: []BoundaryPattern{}}
	var ps Problems
	if len(data) > MaxPolicyFile {
		return nil, Problems{{File: file, Message: fmt.Sprintf("file is larger than %d bytes", MaxPolicyFile)}}
	}
	for i, line := range strings.Split(string(data), "\n") {
		if j := strings.Index(line, "#"); j >= 0 {
			line = line[:j]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		bad := func(format string, args ...any) {
			ps = append(ps, Problem{File: file, Line: i + 1, Column: 1, Message: fmt.Sprintf(format, args...)})
		}
		k := strings.LastIndex(line, ":")
		if k < 0 {
			bad("%q is not host:port (use * for any port)", clip(line))
			continue
		}
		hostPart, portPart := line[:k], line[k+1:]
		if strings.HasPrefix(hostPart, "[") && strings.HasSuffix(hostPart, "]") {
			hostPart = hostPart[1 : len(hostPart)-1]
		}
		p := BoundaryPattern{Line: i + 1}
		if hostPart == "*" {
			p.Host = "*"
		} else {
			h, err := NormalizePattern(hostPart)
			if err != nil {
				bad("%v", err)
				continue
			}
			p.Host = h
		}
		if portPart != "*" {
			n, err := ParsePort(portPart)
			if err != nil {
				bad("%v", err)
				continue
			}
			p.Port = n
		}
		b.Patterns = append(b.Patterns, p)
	}
	if len(ps) > 0 {
		return nil, ps
	}
	return b, nil
}

// Allows reports whether host (a name or a *.domain pattern) and port
// may be approved.
func (b *Boundary) Allows(host string, port int) bool {
	if b == nil {
		return true
	}
	for _, p := range b.Patterns {
		if (p.Port == 0 || p.Port == port) && MatchHost(p.Host, host) {
			return true
		}
	}
	return false
}

// CheckPolicy returns an error naming the first entry of pol outside b.
func (b *Boundary) CheckPolicy(pol Policy) error {
	for _, e := range pol.Hosts {
		if !b.Allows(e.Host, e.Port) {
			return b.Outside(e.Key())
		}
	}
	return nil
}

// Outside is the refusal for a destination outside the boundary.
func (b *Boundary) Outside(dest string) error {
	return fmt.Errorf("%s is outside the network boundary (%s): it cannot be approved, only denied", dest, b.File)
}
