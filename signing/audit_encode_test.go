package signing

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/signoff/signoff/bot"
)

// slowEncodings are a record's line and digest input as encoding/json
// makes them: what every record was written with before audit_encode.go.
func slowEncodings(t testing.TB, r Record) (line, pre []byte) {
	t.Helper()
	r.canonical = false
	line, err := r.line()
	if err != nil {
		t.Fatal(err)
	}
	pre, err = r.preimage("signoff-audit-v2")
	if err != nil {
		t.Fatal(err)
	}
	return line, pre
}

// checkSameBytes builds e's record as the log does and holds its fast
// encodings to encoding/json's, byte for byte.
func checkSameBytes(t testing.TB, e bot.AuditEntry, seq uint64, time, prev, signer, sig string) {
	t.Helper()
	r, err := newRecord(e)
	if err != nil {
		return // the log refuses it too
	}
	if !r.canonical {
		t.Fatal("newRecord's record is not marked canonical")
	}
	r.Seq, r.Time, r.Prev, r.Signer, r.Sig = seq, time, prev, signer, sig
	d, err := r.digest()
	if err != nil {
		t.Fatal(err)
	}
	r.Hash = string(bytes.ToUpper([]byte{byte('a' + seq%26)})) + "h"
	wantLine, wantPre := slowEncodings(t, r)
	gotPre, _ := r.preimage("signoff-audit-v2")
	if !bytes.Equal(gotPre, wantPre) {
		t.Fatalf("digest input differs from encoding/json's:\n got %s\nwant %s", gotPre, wantPre)
	}
	gotLine, _ := r.line()
	if !bytes.Equal(gotLine, wantLine) {
		t.Fatalf("line differs from encoding/json's:\n got %s\nwant %s", gotLine, wantLine)
	}
	// A record read back from its line is not canonical: the slow path,
	// the same hash (for fields of valid UTF-8: encoding/json writes an
	// invalid byte as U+FFFD, so such a field reads back as another string).
	for _, s := range []string{r.Time, r.Type, r.RequestID, r.Prev, r.Signer, r.Sig} {
		if !utf8.ValidString(s) {
			return
		}
	}
	var back Record
	if err := json.Unmarshal(gotLine, &back); err != nil {
		t.Fatalf("line does not parse: %v\n%s", err, gotLine)
	}
	if back.canonical {
		t.Fatal("a record read back is marked canonical")
	}
	if d2, _ := back.digest(); d2 != d {
		t.Fatalf("the record read back hashes otherwise")
	}
}

func TestRecordEncodingMatchesEncodingJSON(t *testing.T) {
	evidences := []string{
		``,
		`{"kind":7,"content":"✅","tags":[["e","abc"],["p","def"]],"sig":"00"}`,
		"{ \"spaced\" : [ 1 , 2 ],\n\t\"html\": \"<b>&amp;</b>\" }",
		`"a string with \u2028 and ` + "\u2029" + ` and <script>"`,
		`not json at all <&>`,
		"\xff\xfe invalid utf-8",
		`{"nested":{"deep":[{"x":"\"quoted\\"}]}}`,
		`12.50`,
		`null`,
	}
	data := []any{
		nil,
		map[string]any{"status": "approved", "by": []string{"m1", "m2"}},
		map[string]any{"reason": "a <b>bold</b> & \"quoted\" reason\u2028with a separator", "n": 3},
		"plain",
		[]int{1, 2, 3},
	}
	strs := []string{"", "2026-12-01T20:00:00.123456789Z", "vote", "req-1", "<&>", "tab\there", "é", "\u2028", "\x00", "quote\"back\\"}
	n := 0
	for _, ev := range evidences {
		for _, d := range data {
			for i, s := range strs {
				e := bot.AuditEntry{Type: strs[(i+2)%len(strs)], RequestID: s, Data: d, Evidence: []byte(ev)}
				checkSameBytes(t, e, uint64(n), s, strs[(i+1)%len(strs)], strs[(i+3)%len(strs)], strs[(i+4)%len(strs)])
				n++
			}
		}
	}
}

func FuzzRecordEncoding(f *testing.F) {
	f.Add("vote", "req-1", "reason <&>", []byte(`{"kind":7,"content":"✅"}`), uint64(7), "2026-12-01T20:00:00Z", "00ff", "npub", "")
	f.Add("", "", "", []byte("{ \"a\" : \"\u2028\" }"), uint64(0), "", "", "", "sig")
	f.Add("\x00", "\xff", "\"", []byte("\xff"), uint64(1<<63), "\\", "<", ">", "&")
	f.Fuzz(func(t *testing.T, typ, id, reason string, evidence []byte, seq uint64, time, prev, signer, sig string) {
		e := bot.AuditEntry{Type: typ, RequestID: id, Data: map[string]any{"reason": reason}, Evidence: evidence}
		checkSameBytes(t, e, seq, time, prev, signer, sig)
	})
}
