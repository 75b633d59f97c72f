package bot

// Unreachable returns the channels of p this gateway cannot post to, given
// the platforms it posts on (the terminal always works), and whether that
// is every channel — then every request of p would be denied at once.
func Unreachable(p Persona, posts map[Platform]bool) (bad []ChannelConfig, all bool) {
	if len(p.Channels) == 0 {
		return nil, false // the terminal: `signoff pending`
	}
	for _, c := range p.Channels {
		if c.Platform != Terminal && !posts[c.Platform] {
			bad = append(bad, c)
		}
	}
	return bad, len(bad) == len(p.Channels)
}
