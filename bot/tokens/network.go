package tokens

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/signoff/signoff/bot"
)

// A door is "host:port" an extension may reach through the egress proxy
// (docs/design.md#network-access-requests-and-policy-revisions): host a DNS name, "*.example.com" or "*" (any); port 1–65535
// or "*" (any).
var hostRE = regexp.MustCompile(`^(\*|(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*)$`)

// Door is one host and port.
type Door struct {
	Host string // lower case; may start with "*." or be "*"
	Port string // digits or "*"
}

func (d Door) String() string { return d.Host + ":" + d.Port }

// ParseDoor reads "host:port".
func ParseDoor(s string) (Door, error) {
	host, port, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	if !ok || strings.Contains(port, ":") {
		return Door{}, bot.Errorf(bot.EInvalid, "network entry %q must be host:port (e.g. pypi.org:443)", s)
	}
	if len(host) > 253 || !hostRE.MatchString(host) {
		return Door{}, bot.Errorf(bot.EInvalid, "network entry %q: %q is not a host name, *.domain or *", s, host)
	}
	if port != "*" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return Door{}, bot.Errorf(bot.EInvalid, "network entry %q: port %q is not 1–65535 or *", s, port)
		}
	}
	return Door{Host: host, Port: port}, nil
}

// ParseDoors checks every entry and returns them normalized.
func ParseDoors(list []string) ([]string, error) {
	var out []string
	for _, s := range list {
		d, err := ParseDoor(s)
		if err != nil {
			return nil, err
		}
		out = append(out, d.String())
	}
	return out, nil
}

// Risky reports whether d opens more than one named place: any host, a
// wildcard over a top-level domain (*.com), or any port.
func (d Door) Risky() bool {
	if d.Host == "*" || d.Port == "*" {
		return true
	}
	if rest, ok := strings.CutPrefix(d.Host, "*."); ok && !strings.Contains(rest, ".") {
		return true
	}
	return false
}

// Allows reports whether d lets host:port through.
func (d Door) Allows(host string, port int) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if d.Port != "*" && d.Port != strconv.Itoa(port) {
		return false
	}
	switch {
	case d.Host == "*":
		return true
	case strings.HasPrefix(d.Host, "*."):
		return strings.HasSuffix(host, d.Host[1:])
	}
	return host == d.Host
}

// Doors are the network doors t's extension declared (docs/design.md#network-access-requests-and-policy-revisions): the
// network policy lets this token's traffic through them. Entries that no
// longer parse are dropped (fail closed).
func (t *Token) Doors() []Door {
	var out []Door
	for _, s := range t.Network {
		if d, err := ParseDoor(s); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// AllowsDoor reports whether t's declared doors let host:port through. A
// token that declared none has no doors of its own.
func (t *Token) AllowsDoor(host string, port int) bool {
	for _, d := range t.Doors() {
		if d.Allows(host, port) {
			return true
		}
	}
	return false
}
