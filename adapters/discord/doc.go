// Package discord is signoff's Discord adapter. It posts a request as a
// message with an embed, Approve / Deny buttons and ✅ ❌ reactions, edits
// it when the request is decided, and turns reactions (gateway) and button
// clicks (gateway or the signed HTTP interactions endpoint) into
// bot.Ballots for a bot.VoteSink.
//
// It never decides who may vote: every ballot carries the Discord user id
// and the sink judges it against the persona. The one exception is the
// bot's own reactions (the ✅ ❌ it adds to every card), which never become
// ballots.
//
// It speaks only the domain types of package bot and uses signing for the
// Ed25519 check; it imports no other adapter and nothing of the gateway's.
// discordgo's REST client and gateway connection do the talking;
// Config.APIURL points both at another server (tests, private deployments)
// without touching discordgo's package-level endpoint variables.
package discord
