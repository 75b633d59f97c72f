package tokens

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/signoff/signoff/bot"
)

// MaxManifest caps a signoff.json.
const MaxManifest = 64 << 10

// Manifest is an extension's signoff.json: what it says it needs.
type Manifest struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Scopes      []Scope  `json:"scopes,omitempty"`
	Network     []string `json:"network,omitempty"`  // host:port doors
	Personas    []string `json:"personas,omitempty"` // empty: every persona
}

// ParseManifest reads and checks a signoff.json. Unknown fields are an
// error (a misspelt "scope" must not silently become "nothing asked"). A
// manifest that declares no scope gets read:requests only.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxManifest {
		return nil, bot.Errorf(bot.EInvalid, "manifest is larger than %d bytes", MaxManifest)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, bot.Errorf(bot.EInvalid, "manifest is not valid signoff.json: %v", err)
	}
	if dec.More() {
		return nil, bot.Errorf(bot.EInvalid, "manifest has data after its JSON object")
	}
	if err := CheckName(m.Name); err != nil {
		return nil, bot.Errorf(bot.EInvalid, "manifest name: %s", bot.ErrorMessage(err))
	}
	if len(m.Description) > 300 {
		return nil, bot.Errorf(bot.EInvalid, "manifest description is longer than 300 characters")
	}
	for _, r := range m.Description {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			// It is shown to the person deciding: no escapes, no new lines,
			// no right-to-left tricks.
			return nil, bot.Errorf(bot.EInvalid, "manifest description holds a control character (%U)", r)
		}
	}
	var scopes []Scope
	for _, s := range m.Scopes {
		if !s.Valid() {
			return nil, bot.Errorf(bot.EInvalid, "manifest asks for unknown scope %q (scopes: %s)", s, Join(All))
		}
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	slices.SortFunc(scopes, func(a, b Scope) int { return slices.Index(All, a) - slices.Index(All, b) })
	if len(scopes) == 0 {
		scopes = []Scope{ReadRequests}
	}
	m.Scopes = scopes
	doors, err := ParseDoors(m.Network)
	if err != nil {
		return nil, bot.Errorf(bot.EInvalid, "manifest %s", bot.ErrorMessage(err))
	}
	m.Network = slices.Compact(doors)
	for _, p := range m.Personas {
		if err := CheckName(p); err != nil {
			return nil, bot.Errorf(bot.EInvalid, "manifest persona %q is not a persona name", p)
		}
	}
	return &m, nil
}

// Spec is the token the manifest asks for.
func (m *Manifest) Spec() Spec {
	return Spec{Name: m.Name, Scopes: m.Scopes, Personas: m.Personas, Network: m.Network, Ext: m.Name}
}

// Consent is what a person reads before saying yes: one line a scope in
// plain words, then one a network door, the risky ones flagged ⚠, and
// which personas it may act for.
func (m *Manifest) Consent() string {
	var b strings.Builder
	fmt.Fprintf(&b, "The extension %q asks to:\n", m.Name)
	line := func(risky bool, what, words string) {
		flag := "  "
		if risky {
			flag = "⚠ "
		}
		fmt.Fprintf(&b, "  %s%-14s %s\n", flag, what, words)
	}
	anyHost := len(m.Network) == 0 || slices.ContainsFunc(m.Doors(), func(d Door) bool { return d.Host == "*" })
	for _, s := range m.Scopes {
		words := s.Words()
		risky := s.Risky()
		if s == NetRequest && anyHost {
			words += ", for any host"
			risky = true
		}
		line(risky, string(s), words)
	}
	for _, d := range m.Doors() {
		words := "connect to " + d.String() + " through the egress proxy"
		switch {
		case d.Host == "*":
			words = "connect to ANY host through the egress proxy (" + d.String() + ")"
		case d.Port == "*":
			words = "connect to " + d.Host + " on ANY port through the egress proxy"
		case strings.HasPrefix(d.Host, "*."):
			words = "connect to any host under " + d.Host[2:] + " on port " + d.Port + " through the egress proxy"
		}
		line(d.Risky(), "network", words)
	}
	if len(m.Personas) == 0 {
		b.WriteString("  for every persona\n")
	} else {
		fmt.Fprintf(&b, "  for persona %s only\n", strings.Join(m.Personas, ", "))
	}
	if m.Description != "" {
		fmt.Fprintf(&b, "  it describes itself as: %q\n", m.Description)
	}
	b.WriteString("No scope lets it vote or change a persona.\n")
	return b.String()
}

// Doors are the manifest's network entries.
func (m *Manifest) Doors() []Door {
	return (&Token{Network: m.Network}).Doors()
}

// RiskyCount is how many lines of the consent block are flagged.
func (m *Manifest) RiskyCount() int {
	return strings.Count(m.Consent(), "⚠")
}
