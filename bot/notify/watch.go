package notify

import (
	"sort"

	"github.com/signoff/signoff/bot"
)

// Watch remembers which requests were pending at the last look, so that
// `signoff pending --watch` can say what is new and what has gone.
type Watch struct {
	seen map[string]bool
}

// Look takes the pending requests now and returns those not seen at the
// last look, in the order given, and the ids that have gone since, sorted.
func (w *Watch) Look(pending []bot.Request) (added []bot.Request, gone []string) {
	now := make(map[string]bool, len(pending))
	for _, r := range pending {
		now[r.ID] = true
		if !w.seen[r.ID] {
			added = append(added, r)
		}
	}
	for id := range w.seen {
		if !now[id] {
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	w.seen = now
	return added, gone
}
