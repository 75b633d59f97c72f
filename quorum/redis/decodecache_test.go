package redis

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/signoff/signoff/bot"
)

// decodeRequestBefore is how a read decoded a request before the decode
// cache, kept as it was (from HGETALL's map): the cache must give the same
// request for the same text.
func decodeRequestBefore(h map[string]string, votes, msgs []string) (*bot.Request, error) {
	var r bot.Request
	if err := json.Unmarshal([]byte(h["doc"]), &r); err != nil {
		return nil, err
	}
	r.Status = bot.Status(h["status"])
	if ms, err := strconv.ParseInt(h["decided_at"], 10, 64); err == nil {
		t := time.UnixMilli(ms).UTC()
		r.DecidedAt = &t
	}
	if by := h["decided_by"]; by != "" {
		r.DecidedBy = strings.Split(by, "\n")
	}
	r.DecisionReason = h["reason"]
	r.Always = h["always"] == "1"
	if rc := h["receipt"]; rc != "" {
		r.Receipt = json.RawMessage(rc)
	}
	r.Votes = make([]bot.Vote, 0, len(votes))
	for _, line := range votes {
		parts := strings.SplitN(line, "\n", 3)
		if len(parts) != 3 {
			continue
		}
		var v bot.Vote
		if err := json.Unmarshal([]byte(parts[2]), &v); err != nil {
			continue
		}
		v.Result, v.Why = bot.Result(parts[0]), parts[1]
		r.Votes = append(r.Votes, v)
	}
	r.Messages = r.Messages[:0]
	for _, m := range msgs {
		var ref bot.MessageRef
		if json.Unmarshal([]byte(m), &ref) == nil {
			r.Messages = append(r.Messages, ref)
		}
	}
	return &r, nil
}

// Exported for the store's own tests (package redis_test).
var DecodeRequestBefore = decodeRequestBefore

// WithoutDecodeCache makes s decode every read afresh, as before the cache.
func WithoutDecodeCache(s *Store) *Store {
	s.decoded = nil
	return s
}

// DecodeCacheLen is how many requests s's decode cache keeps.
func DecodeCacheLen(s *Store) int {
	n, _ := s.decoded.held()
	return n
}

// NoticeChannel is the channel s's change notices are published on.
func (s *Store) NoticeChannel() string { return s.noticeChannel() }

// RequestKeys are the keys of request id (hash, votes, voters, seen, msgs).
func (s *Store) RequestKeys(id string) []string { return s.requestKeys(id) }

// fieldsOfHash is what HMGET of requestFields gives for hash h.
func fieldsOfHash(h map[string]string) fields {
	vals := make([]any, len(requestFields))
	for i, name := range requestFields {
		if v, ok := h[name]; ok {
			vals[i] = v
		}
	}
	return fieldsOf(vals)
}

// requestText is one request as Redis holds it: its hash and its lists.
type requestText struct {
	h           map[string]string
	votes, msgs []string
}

func randString(rng *rand.Rand) string {
	const chars = "abc xyz\n\"\\é{}:,"
	b := make([]rune, rng.IntN(8))
	for i := range b {
		b[i] = []rune(chars)[rng.IntN(len([]rune(chars)))]
	}
	return string(b)
}

func randTime(rng *rand.Rand) time.Time {
	zones := []*time.Location{time.UTC, time.FixedZone("", 3600), time.FixedZone("", -5*3600)}
	return time.UnixMilli(rng.Int64N(4e12)).In(zones[rng.IntN(len(zones))])
}

// randDoc is a request's doc: usually one Create would write, sometimes
// with the fields a read overwrites or leaves, sometimes malformed.
func randDoc(rng *rand.Rand) string {
	switch rng.IntN(12) {
	case 0:
		return []string{"{", "[]", "null", `{"reasons": 5}`, `{"id": "x"`, "{}", `{"messages": []}`, `{"messages": null}`, `{"votes": [{}]}`}[rng.IntN(9)]
	}
	var r bot.Request
	fill(reflect.ValueOf(&r).Elem(), rng, rng.IntN(3) == 0)
	if rng.IntN(2) == 0 {
		r.Votes, r.Messages = nil, nil // as Create writes it
	}
	if rng.IntN(3) == 0 {
		r.DecidedAt, r.DecidedBy, r.Receipt = nil, nil, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// randVoteLine is a line of a request's votes list ("result\nwhy\njson"),
// or sometimes a malformed one.
func randVoteLine(rng *rand.Rand) string {
	switch rng.IntN(8) {
	case 0:
		return []string{"", "counted", "counted\nwhy", "counted\nwhy\n{", "counted\n\n[]", "counted\nwhy\n{\"at\": 5}", "\n\nnull"}[rng.IntN(7)]
	}
	var v bot.Vote
	fill(reflect.ValueOf(&v).Elem(), rng, rng.IntN(2) == 0)
	b, _ := json.Marshal(v)
	return []string{"counted", "ignored", "duplicate"}[rng.IntN(3)] + "\n" + randString(rng) + "\n" + string(b)
}

func randMessageLine(rng *rand.Rand) string {
	switch rng.IntN(6) {
	case 0:
		return []string{"", "{", "null", `{"id": 5}`}[rng.IntN(4)]
	}
	var m bot.MessageRef
	fill(reflect.ValueOf(&m).Elem(), rng, rng.IntN(2) == 0)
	b, _ := json.Marshal(m)
	return string(b)
}

func newText(rng *rand.Rand) *requestText {
	return &requestText{h: map[string]string{"doc": randDoc(rng), "status": "pending", "persona": "{}"}}
}

// change makes one random change to t, as the store's writers would and
// some they would not (lines changed in place or removed, the doc changed).
func (t *requestText) change(rng *rand.Rand) {
	switch rng.IntN(14) {
	case 0, 1, 2, 3:
		t.votes = append(t.votes, randVoteLine(rng))
	case 4:
		if len(t.votes) > 0 {
			t.votes[rng.IntN(len(t.votes))] = randVoteLine(rng)
		}
	case 5:
		if len(t.votes) > 0 { // the same text in another string
			i := rng.IntN(len(t.votes))
			t.votes[i] = strings.Clone(t.votes[i])
		}
	case 6:
		if len(t.votes) > 0 {
			t.votes = t.votes[:rng.IntN(len(t.votes))]
		}
	case 7:
		t.h["doc"] = randDoc(rng)
	case 8:
		t.msgs = append(t.msgs, randMessageLine(rng))
	case 9:
		if len(t.msgs) > 0 {
			t.msgs[rng.IntN(len(t.msgs))] = randMessageLine(rng)
		}
	case 10, 11:
		name := []string{"status", "decided_at", "decided_by", "reason", "always", "receipt", "persona", "done:seal"}[rng.IntN(8)]
		vals := map[string][]string{
			"status":     {"pending", "approved", "denied", "expired", ""},
			"decided_at": {"", "1700000000123", "abc", "-5", "1e3"},
			"decided_by": {"", "alice", "alice\nbob", "\n"},
			"always":     {"", "1", "0", "true"},
			"receipt":    {"", `{"kind": 1}`, "not json"},
		}[name]
		v := randString(rng)
		if len(vals) > 0 {
			v = vals[rng.IntN(len(vals))]
		}
		if rng.IntN(5) == 0 {
			delete(t.h, name)
		} else {
			t.h[name] = v
		}
	case 12:
		*t = *newText(rng) // deleted and made again under the same id
	case 13:
		// nothing changed: the next read is all reuse
	}
}

// read decodes t through c and afresh, as a read would, and says how they
// differ.
func (t *requestText) read(c *decodeCache, id string) (*bot.Request, error) {
	// Each read gets its own strings, as each reply from Redis does.
	votes := make([]string, len(t.votes))
	for i, l := range t.votes {
		votes[i] = strings.Clone(l)
	}
	msgs := make([]string, len(t.msgs))
	for i, l := range t.msgs {
		msgs[i] = strings.Clone(l)
	}
	h := make(map[string]string, len(t.h))
	for k, v := range t.h {
		h[k] = strings.Clone(v)
	}
	return c.decode(id, fieldsOfHash(h), votes, msgs)
}

func sameDecode(t *testing.T, what string, got *bot.Request, gotErr error, want *bot.Request, wantErr error) {
	t.Helper()
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%s: error %v, want %v", what, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("%s: cached decode differs from decodeRequest\n got %s\nwant %s\n got %#v\nwant %#v", what, g, w, got, want)
	}
}

// checkBound checks that c holds no more than its bound, and that its
// count of bytes is the sum of its entries'.
func checkBound(t *testing.T, c *decodeCache) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := 0
	for el := c.lru.Front(); el != nil; el = el.Next() {
		sum += el.Value.(*decodedEntry).size
	}
	if len(c.m) > c.max || c.bytes > c.maxBytes || c.bytes != sum || c.lru.Len() != len(c.m) {
		t.Fatalf("cache holds %d requests (list %d), %d bytes (entries sum %d); bound %d, %d bytes",
			len(c.m), c.lru.Len(), c.bytes, sum, c.max, c.maxBytes)
	}
}

// TestDecodeCacheMatchesDecode: over random histories of a few requests
// (votes appended, lines malformed, changed in place or removed, docs
// changed or malformed, decision fields set and cleared, requests made
// again under the same id), every read through the cache is exactly what
// decodeRequest gave for the same text; every result is then scribbled
// over, which must not change the next read; and a small cache stays within
// its bound throughout.
func TestDecodeCacheMatchesDecode(t *testing.T) {
	for seed := range uint64(16) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 14))
			c := newDecodeCache(3, 200000)
			texts := make([]*requestText, 5)
			for i := range texts {
				texts[i] = newText(rng)
			}
			for step := range 200 {
				i := rng.IntN(len(texts))
				id := fmt.Sprint("req", i)
				texts[i].change(rng)
				for n := range 1 + rng.IntN(2) {
					got, gotErr := texts[i].read(c, id)
					want, wantErr := decodeRequestBefore(texts[i].h, texts[i].votes, texts[i].msgs)
					sameDecode(t, fmt.Sprintf("step %d read %d of %s", step, n, id), got, gotErr, want, wantErr)
					if got != nil {
						scribble(reflect.ValueOf(got).Elem())
					}
				}
				if rng.IntN(20) == 0 {
					c.drop(id)
				}
				checkBound(t, c)
			}
		})
	}
}

// TestDecodeCacheReusesUnchangedText: a read of a request with one new vote
// decodes that vote only (the others and the doc are the very values the
// cache already held), and a read of an unchanged request stores nothing.
func TestDecodeCacheReusesUnchangedText(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := newDecodeCache(maxDecoded, maxDecodedBytes)
	text := newText(rng)
	text.h["doc"] = `{"id": "r1", "reasons": ["a"]}`
	for range 5 {
		text.votes = append(text.votes, "counted\n\n"+`{"voter": {"platform": "nostr", "id": "x"}}`)
	}
	if _, err := text.read(c, "r1"); err != nil {
		t.Fatal(err)
	}
	first := c.get("r1")
	if _, err := text.read(c, "r1"); err != nil {
		t.Fatal(err)
	}
	if c.get("r1") != first {
		t.Error("a read of unchanged text stored a new entry")
	}
	text.votes = append(text.votes, "counted\n\n"+`{"voter": {"platform": "nostr", "id": "y"}}`)
	if _, err := text.read(c, "r1"); err != nil {
		t.Fatal(err)
	}
	second := c.get("r1")
	if second == first || len(second.votes) != 6 {
		t.Fatalf("after a new vote the entry is %p with %d votes (was %p)", second, len(second.votes), first)
	}
	for i := range 5 { // the same decoded strings, not equal ones
		if unsafe.StringData(second.votes[i].v.Voter.ID) != unsafe.StringData(first.votes[i].v.Voter.ID) {
			t.Errorf("vote %d was decoded again", i)
		}
	}
	if second.req.Reasons == nil || &second.req.Reasons[0] != &first.req.Reasons[0] {
		t.Error("the unchanged doc was decoded again")
	}
	if second.votes[5].v.Voter.ID != "y" {
		t.Errorf("new vote decoded as %+v", second.votes[5].v)
	}
}

// TestDecodeCacheBound: past maxDecoded requests the least recently read
// go first; past the byte bound too, and a request bigger than the whole
// bound is not kept.
func TestDecodeCacheBound(t *testing.T) {
	c := newDecodeCache(10, 10000)
	read := func(id string, votes int) {
		t.Helper()
		lines := make([]string, votes)
		for i := range lines {
			lines[i] = "counted\n\n" + `{"name": "` + strings.Repeat("n", 80) + `"}`
		}
		if _, err := c.decode(id, fields{doc: `{"id": "` + id + `"}`}, lines, nil); err != nil {
			t.Fatal(err)
		}
		checkBound(t, c)
	}
	for i := range 25 {
		read(fmt.Sprint("r", i), 0)
		read("r0", 0) // read often: stays
	}
	if n, _ := c.held(); n != 10 {
		t.Errorf("cache holds %d requests, want its bound 10", n)
	}
	if c.get("r0") == nil || c.get("r24") == nil || c.get("r1") != nil {
		t.Error("the least recently read were not the ones dropped")
	}
	read("big", 37) // ~9.9 KB counted: the bytes bound drops others
	if n, b := c.held(); b > 10000 || n >= 10 {
		t.Errorf("cache holds %d requests, %d bytes after a big one", n, b)
	}
	read("huge", 100) // more than the whole bound
	if c.get("huge") != nil {
		t.Error("a request bigger than the bound was kept")
	}
	c.drop("r0")
	if c.get("r0") != nil {
		t.Error("drop left the request")
	}
}

// TestCopyRequestSharesNothing: every field of a Request is filled, so a
// field added later is covered: the copy equals the original (but for the
// votes and messages, left to the caller) and shares no memory a caller
// could change with it; two reads of the same request through the cache
// share none either, down to their votes and messages.
func TestCopyRequestSharesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var r bot.Request
	fill(reflect.ValueOf(&r).Elem(), rng, true)
	rv := reflect.ValueOf(r)
	for i := range rv.NumField() {
		if rv.Field(i).IsZero() {
			t.Fatalf("fill left Request.%s zero: teach fill its type", rv.Type().Field(i).Name)
		}
	}
	c := copyRequest(&r)
	want := r
	want.Votes, want.Messages = nil, nil
	if !reflect.DeepEqual(c, &want) {
		t.Errorf("copy differs:\n got %#v\nwant %#v", c, want)
	}
	if s := shared(reflect.ValueOf(c).Elem(), reflect.ValueOf(&r).Elem(), "Request"); len(s) > 0 {
		t.Errorf("copy shares %s with the original", strings.Join(s, ", "))
	}

	doc, _ := json.Marshal(r)
	var v bot.Vote
	fill(reflect.ValueOf(&v).Elem(), rng, true)
	vote, _ := json.Marshal(v)
	var m bot.MessageRef
	fill(reflect.ValueOf(&m).Elem(), rng, true)
	msg, _ := json.Marshal(m)
	cache := newDecodeCache(maxDecoded, maxDecodedBytes)
	f := fields{doc: string(doc), status: "approved", decidedAt: "1700000000000", decidedBy: "a\nb", receipt: `{"k": 1}`}
	var reads [2]*bot.Request
	for i := range reads {
		var err error
		if reads[i], err = cache.decode("r", f, []string{"counted\nwhy\n" + string(vote)}, []string{string(msg)}); err != nil {
			t.Fatal(err)
		}
	}
	if len(reads[0].Votes) != 1 || len(reads[0].Messages) != 1 {
		t.Fatalf("read has %d votes, %d messages", len(reads[0].Votes), len(reads[0].Messages))
	}
	if s := shared(reflect.ValueOf(reads[0]).Elem(), reflect.ValueOf(reads[1]).Elem(), "Request"); len(s) > 0 {
		t.Errorf("two reads share %s", strings.Join(s, ", "))
	}
}

// FuzzDecodeCache: a request read, then read again after more votes, a
// changed doc, a vote line changed in place and changed decision fields,
// decodes through the cache exactly as decodeRequest does. Votes and
// messages are split on NUL, hash fields on NUL.
func FuzzDecodeCache(f *testing.F) {
	vote := "counted\n\n" + `{"voter": {"platform": "nostr", "id": "ab"}, "vote": "approve", "at": "2026-01-01T00:00:00Z"}`
	f.Add(`{"id": "r", "reasons": []}`, `{"id": "r", "messages": []}`, vote+"\x00x\x00"+vote+"\x00a\nb\n{", `{"platform":"nostr","id":"e"}`+"\x00{", "approved\x001700000000000\x00alice\nbob\x00why\x001\x00{}", uint8(2))
	f.Add("{", "null", "\x00\x00\n\n\n", "null", "", uint8(0))
	f.Fuzz(func(t *testing.T, doc1, doc2, votes, msgs, hash string, at uint8) {
		lines := strings.Split(votes, "\x00")
		ms := strings.Split(msgs, "\x00")
		h := map[string]string{"doc": doc1}
		for i, v := range strings.SplitN(hash, "\x00", len(requestFields)-1) {
			h[requestFields[i+1]] = v
		}
		c := newDecodeCache(maxDecoded, maxDecodedBytes)
		k := int(at) % (len(lines) + 1)
		steps := []func(){
			func() {},
			func() { lines = append(lines, lines[0]+"x") },
			func() { h["doc"] = doc2 },
			func() { lines[len(lines)-1] = strings.Clone(doc1) },
			func() { h["status"], h["decided_at"], h["receipt"] = "denied", "5", doc2 },
			func() { h["doc"] = doc1 },
		}
		cur := lines[:k]
		for i, step := range steps {
			step()
			if i == 1 {
				cur = lines
			}
			text := &requestText{h: h, votes: cur, msgs: ms}
			got, gotErr := text.read(c, "r")
			want, wantErr := decodeRequestBefore(h, cur, ms)
			sameDecode(t, fmt.Sprint("step ", i), got, gotErr, want, wantErr)
			if got != nil {
				scribble(reflect.ValueOf(got).Elem())
			}
		}
	})
}

// fill sets every field of v to something: strings, numbers, slices of
// two, pointers to filled values, raw JSON that marshals. With all false
// it leaves some slices nil or empty and some pointers nil.
func fill(v reflect.Value, rng *rand.Rand, all bool) {
	switch {
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		if all || rng.IntN(3) > 0 {
			v.SetBytes([]byte(strconv.Quote(randString(rng))))
		}
		return
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(randTime(rng)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		s := randString(rng)
		if all && s == "" {
			s = "s"
		}
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(all || rng.IntN(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(1 + rng.Int64N(100))
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(1 + rng.Uint64N(100))
	case reflect.Float64:
		v.SetFloat(1 + rng.Float64())
	case reflect.Pointer:
		if all || rng.IntN(2) == 0 {
			p := reflect.New(v.Type().Elem())
			fill(p.Elem(), rng, all)
			v.Set(p)
		}
	case reflect.Slice:
		n := 2
		if !all {
			n = rng.IntN(3)
			if n == 0 && rng.IntN(2) == 0 {
				return // nil
			}
		}
		s := reflect.MakeSlice(v.Type(), n, n+rng.IntN(2))
		for i := range n {
			fill(s.Index(i), rng, all)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, rng, all)
			fill(e, rng, all)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), rng, all)
			}
		}
	default:
		panic("fill: no case for " + v.Type().String())
	}
}

// scribble overwrites everything v holds, in place, as a careless caller
// might: every string, number, element and pointee.
func scribble(v reflect.Value) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.Unix(1, 0)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("scribbled")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(-7)
	case reflect.Uint8:
		v.SetUint('#')
	case reflect.Pointer:
		if !v.IsNil() {
			scribble(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			scribble(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			v.SetMapIndex(k, reflect.ValueOf("scribbled").Convert(v.Type().Elem()))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				scribble(v.Field(i))
			}
		}
	}
}

// shared lists the places where a and b (same type) share memory that a
// caller of one could change under the other: a slice's elements, a
// pointee, a map. A time's location is shared by design and never changed.
func shared(a, b reflect.Value, path string) []string {
	if a.Type() == reflect.TypeFor[time.Time]() {
		return nil
	}
	var out []string
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return nil
		}
		if a.Pointer() == b.Pointer() {
			out = append(out, path)
		}
		out = append(out, shared(a.Elem(), b.Elem(), "*"+path)...)
	case reflect.Slice:
		if a.Cap() > 0 && b.Cap() > 0 && a.Pointer() == b.Pointer() {
			out = append(out, path)
		}
		for i := range min(a.Len(), b.Len()) {
			out = append(out, shared(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
	case reflect.Map:
		if !a.IsNil() && a.Pointer() == b.Pointer() {
			out = append(out, path)
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				out = append(out, shared(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)...)
			}
		}
	}
	return out
}

// BenchmarkDecode decodes a request with 10 votes and a message, read
// again unchanged (as a re-poll does) and with one more vote each time (as
// the waiter does after a vote), through the cache and afresh.
func BenchmarkDecode(b *testing.B) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	hex := strings.Repeat("ab", 32)
	doc, _ := json.Marshal(bot.Request{
		ID: bot.NewID(), Persona: "ops", Kind: bot.KindCommand, Action: "rm -rf /tmp/build", Reason: "clean the build",
		Status: bot.Pending, Level: bot.Dangerous, Reasons: []string{"deletes files"}, CreatedAt: now, Deadline: now.Add(time.Hour),
		Event:   json.RawMessage(`{"id":"` + hex + `","pubkey":"` + hex + `","created_at":1700000000,"kind":1,"tags":[["t","signoff"]],"content":"rm -rf /tmp/build","sig":"` + hex + hex + `"}`),
		EventID: hex, GatewayKey: hex,
	})
	var votes []string
	for i := range 10 {
		line, _ := json.Marshal(bot.Vote{Voter: bot.Identity{Platform: bot.Nostr, ID: hex}, Name: fmt.Sprint("member", i), Choice: bot.Approve, Proof: bot.ProofSigned, At: now})
		votes = append(votes, "counted\n\n"+string(line))
	}
	msgs := []string{`{"platform":"nostr","id":"` + strings.Repeat("ab", 32) + `"}`}
	f := fields{doc: string(doc), status: "pending"}
	for _, cached := range []bool{true, false} {
		for _, grow := range []bool{false, true} {
			b.Run(fmt.Sprintf("cached=%v/new vote=%v", cached, grow), func(b *testing.B) {
				var c *decodeCache
				if cached {
					c = newDecodeCache(maxDecoded, maxDecodedBytes)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					lines := votes
					if grow { // the last of 10 is new on every read
						i++
						lines = append(votes[:9:9], votes[9]+strings.Repeat(" ", i%2))
					}
					if _, err := c.decode("r", f, lines, msgs); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
