package readiness

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/signoff/signoff/bot"
)

// Store is what the Keeper needs of the store.
type Store interface {
	Ping(ctx context.Context) error
	// SyncPersonas makes the stored personas exactly ps.
	SyncPersonas(ctx context.Context, ps []bot.Persona) ([]string, error)
	// MarkLoaded records that the personas are in; Loaded reports whether
	// that record and every named persona are still there.
	MarkLoaded(ctx context.Context, by string) error
	Loaded(ctx context.Context, personas []string) (bool, error)
}

// Keeper loads the personas into the store and keeps them there.
type Keeper struct {
	Store    Store
	Personas []bot.Persona
	// Every is how often Run checks the store (default 1s).
	Every  time.Duration
	Logger *slog.Logger
	// ID names this replica in the marker.
	ID string
	// Claim, when set, runs at every Load once the personas are in: what
	// else the replica records in the store (the fleet's gateway key). An
	// error fails the Load, and /readyz says it.
	Claim func(ctx context.Context) error
	// Also are further checks Ready makes once the store is loaded (the
	// tokens service's: tokens lost). Ready fails with the first error.
	Also []func(ctx context.Context) error

	mu      sync.Mutex
	reloads int
	lost    string // why the store is not ready, until reloaded
	kick    chan struct{}
	once    sync.Once
}

func (k *Keeper) init() {
	k.once.Do(func() { k.kick = make(chan struct{}, 1) })
}

func (k *Keeper) log() *slog.Logger {
	if k.Logger != nil {
		return k.Logger
	}
	return slog.Default()
}

func (k *Keeper) names() []string {
	out := make([]string, len(k.Personas))
	for i, p := range k.Personas {
		out[i] = p.Name
	}
	return out
}

// Load stores the personas (removing any whose file is gone) and marks
// the store loaded. It returns the personas removed.
func (k *Keeper) Load(ctx context.Context) ([]string, error) {
	k.init()
	removed, err := k.Store.SyncPersonas(ctx, k.Personas)
	if err != nil {
		return removed, err
	}
	if k.Claim != nil {
		if err := k.Claim(ctx); err != nil {
			return removed, err
		}
	}
	if err := k.Store.MarkLoaded(ctx, k.ID); err != nil {
		return removed, err
	}
	return removed, nil
}

// Reloads reports how many times the Keeper found the store emptied and
// loaded it again.
func (k *Keeper) Reloads() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reloads
}

// Ready is the /readyz check: the store answers and still holds what was
// loaded. When it does not, the reload is started and the error says so.
func (k *Keeper) Ready(ctx context.Context) error {
	k.init()
	if err := k.Store.Ping(ctx); err != nil {
		return err
	}
	ok, err := k.Store.Loaded(ctx, k.names())
	if err != nil {
		return err
	}
	k.mu.Lock()
	lost := k.lost
	k.mu.Unlock()
	if ok && lost == "" {
		for _, check := range k.Also {
			if err := check(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	select {
	case k.kick <- struct{}{}:
	default:
	}
	if lost == "" {
		lost = "the store lost its data (it restarted empty?): loading the personas again"
	}
	return bot.Errorf(bot.EUnavailable, "%s", lost)
}

// Run checks the store every Every (and whenever Ready finds it emptied)
// until ctx ends; when the marker or a persona is gone it loads them
// again. Between noticing and reloading, Ready fails.
func (k *Keeper) Run(ctx context.Context) {
	k.init()
	every := k.Every
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-k.kick:
		}
		k.check(ctx)
	}
}

func (k *Keeper) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ok, err := k.Store.Loaded(cctx, k.names())
	if err != nil || ok {
		return // unreachable: Ready says so itself; or all there
	}
	k.mu.Lock()
	k.lost = "the store lost its data (it restarted empty?): loading the personas again"
	k.mu.Unlock()
	k.log().Warn("store lost its data: the personas and the loaded marker are gone; loading the personas again (requests that were pending there are lost and will be refused as unknown)")
	if _, err := k.Load(cctx); err != nil {
		k.log().Error("reload personas into the emptied store", "err", err)
		k.mu.Lock()
		k.lost = "the store lost its data (it restarted empty?) and could not be loaded again: " + err.Error()
		k.mu.Unlock()
		return
	}
	k.mu.Lock()
	k.lost = ""
	k.reloads++
	k.mu.Unlock()
	k.log().Info("personas loaded again into the emptied store", "personas", len(k.Personas))
}
