// Package console is signoff's web console (DESIGN §1.10): the static
// page served at /console/ (embedded: index.html, app.js, style.css and
// the vendored noble libraries it verifies events with), the headers it
// is served with (a strict Content-Security-Policy, no framing, no
// referrer), and Feed, the fan-out of request changes behind the live
// feed (server-sent events).
//
// The page never holds a key and the gateway gives it no way to vote: it
// builds the kind-7 reaction `signoff approve` builds, checks the
// request's event against the pinned gateway key, has the person's NIP-07
// signer extension sign it and posts it to /v1/nostr/events like any
// reaction. Reading needs a read:requests token, carried in the link's
// fragment and sent as a bearer header, never as a cookie.
//
// It may import the standard library, bot and signing; the HTTP API
// (bot/httpapi) mounts it, never the other way round.
package console
