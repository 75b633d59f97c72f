package httpapi

import (
	"net/http"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/tokens"
)

// ClassifyBody is POST /v1/classify: an action, classified by the
// gateway's rules (the ones that decide), without filing anything.
type ClassifyBody struct {
	Kind   bot.Kind `json:"kind,omitempty"` // default command
	Action string   `json:"action"`
}

func (s *Server) classifyRoutes(mux *Mux) {
	if s.Classifier == nil {
		return
	}
	mux.HandleFunc("POST /v1/classify", Needs(tokens.Classify), s.classify)
}

func (s *Server) classify(w http.ResponseWriter, r *http.Request) {
	var b ClassifyBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	switch b.Kind {
	case "":
		b.Kind = bot.KindCommand
	case bot.KindCommand, bot.KindTool, bot.KindNetwork, bot.KindText:
	default:
		s.fail(w, r, bot.Errorf(bot.EInvalid, "kind %q is not one of command, tool, network, text", b.Kind))
		return
	}
	if b.Action == "" {
		s.fail(w, r, bot.Errorf(bot.EInvalid, "action is empty: nothing to classify"))
		return
	}
	a := s.Classifier.Classify(b.Kind, b.Action)
	if a.Reasons == nil {
		a.Reasons = []string{}
	}
	writeJSON(w, http.StatusOK, a)
}
