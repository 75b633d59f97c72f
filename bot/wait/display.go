package wait

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/signoff/signoff/bot"
)

// PlainEvery is how often a non-terminal display repeats an unchanged line.
const PlainEvery = 30 * time.Second

// Display shows one waiting request. Update it with each new state of the
// request; Start ticks the countdown; Stop clears the line. Safe for use
// from several goroutines.
type Display struct {
	w   io.Writer
	tty bool
	// Now is the clock (default time.Now); Tick the countdown's step on a
	// terminal (default 1s). Set them before Start.
	Now  func() time.Time
	Tick time.Duration

	mu     sync.Mutex
	r      *bot.Request
	key    string    // what was last printed, without the countdown
	at     time.Time // when a plain line was last printed
	drawn  bool      // a terminal line is on screen
	stop   chan struct{}
	wg     sync.WaitGroup
	closed bool
}

// New returns a display writing to w; tty says w is a terminal (see
// IsTerminal), where the line is rewritten in place.
func New(w io.Writer, tty bool) *Display { return &Display{w: w, tty: tty} }

// IsTerminal reports whether w is a character device.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (d *Display) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Start ticks the countdown on a terminal until Stop. Elsewhere it only
// repeats the line every PlainEvery.
func (d *Display) Start() {
	tick := d.Tick
	if tick <= 0 {
		tick = time.Second
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stop != nil || d.closed {
		return
	}
	d.stop = make(chan struct{})
	d.wg.Add(1)
	go func(stop chan struct{}) {
		defer d.wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				d.mu.Lock()
				d.draw(false)
				d.mu.Unlock()
			}
		}
	}(d.stop)
}

// Update shows r's new state at once when its votes changed.
func (d *Display) Update(r *bot.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.r = r
	d.draw(true)
}

// Stop ends the countdown and clears the terminal line, so what follows
// (the outcome) starts on a clean line.
func (d *Display) Stop() {
	d.mu.Lock()
	stop := d.stop
	d.stop = nil
	d.closed = true
	d.mu.Unlock()
	if stop != nil {
		close(stop)
	}
	d.wg.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tty && d.drawn {
		fmt.Fprint(d.w, "\r\033[K")
		d.drawn = false
	}
}

// draw prints the line: always on a terminal, on change or every
// PlainEvery elsewhere. Called with mu held.
func (d *Display) draw(update bool) {
	if d.r == nil || d.closed {
		return
	}
	now := d.now()
	key := Votes(d.r)
	line := Line(d.r, now)
	if d.tty {
		fmt.Fprintf(d.w, "\r\033[K%s", line)
		d.drawn = true
		d.key = key
		return
	}
	if key != d.key || now.Sub(d.at) >= PlainEvery || (update && d.at.IsZero()) {
		fmt.Fprintln(d.w, line)
		d.key, d.at = key, now
	}
}

// Line is the whole waiting line: "waiting: 1 vote (bob approve) · needs
// the owner (alice), or 1 more of: carol · 4m59s left".
func Line(r *bot.Request, now time.Time) string {
	s := "waiting: " + Votes(r)
	if e := r.Electorate; e != nil && e.Needs != "" {
		s += " · needs " + e.Needs
	}
	left := max(r.Deadline.Sub(now).Round(time.Second), 0)
	return s + fmt.Sprintf(" · %s left", left)
}

// Votes is the votes part of the line: counted votes with who, which way
// and what they said, then how many were ignored.
func Votes(r *bot.Request) string {
	counted, ignored := 0, 0
	var who []string
	for _, v := range r.Votes {
		switch v.Result {
		case bot.Counted:
			counted++
			name := v.Name
			if name == "" {
				name = v.Voter.String()
			}
			s := Clean(name) + " " + string(v.Choice)
			if v.Reason != "" {
				s += fmt.Sprintf(": %q", Clean(v.Reason))
			}
			who = append(who, s)
		case bot.Ignored:
			ignored++
		}
	}
	s := fmt.Sprintf("%d vote", counted)
	if counted != 1 {
		s += "s"
	}
	if len(who) > 0 {
		s += " (" + strings.Join(who, ", ") + ")"
	}
	if ignored > 0 {
		s += fmt.Sprintf(", %d ignored", ignored)
	}
	return s
}

// Clean makes outside text safe for one terminal line: it is the shared
// bot.Escape (control characters, bidirectional overrides, invisible format
// characters and newlines written as \x1b, \u202e, \n …), so a voter's
// reason cannot move the cursor, forge a line or hide text; it is cut at
// 200 runes (before escaping, so an escape is never cut in half).
func Clean(s string) string {
	n := 0
	for i := range s {
		if n == 200 {
			return bot.Escape(s[:i]) + "…"
		}
		n++
	}
	return bot.Escape(s)
}
