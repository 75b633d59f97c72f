package main

import (
	"context"
	"crypto/aes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip04"
	"github.com/nbd-wtf/go-nostr/nip19"
	"github.com/nbd-wtf/go-nostr/nip44"
	"github.com/nbd-wtf/go-nostr/nip46"

	signoffnostr "github.com/signoff/signoff/adapters/nostr"
	"github.com/signoff/signoff/bot"
	"github.com/signoff/signoff/signing"
)

// bunkerEnv is read by approve and deny only: a remote signer to sign with
// instead of a key file. The agent can set it too; a bunker is safer than
// a key file only because the person's signer asks them before it signs.
type bunkerEnv struct {
	Bunker secret `desc:"a NIP-46 remote signer (bunker://…) approve and deny sign with instead of a key file"`
}

func bunkerFromEnv() (string, error) {
	var e bunkerEnv
	if err := envconfig.Process("signoff", &e); err != nil {
		return "", fmt.Errorf("configuration: %w", err)
	}
	return string(e.Bunker), nil
}

// Waiting for a person: the default and the most a reaction can wait for
// its signature before the gateway would find it stale.
const (
	defaultBunkerWait = 2 * time.Minute
	maxBunkerWait     = signing.MaxEventAge - time.Minute
	bunkerDialTimeout = 10 * time.Second
)

// bunkerProgress is how often a wait for the signer says how long is left.
var bunkerProgress = 10 * time.Second

// bunkerClientKeyPath is the session key signoff talks to signers with,
// beside the person's key file. It encrypts the NIP-46 conversation and
// signs no votes; the agent's user can read it, and it grants nothing the
// signer does not confirm.
func bunkerClientKeyPath() string {
	return filepath.Join(filepath.Dir(defaultKeyPath()), "bunker-client.key")
}

// bunkerSession is one NIP-46 conversation with a remote signer: go-nostr's
// nip46 messages (Request, Response), encrypted with NIP-04 as go-nostr's
// nip46 client does (answers in NIP-44 are read too), on relays this
// session connects and closes.
//
// go-nostr v0.38.2's nip46.BunkerClient is not used for the exchange: its
// RPC can miss the signal that a relay is connected (an unbuffered send
// with a default) and then wait out the whole deadline with the answer
// blocked behind it, after which that send panics on a closed channel —
// both seen in this package's tests; and it shares its relay list with the
// pool's subscription, which rewrites it (a data race).
type bunkerSession struct {
	url    *signing.BunkerURL
	sk     string // the session (client) key, hex
	shared []byte // NIP-04 key with the signer
	conv   [32]byte
	prefix string // fresh per session: an answer to another session matches nothing
	serial atomic.Uint64
	pubkey string // the key the signer holds (get_public_key)
	stderr io.Writer

	relays  []*nostr.Relay
	answers chan nip46.Response
	live    atomic.Int32  // readers still running
	gone    chan struct{} // closed by the last reader to stop
	cancel  context.CancelFunc
	readers sync.WaitGroup
	// inflight are publishes still waiting for a relay's OK; a relay is
	// closed only after them (go-nostr v0.38.2 races a write in flight
	// with its close).
	inflight sync.WaitGroup
	closes   []func()
}

// openBunker reaches the signer's relays, connects (the signer may ask the
// person to accept this client) and asks which key it holds, all before
// deadline.
func openBunker(ctx context.Context, stderr io.Writer, b *signing.BunkerURL, clientKey *signing.Key, deadline time.Time) (*bunkerSession, error) {
	_, sk, err := nip19.Decode(clientKey.Nsec())
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	nonce := make([]byte, 8)
	rand.Read(nonce)
	s := &bunkerSession{url: b, sk: sk.(string), prefix: hex.EncodeToString(nonce), stderr: stderr,
		answers: make(chan nip46.Response, 64), gone: make(chan struct{})}
	if s.shared, err = nip04.ComputeSharedSecret(b.Signer, s.sk); err != nil {
		return nil, fmt.Errorf("session with your signer: %w", err)
	}
	if s.conv, err = nip44.GenerateConversationKey(b.Signer, s.sk); err != nil {
		return nil, fmt.Errorf("session with your signer: %w", err)
	}
	ctx, cancelWait := context.WithDeadline(ctx, deadline)
	defer cancelWait()
	sctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel

	// Answers from a minute back: a phone's clock may lag; ids are fresh
	// per session, so an old answer matches nothing.
	since := nostr.Timestamp(time.Now().Add(-time.Minute).Unix())
	filter := nostr.Filter{Kinds: []int{nostr.KindNostrConnect}, Authors: []string{b.Signer},
		Tags: nostr.TagMap{"p": {clientKey.PublicKey()}}, Since: &since}
	var failed []string
	var subs []*nostr.Subscription
	for _, u := range b.Relays {
		r, closeRelay, err := dialBunkerRelay(ctx, u)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", u, err))
			continue
		}
		s.closes = append(s.closes, closeRelay)
		// Subscribe returns once the REQ is written: the relay hears it
		// before the request on the same connection, so an answer that
		// comes at once is not missed (relays keep no NIP-46 messages).
		sub, err := r.Subscribe(sctx, nostr.Filters{filter})
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", u, err))
			continue
		}
		s.relays = append(s.relays, r)
		subs = append(subs, sub)
	}
	s.live.Store(int32(len(subs)))
	for _, sub := range subs {
		s.readers.Go(func() { s.read(sub) })
	}
	if len(s.relays) == 0 {
		s.Close()
		return nil, fmt.Errorf("cannot reach your signer's relay (%s)", strings.Join(failed, "; "))
	}
	for _, f := range failed {
		fmt.Fprintf(stderr, "signoff: cannot reach %s; trying the others\n", f)
	}

	stop := s.progress(ctx, "waiting for your signer to accept this connection", deadline)
	// connect: the signer's key, the URL's one-time secret, and the only
	// permission signoff needs (NIP-46 perms): signing reactions.
	_, err = s.call(ctx, "connect", b.Signer, b.Secret, "sign_event:7")
	if err == nil {
		s.pubkey, err = s.call(ctx, "get_public_key")
	}
	stop()
	if err != nil {
		s.Close()
		return nil, s.waitError(ctx, err, "connect")
	}
	if len(s.pubkey) != 64 || strings.ToLower(s.pubkey) != s.pubkey || !nostr.IsValidPublicKey(s.pubkey) {
		s.Close()
		return nil, fmt.Errorf("your signer answered get_public_key with %q, not a public key", bot.Escape(clipText(s.pubkey)))
	}
	return s, nil
}

// Npub is the key the signer signs with.
func (s *bunkerSession) Npub() string {
	n, _ := nip19.EncodePublicKey(s.pubkey)
	return n
}

// Sign asks the signer to sign asked and returns it signed, checked to be
// exactly the event asked, by the key the signer said it holds.
func (s *bunkerSession) Sign(ctx context.Context, asked nostr.Event, deadline time.Time) (json.RawMessage, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// NIP-46 sign_event takes {kind, content, tags, created_at}.
	unsigned, err := json.Marshal(struct {
		Kind      int             `json:"kind"`
		Content   string          `json:"content"`
		Tags      nostr.Tags      `json:"tags"`
		CreatedAt nostr.Timestamp `json:"created_at"`
	}{asked.Kind, asked.Content, asked.Tags, asked.CreatedAt})
	if err != nil {
		return nil, err
	}
	stop := s.progress(ctx, "waiting for your signer to confirm", deadline)
	res, err := s.call(ctx, "sign_event", string(unsigned))
	stop()
	if err != nil {
		return nil, s.waitError(ctx, err, "sign")
	}
	raw, err := signing.CheckSignedAsAsked(asked, s.pubkey, []byte(res))
	if err != nil {
		return nil, fmt.Errorf("refused what your signer returned: %v", err)
	}
	return raw, nil
}

// errSignerRefused is an answer carrying an error: the person said no, or
// the signer cannot do what was asked.
type errSignerRefused struct{ msg string }

func (e errSignerRefused) Error() string { return e.msg }

var errRelaysGone = errors.New("every relay to your signer closed the connection")

// call sends one NIP-46 request and waits for its answer.
func (s *bunkerSession) call(ctx context.Context, method string, params ...string) (string, error) {
	id := s.prefix + "-" + strconv.FormatUint(s.serial.Add(1), 10)
	body, err := json.Marshal(nip46.Request{ID: id, Method: method, Params: params})
	if err != nil {
		return "", err
	}
	content, err := nip04.Encrypt(string(body), s.shared)
	if err != nil {
		return "", fmt.Errorf("encrypt request: %w", err)
	}
	ev := nostr.Event{Kind: nostr.KindNostrConnect, CreatedAt: nostr.Now(), Content: content, Tags: nostr.Tags{{"p", s.url.Signer}}}
	if err := ev.Sign(s.sk); err != nil {
		return "", fmt.Errorf("sign request: %w", err)
	}
	if err := s.publish(ctx, ev); err != nil {
		return "", err
	}
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-s.gone:
			return "", errRelaysGone
		case resp := <-s.answers:
			switch {
			case resp.ID != id:
				continue
			case resp.Result == "auth_url": // NIP-46: the person confirms at a URL
				fmt.Fprintf(s.stderr, "your signer asks you to confirm at %s\n", bot.Escape(clipText(resp.Error)))
				continue
			case resp.Error != "":
				return "", errSignerRefused{resp.Error}
			}
			return resp.Result, nil
		}
	}
}

// publish sends ev to every relay; one accepting it is enough.
func (s *bunkerSession) publish(ctx context.Context, ev nostr.Event) error {
	pctx, cancel := context.WithTimeout(ctx, bunkerDialTimeout)
	defer cancel()
	errs := make(chan error, len(s.relays))
	for _, r := range s.relays {
		s.inflight.Go(func() {
			if err := r.Publish(pctx, ev); err != nil {
				errs <- fmt.Errorf("%s: %v", r.URL, err)
				return
			}
			errs <- nil
		})
	}
	var failed []string
	for range s.relays {
		err := <-errs
		if err == nil {
			return nil
		}
		failed = append(failed, err.Error())
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("no relay took the request to your signer (%s)", bot.Escape(clipText(strings.Join(failed, "; "))))
}

// read hands the signer's answers on one relay to call. It never blocks
// the relay connection: with call not listening and the buffer full, an
// answer is dropped (and call times out).
func (s *bunkerSession) read(sub *nostr.Subscription) {
	defer func() {
		if s.live.Add(-1) == 0 {
			close(s.gone)
		}
	}()
	// Until Events closes, which go-nostr does once the CLOSE for the
	// subscription is written: the relay is closed only after that.
	for ev := range sub.Events {
		if ev.PubKey != s.url.Signer || ev.Kind != nostr.KindNostrConnect {
			continue
		}
		plain, err := s.decrypt(ev.Content)
		if err != nil {
			continue
		}
		var resp nip46.Response
		if json.Unmarshal([]byte(plain), &resp) != nil {
			continue
		}
		select {
		case s.answers <- resp:
		default:
		}
	}
}

// decrypt reads an answer in NIP-04 (what was sent) or NIP-44. The NIP-04
// lengths are checked first: go-nostr's Decrypt panics on a wrong IV or a
// ciphertext that is not whole blocks.
func (s *bunkerSession) decrypt(content string) (string, error) {
	ct, iv, ok := strings.Cut(content, "?iv=")
	if !ok {
		return nip44.Decrypt(content, s.conv)
	}
	c, err1 := base64.StdEncoding.DecodeString(ct)
	v, err2 := base64.StdEncoding.DecodeString(iv)
	if err1 != nil || err2 != nil || len(v) != aes.BlockSize || len(c) == 0 || len(c)%aes.BlockSize != 0 {
		return "", errors.New("malformed NIP-04 message")
	}
	return nip04.Decrypt(content, s.shared)
}

// Close ends the conversation and closes the relays.
func (s *bunkerSession) Close() {
	s.cancel()
	s.inflight.Wait()
	s.readers.Wait()
	for _, c := range s.closes {
		c()
	}
}

// waitError says why a wait for the signer ended.
func (s *bunkerSession) waitError(ctx context.Context, err error, what string) error {
	where := fmt.Sprintf("signer %s… on %s", s.url.Signer[:12], strings.Join(s.url.Relays, ", "))
	var refused errSignerRefused
	switch {
	case errors.As(err, &refused):
		return fmt.Errorf("your signer refused to %s: %s", what, bot.Escape(clipText(refused.msg)))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("your signer did not answer in time (%s): is it running, and did you confirm? (--bunker-timeout waits longer)", where)
	case ctx.Err() != nil:
		return fmt.Errorf("stopped waiting for your signer (%s)", where)
	}
	return fmt.Errorf("%s with your signer (%s): %s", what, where, bot.Escape(clipText(err.Error())))
}

// progress prints what is awaited, then how long is left every
// bunkerProgress until stop is called.
func (s *bunkerSession) progress(ctx context.Context, what string, deadline time.Time) (stop func()) {
	fmt.Fprintf(s.stderr, "%s… (up to %s; Ctrl-C to stop)\n", what, time.Until(deadline).Round(time.Second))
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(bunkerProgress)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				fmt.Fprintf(s.stderr, "still %s… %s left\n", what, time.Until(deadline).Round(time.Second))
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// dialBunkerRelay connects one relay within bunkerDialTimeout
// (nostr.DialRelay: its close avoids go-nostr's race in Relay.Close).
func dialBunkerRelay(ctx context.Context, url string) (*nostr.Relay, func(), error) {
	dctx, cancel := context.WithTimeout(ctx, bunkerDialTimeout)
	defer cancel()
	return signoffnostr.DialRelay(dctx, url)
}

func clipText(s string) string {
	if r := []rune(s); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return s
}

// bunkerReaction has the person's signer sign their reaction to the
// request's verified event: show is called with the signer's key before
// the signer is asked, so the person sees what they confirm.
func bunkerReaction(ctx context.Context, a *app, b *signing.BunkerURL, wait time.Duration, request *nostr.Event, c bot.Choice, reason string, show func(npub string)) (json.RawMessage, error) {
	asked, err := signing.UnsignedReaction(request.ID, request.PubKey, c, reason, time.Now())
	if err != nil {
		return nil, err
	}
	path := bunkerClientKeyPath()
	clientKey, made, err := signing.LoadOrCreateKey(path)
	if err != nil {
		return nil, fmt.Errorf("session key for your signer: %w", err)
	}
	if made {
		fmt.Fprintf(a.stderr, "made %s: the key signoff talks to signers with (it signs no votes)\n", path)
	}
	deadline := time.Now().Add(wait)
	fmt.Fprintf(a.stderr, "reaching your signer %s\n", b.Redacted())
	s, err := openBunker(ctx, a.stderr, b, clientKey, deadline)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	show(s.Npub())
	return s.Sign(ctx, asked, deadline)
}
