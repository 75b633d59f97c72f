package discord

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// MaxInteractionBody caps what the interactions endpoint reads; a larger
// body gets 413 before its signature is even checked.
const MaxInteractionBody = 1 << 20

// InteractionsHandler is the endpoint Discord posts button clicks to when
// the application's Interactions Endpoint URL is set (mount it at
// POST /discord/interactions). Every request is verified with the
// application's public key on the raw body, within a 5-minute window,
// before anything in it is read. Without a public key it answers 503.
//
// Refusals are JSON {"error": "...", "code": "..."}: 405 for a method
// other than POST, 413 too_large, 401 unauthorized or stale, 400 invalid.
func (a *Adapter) InteractionsHandler() http.Handler {
	return http.HandlerFunc(a.serveInteraction)
}

func (a *Adapter) serveInteraction(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, bot.EInvalid, "use POST")
		return
	}
	if a.key == nil {
		writeError(w, http.StatusServiceUnavailable, bot.EUnavailable, "discord interactions are not configured (no public key)")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxInteractionBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeError(w, http.StatusRequestEntityTooLarge, bot.ETooLarge, "body is larger than 1 MiB")
			return
		}
		writeError(w, http.StatusBadRequest, bot.EInvalid, "could not read the body")
		return
	}
	if err := signing.VerifyDiscord(r.Header, body, a.key, a.cfg.Now()); err != nil {
		a.log.Warn("interaction refused", "err", err, "remote", r.RemoteAddr)
		writeError(w, http.StatusUnauthorized, bot.ErrorCode(err), err.Error())
		return
	}
	// Evidence keeps the body as text, so it must be text.
	if !utf8.Valid(body) {
		writeError(w, http.StatusBadRequest, bot.EInvalid, "body is not UTF-8")
		return
	}
	var in interactionPayload
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, http.StatusBadRequest, bot.EInvalid, "body is not an interaction: "+err.Error())
		return
	}
	if a.cfg.AppID != "" && in.AppID != a.cfg.AppID {
		writeError(w, http.StatusBadRequest, bot.EInvalid, "interaction is for another application")
		return
	}
	switch in.Type {
	case discordgo.InteractionPing:
		writeJSON(w, http.StatusOK, discordgo.InteractionResponse{Type: discordgo.InteractionResponsePong})
		return
	case discordgo.InteractionMessageComponent:
	default:
		writeJSON(w, http.StatusOK, ephemeral("signoff answers only its own Approve / Deny buttons."))
		return
	}
	if in.ID == "" {
		writeError(w, http.StatusBadRequest, bot.EInvalid, "interaction has no id")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.EventTimeout)
	defer cancel()
	evidence := httpEvidence(r.Header.Get(signing.DiscordSignatureHeader), r.Header.Get(signing.DiscordTimestampHeader), body)
	resp, _ := a.click(ctx, &in, evidence, true)
	writeJSON(w, http.StatusOK, resp)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, bot.EInternal, "internal error")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{msg, code})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
