package signing

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// RelayWitness publishes checkpoints to a Nostr relay as the gateway's
// replaceable witness event, and reads them back: a witness anyone can
// fetch (`signoff audit verify --witness RELAY`).
type RelayWitness struct {
	URL string
	// Key signs the events (nil: read only, for verify).
	Key *Key
	// Dial connects to the relay; close ends the connection.
	Dial func(ctx context.Context, url string) (*nostr.Relay, func(), error)
}

func (r RelayWitness) Name() string { return "the relay " + r.URL }

// Publish sends w's witness event to the relay.
func (r RelayWitness) Publish(ctx context.Context, w Witness) error {
	if r.Key == nil {
		return fmt.Errorf("no key to sign the witness event")
	}
	ev, err := WitnessEvent(r.Key, w.Line, w.Seq, time.Now())
	if err != nil {
		return err
	}
	rel, done, err := r.Dial(ctx, r.URL)
	if err != nil {
		return err
	}
	defer done()
	return rel.Publish(ctx, ev)
}

// Newest is the highest checkpoint among the gateway's witness events on
// the relay.
func (r RelayWitness) Newest(ctx context.Context, signer string) (Witness, bool, error) {
	rel, done, err := r.Dial(ctx, r.URL)
	if err != nil {
		return Witness{}, false, err
	}
	defer done()
	evs, err := storedEvents(ctx, rel, nostr.Filter{Kinds: []int{WitnessKind}, Authors: []string{signer}, Tags: nostr.TagMap{"d": {WitnessD}}})
	if err != nil {
		return Witness{}, false, err
	}
	var best Witness
	var bad error
	for _, ev := range evs {
		raw, _ := json.Marshal(ev)
		w, err := ParseWitnessEvent(raw, signer)
		if err != nil {
			bad = err
			continue
		}
		if w.Seq > best.Seq {
			best = w
		}
	}
	if best.Seq == 0 && bad != nil {
		return Witness{}, false, bad
	}
	return best, best.Seq > 0, nil
}

// storedEvents reads what the relay holds for f, up to its EOSE. Not
// go-nostr's QuerySync: it unsubscribes in a goroutine of its own after
// EOSE, and that CLOSE, written while the caller's done() cancels the
// relay, races go-nostr's cleanup on the connection (a data race -race
// reports). The subscription is left to the relay's cancellation, which
// writes nothing once the relay is closed.
func storedEvents(ctx context.Context, rel *nostr.Relay, f nostr.Filter) ([]*nostr.Event, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 7*time.Second)
		defer cancel()
	}
	// Never cancelled here: a cancelled subscription writes its CLOSE
	// in a goroutine, racing the relay's close. It ends with the relay.
	sub, err := rel.Subscribe(context.WithoutCancel(ctx), nostr.Filters{f})
	if err != nil {
		return nil, err
	}
	var evs []*nostr.Event
	for {
		select {
		case ev, ok := <-sub.Events:
			if !ok {
				return evs, nil
			}
			evs = append(evs, ev)
		case <-sub.EndOfStoredEvents:
			return evs, nil
		case <-ctx.Done():
			return evs, ctx.Err()
		}
	}
}
