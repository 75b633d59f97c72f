package permissions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/signoff/signoff/bot"
)

// Reviewer verdicts.
const (
	VerdictAllow  = "allow"
	VerdictDeny   = "deny"
	VerdictUnsure = "unsure"
)

// DefaultReviewTimeout bounds a reviewer's answer when the persona names
// no timeout; MaxReviewTimeout is the most a persona may give it.
const (
	DefaultReviewTimeout = 10 * time.Second
	MaxReviewTimeout     = time.Minute
	maxReviewBody        = 64 << 10
	maxReviewReason      = 1000
)

// ReviewRequest is what signoff POSTs to a persona's reviewer endpoint.
type ReviewRequest struct {
	Persona string    `json:"persona"`
	Kind    bot.Kind  `json:"kind"`
	Action  string    `json:"action"`
	Cwd     string    `json:"cwd"`
	Level   bot.Level `json:"level"`
	Reasons []string  `json:"reasons"`
}

// Verdict is the reviewer's answer: {"verdict":"allow|deny|unsure",
// "reason":"…"}. Error is set (and the verdict unsure) when the reviewer
// failed, timed out or answered something else.
type Verdict struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	Error   string `json:"error,omitempty"`
}

// ReviewClient asks reviewer endpoints. The zero value works.
type ReviewClient struct {
	HTTP *http.Client
}

// Review posts the call to the reviewer and reads its verdict. Anything
// but a well-formed allow, deny or unsure in time is unsure, with Error.
func (rc *ReviewClient) Review(ctx context.Context, rv bot.Reviewer, req ReviewRequest) Verdict {
	timeout := rv.Timeout
	if timeout <= 0 {
		timeout = DefaultReviewTimeout
	}
	timeout = min(timeout, MaxReviewTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	unsure := func(format string, args ...any) Verdict {
		return Verdict{Verdict: VerdictUnsure, Error: fmt.Sprintf(format, args...)}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return unsure("encode: %v", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, rv.URL, bytes.NewReader(body))
	if err != nil {
		return unsure("reviewer url: %v", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hc := http.DefaultClient
	if rc != nil && rc.HTTP != nil {
		hc = rc.HTTP
	}
	resp, err := hc.Do(hr)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return unsure("no answer within %s", timeout)
		}
		return unsure("cannot reach the reviewer: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReviewBody+1))
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return unsure("no answer within %s", timeout)
	case err != nil:
		return unsure("reading the answer: %v", err)
	case resp.StatusCode != http.StatusOK:
		return unsure("the reviewer answered %s", resp.Status)
	case len(b) > maxReviewBody:
		return unsure("the answer is larger than %d bytes", maxReviewBody)
	}
	return ParseVerdict(b)
}

// ParseVerdict reads a reviewer's answer strictly.
func ParseVerdict(b []byte) Verdict {
	var v struct {
		Verdict *string `json:"verdict"`
		Reason  string  `json:"reason"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil || dec.More() || v.Verdict == nil {
		return Verdict{Verdict: VerdictUnsure, Error: "the answer is not {\"verdict\":\"allow|deny|unsure\",\"reason\":…}"}
	}
	reason := strings.ToValidUTF8(v.Reason, "\uFFFD")
	if len(reason) > maxReviewReason {
		reason = reason[:maxReviewReason] + "…"
	}
	switch *v.Verdict {
	case VerdictAllow, VerdictDeny, VerdictUnsure:
		return Verdict{Verdict: *v.Verdict, Reason: reason}
	}
	return Verdict{Verdict: VerdictUnsure, Error: fmt.Sprintf("verdict %q is not allow, deny or unsure", truncate(*v.Verdict, 40))}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// review asks p's reviewer about a call and audits the verdict.
func (c *Checker) review(ctx context.Context, p bot.Persona, ch Check, a bot.Assessment) Verdict {
	rc := c.Reviewer
	if rc == nil {
		rc = &ReviewClient{}
	}
	v := rc.Review(ctx, *p.Reviewer, ReviewRequest{Persona: p.Name, Kind: ch.Kind, Action: requestAction(ch), Cwd: ch.Cwd, Level: a.Level, Reasons: a.Reasons})
	if c.Audit != nil {
		if err := c.Audit.Append(context.WithoutCancel(ctx), bot.AuditEntry{Type: "review", Data: map[string]any{
			"persona": p.Name, "reviewer": p.Reviewer.URL, "kind": ch.Kind, "action": requestAction(ch), "cwd": ch.Cwd,
			"level": a.Level, "verdict": v.Verdict, "reason": v.Reason, "error": v.Error, "at": c.now().UTC(),
		}}); err != nil {
			// A verdict that cannot be audited is not acted on.
			return Verdict{Verdict: VerdictUnsure, Error: "the verdict could not be audited"}
		}
	}
	return v
}
