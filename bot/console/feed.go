package console

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/signoff/signoff/bot"
)

// SubBuffer is how many updates a page may fall behind before it is cut
// off (it then reconnects and reads the list afresh).
const SubBuffer = 1024

// queueSize bounds the changes heard but not yet read; past it the pages
// are told to read the list afresh rather than the gateway fall behind.
const queueSize = 4096

// readyWithin bounds how long a new page waits for the change
// subscription before it is answered with an error.
const readyWithin = 10 * time.Second

// Update is one thing a page following the feed is told: a request as it
// now is, or Resync (changes may have been missed: read the list again).
type Update struct {
	Request *bot.Request
	Resync  bool
}

// Sub is one page following the feed. C is closed when the page fell too
// far behind or the feed closed.
type Sub struct {
	C    <-chan Update
	c    chan Update
	gone bool // C closed; guarded by Feed.mu
}

// Feed fans every request change out to the console pages following it.
// It follows the store's change notices only while some page does, so a
// gateway nobody watches pays nothing for it. Close stops it.
type Feed struct {
	// Get reads a request as it now is.
	Get func(ctx context.Context, id string) (*bot.Request, error)
	// Follow subscribes to request changes of every replica until ctx
	// ends: fn("") once subscribed (and again after each reconnect:
	// changes meanwhile were missed), then fn(id) for each change.
	Follow func(ctx context.Context, fn func(id string)) error
	Logger *slog.Logger

	mu      sync.Mutex
	subs    map[*Sub]struct{}
	run     *session // the running subscription; nil while nobody follows
	closed  bool
	stopped sync.WaitGroup
}

type session struct {
	cancel    context.CancelFunc
	ready     chan struct{}
	readyOnce sync.Once
	ids       chan string
}

func (f *Feed) log() *slog.Logger {
	if f.Logger != nil {
		return f.Logger
	}
	return slog.Default()
}

// Subscribe adds a page. It returns once changes are being followed, so
// a list read after it misses nothing; Unsubscribe must follow.
func (f *Feed) Subscribe(ctx context.Context) (*Sub, error) {
	c := make(chan Update, SubBuffer)
	s := &Sub{C: c, c: c}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, bot.Errorf(bot.EUnavailable, "the gateway is stopping")
	}
	if f.subs == nil {
		f.subs = map[*Sub]struct{}{}
	}
	f.subs[s] = struct{}{}
	run := f.run
	if run == nil {
		run = f.start()
	}
	f.mu.Unlock()
	select {
	case <-run.ready:
		return s, nil
	case <-ctx.Done():
		f.Unsubscribe(s)
		return nil, ctx.Err()
	case <-time.After(readyWithin):
		f.Unsubscribe(s)
		return nil, bot.Errorf(bot.EUnavailable, "the store's change notices are not answering")
	}
}

// Unsubscribe removes a page; the last one gone stops the following.
func (f *Feed) Unsubscribe(s *Sub) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs, s)
	if !s.gone {
		s.gone = true
		close(s.c)
	}
	if len(f.subs) == 0 && f.run != nil {
		f.run.cancel()
		f.run = nil
	}
}

// Close stops following and cuts every page off, and waits.
func (f *Feed) Close() {
	f.mu.Lock()
	f.closed = true
	if f.run != nil {
		f.run.cancel()
		f.run = nil
	}
	for s := range f.subs {
		if !s.gone {
			s.gone = true
			close(s.c)
		}
		delete(f.subs, s)
	}
	f.mu.Unlock()
	f.stopped.Wait()
}

// Followers is how many pages follow the feed.
func (f *Feed) Followers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// start begins a subscription session; f.mu is held.
func (f *Feed) start() *session {
	ctx, cancel := context.WithCancel(context.Background())
	run := &session{cancel: cancel, ready: make(chan struct{}), ids: make(chan string, queueSize)}
	f.run = run
	f.stopped.Add(2)
	go func() {
		defer f.stopped.Done()
		first := true
		bot.KeepFollowing(ctx, f.log(), "console feed", func(ctx context.Context) error {
			return f.Follow(ctx, func(id string) {
				if id != "" {
					select {
					case run.ids <- id:
					default: // too far behind: the pages read the list again
						f.broadcast(run, Update{Resync: true})
					}
					return
				}
				run.readyOnce.Do(func() { close(run.ready) })
				if !first {
					f.broadcast(run, Update{Resync: true})
				}
				first = false
			})
		})
	}()
	go func() {
		defer f.stopped.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case id := <-run.ids:
				r, err := f.Get(ctx, id)
				if err != nil {
					if ctx.Err() == nil && bot.ErrorCode(err) != bot.ENotFound {
						f.log().Warn("console feed: read request", "id", id, "err", err)
						f.broadcast(run, Update{Resync: true})
					}
					continue
				}
				f.broadcast(run, Update{Request: r})
			}
		}
	}()
	return run
}

// broadcast tells every page of session run; a page too far behind is
// cut off (its C closed) rather than slow the others.
func (f *Feed) broadcast(run *session, u Update) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.run != run {
		return // a session that was stopped
	}
	for s := range f.subs {
		select {
		case s.c <- u:
		default:
			s.gone = true
			close(s.c)
			delete(f.subs, s)
		}
	}
}

// FollowAll follows every one of follows as one Follow: each id is
// passed on; fn("") once all are subscribed, and again whenever one is
// made anew (changes may have been missed). It returns when any returns.
func FollowAll(follows ...func(ctx context.Context, fn func(id string)) error) func(ctx context.Context, fn func(id string)) error {
	return func(ctx context.Context, fn func(id string)) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var mu sync.Mutex
		subscribed := make([]bool, len(follows))
		all := false
		errc := make(chan error, len(follows))
		for i, f := range follows {
			go func() {
				errc <- f(ctx, func(id string) {
					mu.Lock()
					defer mu.Unlock()
					if id != "" {
						fn(id)
						return
					}
					subscribed[i] = true
					if !all {
						for _, ok := range subscribed {
							if !ok {
								return
							}
						}
						all = true
					}
					fn("")
				})
			}()
		}
		err := <-errc
		cancel()
		for range len(follows) - 1 {
			<-errc
		}
		return err
	}
}
