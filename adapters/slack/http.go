package slack

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// MaxBodyBytes caps an Events API or interactivity request body.
const MaxBodyBytes = 1 << 20

// Headers kept as evidence of an HTTP delivery.
var evidenceHeaders = []string{
	signing.SlackSignatureHeader, signing.SlackTimestampHeader,
	"X-Slack-Retry-Num", "X-Slack-Retry-Reason", "Content-Type",
}

// EventsHandler serves Slack's Events API (mount it at POST /slack/events):
// the url_verification challenge and reaction_added events. Every request
// is verified with the signing secret on the raw body before it is parsed;
// without a signing secret it answers 404.
func (a *Adapter) EventsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := a.readVerified(w, r)
		if !ok {
			return
		}
		challenge, err := a.onEvent(r.Context(), body, httpEvidence(r.Header, body))
		switch {
		case errors.Is(err, errMalformed):
			writeError(w, http.StatusBadRequest, bot.EInvalid, "the body is not a Slack event payload")
			return
		case err != nil:
			// Slack redelivers on a 5xx; the redelivery counts once.
			a.log.Warn("slack event not recorded", "err", err)
			writeError(w, http.StatusServiceUnavailable, bot.EUnavailable, "the vote could not be recorded; retry")
			return
		case challenge != "":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]string{"challenge": challenge})
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// InteractionsHandler serves Slack's interactivity requests (mount it at
// POST /slack/interactions): Approve and Deny clicks. It verifies like
// EventsHandler, answers 200 once the vote is recorded, then tells the
// clicker privately when the vote did not count or changed nothing.
func (a *Adapter) InteractionsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := a.readVerified(w, r)
		if !ok {
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil || form.Get("payload") == "" {
			writeError(w, http.StatusBadRequest, bot.EInvalid, "the body is not a form with a payload field")
			return
		}
		rep, err := a.onInteraction(r.Context(), []byte(form.Get("payload")), httpEvidence(r.Header, body))
		if err != nil {
			writeError(w, http.StatusBadRequest, bot.EInvalid, "the payload is not a Slack interaction")
			return
		}
		w.WriteHeader(http.StatusOK)
		if rep == nil {
			return
		}
		// Slack waits for the 200 before it shows the click as done; the
		// private answer follows it.
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		a.sendReply(context.WithoutCancel(r.Context()), rep)
	})
}

// readVerified reads at most MaxBodyBytes and verifies Slack's signature
// on those raw bytes. On failure it has written the error response.
func (a *Adapter) readVerified(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, bot.EInvalid, "use POST")
		return nil, false
	}
	if a.cfg.SigningSecret == "" {
		writeError(w, http.StatusNotFound, bot.ENotFound, "Slack HTTP endpoints are off: no signing secret is configured")
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeError(w, http.StatusRequestEntityTooLarge, bot.ETooLarge, "the body is larger than 1 MiB")
			return nil, false
		}
		writeError(w, http.StatusBadRequest, bot.EInvalid, "the body could not be read")
		return nil, false
	}
	if err := signing.VerifySlack(r.Header, body, a.cfg.SigningSecret, a.now()); err != nil {
		a.log.Info("slack request refused", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusUnauthorized, bot.ErrorCode(err), err.Error())
		return nil, false
	}
	return body, true
}

// httpEvidence is what the audit log keeps of an HTTP delivery: the
// signature headers and the exact body they sign.
func httpEvidence(h http.Header, body []byte) json.RawMessage {
	headers := map[string]string{}
	for _, k := range evidenceHeaders {
		if v := h.Get(k); v != "" {
			headers[k] = v
		}
	}
	raw, _ := json.Marshal(struct {
		Transport string            `json:"transport"`
		Headers   map[string]string `json:"headers"`
		Body      string            `json:"body"`
	}{"http", headers, string(body)})
	return raw
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg, "code": code})
}
