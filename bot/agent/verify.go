package agent

import (
	"context"
	"time"

	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/bot/permissions"
)

// Verifier checks that r, as the gateway answered it, is a real approval of
// asked: signing.CheckApproval with the pinned gateway key. cmd/signoff
// builds it from the pin; nil believes no approval at all.
type Verifier func(asked bot.NewRequest, r *bot.Request) error

// Approved reports whether an integration may act on r: the gateway says
// approved and v vouches for it. When it may not, why says so in words; a
// request that is plainly not approved has why "".
func Approved(v Verifier, asked bot.NewRequest, r *bot.Request) (ok bool, why string) {
	if r == nil || r.Status != bot.Approved {
		return false, ""
	}
	if v == nil {
		return false, "the gateway says approved, but no gateway key is pinned to check its receipt, so it is not believed"
	}
	if err := v(asked, r); err != nil {
		return false, "the gateway says approved, but its receipt does not hold (" + errorText(err) + "), so it is not believed"
	}
	return true, ""
}

// CheckAllowed reports whether an integration may act on an allow the
// gateway's /v1/check made without a request: only with its signed
// receipt, from the pinned key, for exactly the call asked and its nonce.
func CheckAllowed(v Verifier, ch permissions.Check, res *permissions.Result) (ok bool, why string) {
	asked, err := permissions.Asked(ch)
	if err != nil {
		return false, err.Error()
	}
	if len(res.Receipt) == 0 {
		return false, "the gateway says allow, but gave no signed receipt, so it is not believed"
	}
	return Approved(v, asked, &bot.Request{ID: res.ReceiptID, Status: bot.Approved, Receipt: res.Receipt})
}

// PinCheck checks a request the moment the gateway answers with it: its
// signed event must be the pinned gateway's. A gateway the client does not
// trust then fails at once, before a person spends an approval nobody
// would believe. nil checks nothing (the receipt check still decides).
type PinCheck func(r *bot.Request) error

// CheckPin runs pc on r; when r fails it, r is withdrawn from g (so no one
// is asked for it) and the error, which says how to fix the pin, returned.
func CheckPin(pc PinCheck, g Gateway, r *bot.Request) error {
	if pc == nil || r == nil {
		return nil
	}
	err := pc(r)
	if err != nil && !r.Status.Final() {
		if w, ok := g.(Withdrawer); ok {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			w.Withdraw(ctx, r.ID, "the requester does not trust this gateway's key (pin mismatch)")
		}
	}
	return err
}
