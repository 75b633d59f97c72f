package signing

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// PinFileName is the file, in the data dir, where `signoff serve` writes
// its public key (npub) for local clients to pin.
const PinFileName = "gateway.pub"

// Pin is the gateway key a client trusts, and where it was read.
type Pin struct {
	Key  string // hex
	From []string
}

// PinSource is one place a pin may come from: the SIGNOFF_GATEWAY_KEY
// variable, a pin file written by a person, the local gateway's data dir.
type PinSource struct {
	Name  string
	Value string // "" when absent
	// Secret says Value is the gateway's secret key (its data-dir key
	// file): the pin is its public half.
	Secret bool
}

// ReadPinSource reads a pin file; a missing file is an absent source.
func ReadPinSource(path string, secret bool) (PinSource, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return PinSource{Name: path, Secret: secret}, nil
	}
	if err != nil {
		return PinSource{}, fmt.Errorf("read gateway pin %s: %w", path, err)
	}
	return PinSource{Name: path, Value: strings.TrimSpace(string(b)), Secret: secret}, nil
}

// ResolvePin returns the pinned gateway key. Every source present must
// name the same key: a variable that disagrees with a pin file is refused
// rather than preferred, so steering one of them (the agent's own
// environment) cannot swap the gateway a client trusts. With none present
// it returns ErrUnpinned.
func ResolvePin(srcs ...PinSource) (Pin, error) {
	var p Pin
	for _, s := range srcs {
		if s.Value == "" {
			continue
		}
		var (
			k   string
			err error
		)
		if s.Secret {
			var key *Key
			if key, err = ParseKey(s.Value); err == nil {
				k = key.PublicKey()
			}
		} else {
			k, err = ParsePublicKey(s.Value)
		}
		if err != nil {
			return Pin{}, fmt.Errorf("gateway pin %s: %v", s.Name, err)
		}
		if p.Key != "" && k != p.Key {
			return Pin{}, fmt.Errorf("gateway pins disagree: %s names %s but %s names %s; fix or remove one",
				strings.Join(p.From, ", "), npub(p.Key), s.Name, npub(k))
		}
		p.Key = k
		p.From = append(p.From, s.Name)
	}
	if p.Key == "" {
		return Pin{}, ErrUnpinned
	}
	return p, nil
}

// WritePinFile writes k's npub to path (0644, replaced atomically).
func WritePinFile(path string, k *Key) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(k.Npub()+"\n"), 0o644); err != nil {
		return fmt.Errorf("write gateway pin: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write gateway pin: %w", err)
	}
	return nil
}
