package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/tokens"
)

// Publisher is the gateway's publish capability (bot.Gateway has it).
type Publisher interface {
	Publish(ctx context.Context, persona, text, by string) (bot.PublishResult, error)
}

// PublishBody is POST /v1/publish: a plain message for a persona's
// channels. A persona-bound token is held to its personas by the
// middleware (the body's top-level "persona").
type PublishBody struct {
	Persona string `json:"persona"`
	Text    string `json:"text"`
}

func (s *Server) publishRoutes(mux *Mux) {
	mux.HandleFunc("POST /v1/publish", Needs(tokens.Publish), s.publish)
}

func (s *Server) publish(w http.ResponseWriter, r *http.Request) {
	pub, ok := s.Gateway.(Publisher)
	if !ok {
		s.fail(w, r, bot.Errorf(bot.EUnavailable, "this gateway cannot publish"))
		return
	}
	var b PublishBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	// Belt and braces: the middleware already refused another persona.
	if err := AllowPersona(r.Context(), b.Persona); err != nil {
		s.fail(w, r, err)
		return
	}
	by := ""
	key, who := "ip "+clientAddr(r), "address "+peer(r)
	if t := TokenFrom(r.Context()); t != nil {
		by = t.Name
		key, who = "token "+t.ID, fmt.Sprintf("token %q", t.Name)
	}
	res, err := pub.Publish(r.Context(), b.Persona, b.Text, by)
	if err != nil {
		// A publish refused by the persona's rate posted and audited
		// nothing (bot.Gateway.Publish): the client may try it again.
		if bot.ErrorCode(err) == bot.ERateLimited {
			var d time.Duration
			if e, ok := errors.AsType[*bot.Error](err); ok {
				d = e.RetryAfter
			}
			s.rateLimited(r, bot.LimitPublish, key, who, time.Duration(retrySeconds(d))*time.Second, bot.ErrorMessage(err))
		}
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// Publish posts text on persona's channels (POST /v1/publish).
func (c *Client) Publish(ctx context.Context, persona, text string) (bot.PublishResult, error) {
	var res bot.PublishResult
	err := c.do(ctx, http.MethodPost, "/v1/publish", "application/json", mustJSON(PublishBody{Persona: persona, Text: text}), &res)
	return res, err
}
