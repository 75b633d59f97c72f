// Package slack is signoff's Slack adapter: it posts a request as a Block
// Kit card (Approve / Deny buttons, ✅ / ❌ reactions), edits every posted
// card when the request is decided, and turns reactions and button clicks
// into ballots for a bot.VoteSink.
//
// Answers arrive by either transport Slack offers: Socket Mode (Run, with
// an app-level token) or the HTTP Events API and interactivity endpoint
// (EventsHandler, InteractionsHandler), whose requests are verified with
// the signing secret on the raw body before anything is parsed.
//
// The adapter never decides who may vote: it names the Slack user as the
// voter and the gateway judges the ballot against the persona. It speaks
// package bot's types and imports no other package of this module except
// signing; it never imports the gateway's store or other adapters.
package slack
