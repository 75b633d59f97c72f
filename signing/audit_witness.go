package signing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/signoff/signoff/bot"
)

// A witness keeps the newest signed checkpoint where the agent cannot
// reach it: the persona channels' Nostr relays (a replaceable event the
// gateway signs), the shared store, a file in the hidden data dir. A log
// cut shorter than a witness's checkpoint, or one that says something
// else at its height, is caught by `audit verify` — and by the gateway at
// start, which then stops publishing (so the evidence stays) and says so.

// WitnessKind is the witness event's kind: NIP-78 application data, a
// parameterized replaceable event (the relay keeps the newest per d tag).
const WitnessKind = 30078

// WitnessD is the witness event's d tag.
const WitnessD = "signoff-audit-checkpoint"

// Witness is one published checkpoint: its head and its record's line.
type Witness struct {
	Head
	Line []byte
}

// WitnessEvent is the relay event carrying checkpoint line, signed by key.
func WitnessEvent(key *Key, line []byte, seq uint64, at time.Time) (nostr.Event, error) {
	ev := nostr.Event{Kind: WitnessKind, CreatedAt: nostr.Timestamp(at.Unix()), Content: string(bytes.TrimSpace(line)),
		Tags: nostr.Tags{{"d", WitnessD}, {"seq", strconv.FormatUint(seq, 10)}, {"t", "signoff-audit"}}}
	if err := key.Sign(&ev); err != nil {
		return nostr.Event{}, err
	}
	return ev, nil
}

// ParseWitnessEvent checks a relay's witness event: signed by signer (hex),
// the witness kind and d tag, carrying a checkpoint signed by signer.
func ParseWitnessEvent(raw []byte, signer string) (Witness, error) {
	ev, err := VerifyEvent(raw)
	if err != nil {
		return Witness{}, err
	}
	if ev.PubKey != signer {
		return Witness{}, fmt.Errorf("witness event signed by %s, not the gateway", ev.PubKey)
	}
	if ev.Kind != WitnessKind || ev.Tags.GetD() != WitnessD {
		return Witness{}, errors.New("not a signoff audit witness event")
	}
	return ParseWitness([]byte(ev.Content), signer)
}

// ParseWitness reads a witnessed checkpoint line, checked under signer.
func ParseWitness(line []byte, signer string) (Witness, error) {
	h, err := ParseCheckpoint(line, signer)
	if err != nil {
		return Witness{}, err
	}
	return Witness{Head: h, Line: bytes.TrimSpace(line)}, nil
}

// WitnessTarget is one place checkpoints are published and read back.
type WitnessTarget interface {
	Name() string
	// Publish keeps w (a target may keep only the highest seq it saw).
	Publish(ctx context.Context, w Witness) error
	// Newest is the newest checkpoint the target holds under signer
	// (ok false when it holds none).
	Newest(ctx context.Context, signer string) (w Witness, ok bool, err error)
}

// FileWitness keeps the newest checkpoint in a file (in the gateway's data
// dir, which the sandbox hides from the agent).
type FileWitness struct{ Path string }

func (f FileWitness) Name() string { return "the data dir's witness " + f.Path }

// Publish writes w unless the file holds a higher seq.
func (f FileWitness) Publish(_ context.Context, w Witness) error {
	if b, err := os.ReadFile(f.Path); err == nil {
		var cur Record
		if json.Unmarshal(bytes.TrimSpace(b), &cur) == nil && cur.Seq > w.Seq {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return err
	}
	tmp := f.Path + ".tmp"
	if err := os.WriteFile(tmp, append(bytes.Clone(w.Line), '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, f.Path)
}

func (f FileWitness) Newest(_ context.Context, signer string) (Witness, bool, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return Witness{}, false, nil
	}
	if err != nil {
		return Witness{}, false, err
	}
	w, err := ParseWitness(b, signer)
	return w, err == nil, err
}

// Newest is the highest checkpoint any of targets holds, with where it
// was found; problems are what could not be read (a target that holds a
// checkpoint the gateway did not sign is one).
func Newest(ctx context.Context, targets []WitnessTarget, signer string) (best Witness, from string, problems []string) {
	for _, t := range targets {
		w, ok, err := t.Newest(ctx, signer)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", t.Name(), err))
			continue
		}
		if ok && w.Seq > best.Seq {
			best, from = w, t.Name()
		}
	}
	best.Source = from
	return best, from, problems
}

// Witnesses publishes each checkpoint a log signs to every target. It
// holds (publishes nothing more) once the log is found not to contain a
// witnessed checkpoint: the log was cut, or cut and written again (a
// fork), and the witnesses keep the evidence until a person looks.
type Witnesses struct {
	Targets []WitnessTarget
	Signer  string // the gateway key, hex
	Logger  *slog.Logger

	mu        sync.Mutex
	held      string
	latest    []byte
	published uint64
	kick      chan struct{}
}

func (ws *Witnesses) log() *slog.Logger {
	if ws.Logger != nil {
		return ws.Logger
	}
	return slog.Default()
}

// Check compares the log with the newest witnessed checkpoint: the log
// must hold that record. When it does not, ws holds, the reason is logged
// (AUDIT TRUNCATED or AUDIT FORK) and Ready fails with it.
func (ws *Witnesses) Check(ctx context.Context, l *AuditLog) {
	w, from, problems := Newest(ctx, ws.Targets, ws.Signer)
	for _, p := range problems {
		ws.log().Warn("audit witness unreadable", "problem", p)
	}
	if w.Seq == 0 {
		return
	}
	seq, _ := l.Head()
	if seq < w.Seq {
		// Another replica may have written (and witnessed) since this one
		// opened: what the store holds counts.
		if err := l.CatchUp(ctx); err != nil {
			ws.log().Warn("audit: cannot catch up with the store before checking the witnesses", "err", err)
		}
		seq, _ = l.Head()
	}
	var why string
	switch h := l.HashAt(w.Seq); {
	case seq < w.Seq || h == "":
		why = fmt.Sprintf("AUDIT TRUNCATED: the audit log ends at seq %d but %s holds a signed checkpoint at seq %d: %d record(s) are missing (the log was cut); checkpoints are no longer published, so the witnesses keep the evidence (see `signoff audit verify`)", seq, from, w.Seq, w.Seq-seq)
	case h != w.Hash:
		why = fmt.Sprintf("AUDIT FORK: the audit log's record at seq %d differs from the signed checkpoint %s holds at that seq (the log was cut and written again); checkpoints are no longer published, so the witnesses keep the evidence (see `signoff audit verify`)", w.Seq, from)
	default:
		return
	}
	ws.mu.Lock()
	ws.held = why
	ws.mu.Unlock()
	ws.log().Error(why)
}

// Ready fails while ws holds.
func (ws *Witnesses) Ready(context.Context) error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.held != "" {
		return bot.Errorf(bot.EUnavailable, "%s", ws.held)
	}
	return nil
}

// Checkpointed is the log's hook (AuditOptions.OnCheckpoint): the newest
// checkpoint, published by Run.
func (ws *Witnesses) Checkpointed(line []byte) {
	ws.mu.Lock()
	ws.latest = bytes.Clone(line)
	if ws.kick == nil {
		ws.kick = make(chan struct{}, 1)
	}
	kick := ws.kick
	ws.mu.Unlock()
	select {
	case kick <- struct{}{}:
	default:
	}
}

// Run publishes the newest checkpoint to every target, at most once every
// every (default 1s), until ctx ends.
func (ws *Witnesses) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = time.Second
	}
	ws.mu.Lock()
	if ws.kick == nil {
		ws.kick = make(chan struct{}, 1)
	}
	kick := ws.kick
	ws.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		ws.Flush(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// Flush publishes the newest checkpoint now, unless it is published
// already or ws holds (serve calls it once more after the log's last
// checkpoint at shutdown).
func (ws *Witnesses) Flush(ctx context.Context) {
	ws.mu.Lock()
	line, held, last := ws.latest, ws.held != "", ws.published
	ws.mu.Unlock()
	if held || line == nil {
		return
	}
	w, err := ParseWitness(line, ws.Signer)
	if err != nil || w.Seq <= last {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, t := range ws.Targets {
		if err := t.Publish(pctx, w); err != nil {
			ws.log().Warn("audit witness not published", "to", t.Name(), "seq", w.Seq, "err", err)
		}
	}
	ws.mu.Lock()
	ws.published = max(ws.published, w.Seq)
	ws.mu.Unlock()
}
