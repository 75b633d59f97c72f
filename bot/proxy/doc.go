// Package proxy is signoff's egress proxy (docs/design.md#network-access-requests-and-policy-revisions): an HTTP forward
// proxy on net/http that an agent's sandbox reaches through HTTPS_PROXY
// and HTTP_PROXY. Plain HTTP passes when the current policy revision
// allows its host, port, method and path. A CONNECT to a door that lets
// every method and path through is a plain tunnel by host and port; to a
// door narrowed to methods or paths it is inspected: the proxy terminates
// TLS with its local CA (ca.go: made once, key 0600 in the data dir),
// checks each request the same way, and re-encrypts upstream verifying the
// real certificate (inspect.go); a door that needs inspection on a proxy
// without a CA is refused, never tunnelled. Everything else gets 403 with
// a body naming the draft request it filed and how to ask for more.
//
// It owns the proxy's bounds (timeouts, a connection limit, idle tunnels
// closed), the loopback rule (a destination is dialed only at the address
// its name resolved to when the check was made; a loopback address only
// when the policy names a loopback host itself, so nothing else on
// loopback — the gateway's own port included — is reachable, and the
// proxy never dials itself), and naming the program behind a loopback
// client from /proc/net/tcp and /proc/*/fd on Linux.
//
// It learns the policy from a Source (the gateway's API, long-polled so a
// new revision applies the moment it is published) and imports only bot,
// bot/netpolicy and bot/tokens (for the token format). A client may carry an extension's token as proxy
// credentials (Proxy-Authorization, e.g. HTTPS_PROXY=http://ext:sgn_…@host:port):
// the token is checked with the gateway (CheckToken, re-checked after
// TokenTTL) and its declared doors are added, for that client only, to the
// revision in force; a bad, revoked or expired token gets 407.
package proxy
