package discordfake

import "encoding/json"

// Reply posts a reply by user to message (in channel) and dispatches its
// MESSAGE_CREATE, as Discord does for a reply that pings the bot. It
// reports whether a gateway connection was there to receive it.
func (s *Server) Reply(channel, message, user, content string) bool {
	s.mu.Lock()
	id := s.newIDLocked()
	s.mu.Unlock()
	b, _ := json.Marshal(map[string]any{
		"id": id, "channel_id": channel, "guild_id": GuildID, "content": content, "type": 19,
		"author":            map[string]any{"id": user, "username": "user" + user},
		"message_reference": map[string]any{"message_id": message, "channel_id": channel, "guild_id": GuildID},
	})
	return s.dispatch("MESSAGE_CREATE", b)
}
