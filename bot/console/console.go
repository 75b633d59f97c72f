package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// all: keeps noble-hashes' _md.js and _u64.js, which a plain pattern
// would leave out.
//
//go:embed all:static
var static embed.FS

// Prefix is where the console is served.
const Prefix = "/console/"

// CSP is the console's Content-Security-Policy: its own files only, no
// inline script or style, no other origin, no framing, no form posts.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Files serves the console's embedded files under Prefix.
func Files() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embed above names the folder
	}
	files := http.StripPrefix(Prefix, http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Headers(w.Header())
		if strings.HasSuffix(r.URL.Path, "/") && r.URL.Path != Prefix {
			http.NotFound(w, r) // no directory listings
			return
		}
		files.ServeHTTP(w, r)
	})
}

// Headers sets the headers every console answer carries.
func Headers(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-cache")
}
