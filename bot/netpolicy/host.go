package netpolicy

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Limits on outside input.
const (
	MaxHostLen = 253
	MaxPathLen = 2048
)

// NormalizeHost checks a destination host and returns it in canonical
// form: lower case, no trailing dot, an IPv6 address without brackets.
// It refuses wildcards, empty labels, ports, userinfo and anything that
// is not a DNS name or an IP address.
func NormalizeHost(h string) (string, error) {
	if h == "" {
		return "", fmt.Errorf("host is empty")
	}
	if len(h) > MaxHostLen+2 {
		return "", fmt.Errorf("host is longer than %d characters", MaxHostLen)
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if strings.Contains(h, ":") {
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", fmt.Errorf("host %q is not a name or an IP address (a port goes in its own field)", clip(h))
		}
		return a.String(), nil
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.String(), nil
	}
	if err := checkName(h); err != nil {
		return "", err
	}
	return h, nil
}

// checkName checks a DNS name label by label.
func checkName(h string) error {
	if h == "" || len(h) > MaxHostLen {
		return fmt.Errorf("host %q is not a valid name", clip(h))
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("host %q has an empty or over-long label", clip(h))
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
			if !ok {
				return fmt.Errorf("host %q has a character a host name cannot have (%q)", clip(h), string(rune(c)))
			}
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("host %q has a label starting or ending with '-'", clip(h))
		}
	}
	// A name whose last label is all digits would be read as an address
	// by some resolvers (1.2.3.4.5, 0x7f.1): refuse it.
	last := labels[len(labels)-1]
	if strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") {
		return fmt.Errorf("host %q is neither a valid address nor a name", clip(h))
	}
	return nil
}

// NormalizePattern checks a host pattern of a policy entry: a host, or
// "*." followed by a name (every name under it, not the name itself).
func NormalizePattern(p string) (string, error) {
	if rest, ok := strings.CutPrefix(p, "*."); ok {
		if strings.Contains(rest, "*") {
			return "", fmt.Errorf("host %q: a wildcard may only be the first label (*.example.com)", clip(p))
		}
		rest = strings.TrimSuffix(strings.ToLower(rest), ".")
		if err := checkName(rest); err != nil {
			return "", err
		}
		return "*." + rest, nil
	}
	if strings.Contains(p, "*") {
		return "", fmt.Errorf("host %q: a wildcard may only be the first label (*.example.com)", clip(p))
	}
	return NormalizeHost(p)
}

// MatchHost reports whether a normalized pattern covers a normalized host
// (which may itself be a pattern: "*.a.example.com" is covered by
// "*.example.com"). "*" covers everything.
func MatchHost(pattern, host string) bool {
	if pattern == "*" || pattern == host {
		return true
	}
	suffix, ok := strings.CutPrefix(pattern, "*") // ".example.com"
	if !ok {
		return false
	}
	if rest, isPattern := strings.CutPrefix(host, "*"); isPattern {
		return strings.HasSuffix(rest, suffix)
	}
	return len(host) > len(suffix) && strings.HasSuffix(host, suffix)
}

// ParsePort reads a port number, 1 to 65535.
func ParsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || s != strconv.Itoa(n) {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", clip(s))
	}
	return n, nil
}

// SplitHostPort reads "host:port" (an IPv6 address in brackets) as a
// CONNECT request or a Host header carries it; defaultPort is used when
// the port is absent and defaultPort is not 0.
func SplitHostPort(s string, defaultPort int) (string, int, error) {
	if s == "" {
		return "", 0, fmt.Errorf("destination is empty")
	}
	if len(s) > MaxHostLen+8 {
		return "", 0, fmt.Errorf("destination is longer than %d characters", MaxHostLen+8)
	}
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		if defaultPort == 0 || strings.Count(s, ":") == 1 || strings.HasSuffix(s, "]:") {
			return "", 0, fmt.Errorf("destination %q is not host:port", clip(s))
		}
		if strings.Contains(s, ":") && !strings.HasPrefix(s, "[") {
			return "", 0, fmt.Errorf("destination %q: an IPv6 address goes in brackets ([::1]:443)", clip(s))
		}
		h, p = s, strconv.Itoa(defaultPort)
	}
	host, err := NormalizeHost(h)
	if err != nil {
		return "", 0, err
	}
	port, err := ParsePort(p)
	if err != nil {
		return "", 0, err
	}
	return host, port, nil
}

// JoinHostPort writes host and port back as "host:port".
func JoinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
