package netpolicy

import (
	"fmt"
	"strings"
)

// DoorPolicy turns an extension token's declared network doors
// ("pypi.org:443", "*.pypi.org:443") into policy entries opening every
// method on each, for a caller (the proxy, once it knows which token a
// client carries) to add to the revision in force for that token's
// traffic only. A door naming any port or any host cannot be an entry
// and is an error: nothing is opened wider than written.
func DoorPolicy(doors []string) (Policy, error) {
	out := Policy{Hosts: []Entry{}}
	for _, d := range doors {
		i := strings.LastIndex(d, ":")
		if i < 0 {
			return Policy{}, fmt.Errorf("door %q is not host:port", clip(d))
		}
		host, port := strings.Trim(d[:i], "[]"), d[i+1:]
		if host == "*" || port == "*" {
			return Policy{}, fmt.Errorf("door %q opens any host or port: a person must name them", clip(d))
		}
		n, err := ParsePort(port)
		if err != nil {
			return Policy{}, fmt.Errorf("door %q: %v", clip(d), err)
		}
		e := Entry{Host: host, Port: n, Access: ReadWrite}
		if err := e.Check(); err != nil {
			return Policy{}, fmt.Errorf("door %q: %v", clip(d), err)
		}
		out.Hosts = append(out.Hosts, e)
	}
	return out, nil
}

// With returns p and, after its own, the entries of extra it does not
// already have. Neither is modified.
func (p Policy) With(extra Policy) Policy {
	out := p.Clone()
	have := map[string]bool{}
	for _, e := range p.Hosts {
		have[e.String()] = true
	}
	for _, e := range extra.Clone().Hosts {
		if !have[e.String()] {
			out.Hosts = append(out.Hosts, e)
			have[e.String()] = true
		}
	}
	return out
}
