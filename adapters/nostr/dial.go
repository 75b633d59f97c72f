package nostr

import (
	"context"
	"sync"

	gonostr "github.com/nbd-wtf/go-nostr"
)

// DialRelay connects to url with go-nostr's client and returns a close
// function that avoids go-nostr v0.38.2's data race in Relay.Close (it
// reads r.Connection while its own cleanup goroutine sets it to nil): the
// relay's context is cancelled first, its cleanup waited for through a
// never-sent sentinel subscription, then the socket closed. ctx bounds
// the dial only.
func DialRelay(ctx context.Context, url string) (*gonostr.Relay, func(), error) {
	cctx, cancel := context.WithCancel(context.Background())
	r := gonostr.NewRelay(cctx, url)
	if err := r.Connect(ctx); err != nil {
		cancel()
		return nil, nil, err
	}
	ws := r.Connection
	sentinel := r.PrepareSubscription(context.Background(), gonostr.Filters{{Limit: 1}})
	var once sync.Once
	return r, func() {
		once.Do(func() {
			cancel()
			<-sentinel.Context.Done()
			r.Close()
			ws.Close()
		})
	}, nil
}
