package main

import (
	"fmt"

	"github.com/signoff/signoff/bot"
)

// postingPlatforms is what this environment's credentials let a gateway
// post on: Nostr always (its key is its own; relays come from the persona).
func postingPlatforms(cfg *config) map[bot.Platform]bool {
	return map[bot.Platform]bool{
		bot.Nostr:   true,
		bot.Slack:   cfg.SlackBotToken != "",
		bot.Discord: cfg.DiscordBotToken != "",
	}
}

// missingCredential names what a platform needs to post.
var missingCredential = map[bot.Platform]string{
	bot.Slack:   "SIGNOFF_SLACK_BOT_TOKEN",
	bot.Discord: "SIGNOFF_DISCORD_BOT_TOKEN",
}

// reachProblems says, persona by persona, which channels cannot be posted
// to here; fatal lists the personas none of whose channels can.
func reachProblems(ps []bot.Persona, posts map[bot.Platform]bool) (warnings, fatal []string) {
	for _, p := range ps {
		bad, all := bot.Unreachable(p, posts)
		for _, c := range bad {
			warnings = append(warnings, fmt.Sprintf("persona %s: channel %s %s: no %s in this environment, so posts there fail (closed)",
				p.Name, c.Platform, c.Target, missingCredential[c.Platform]))
		}
		if all {
			fatal = append(fatal, fmt.Sprintf("persona %s: none of its channels can be posted to here, so every request would be denied at once", p.Name))
		}
	}
	return warnings, fatal
}
