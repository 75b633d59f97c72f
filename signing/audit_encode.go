package signing

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// A record's line and its digest's input are the JSON that encoding/json
// makes of it. encoding/json validates and compacts a json.RawMessage each
// time it writes one, and a vote's record carries the reaction event as
// its evidence, compacted again for the record's digest and for its line:
// a share of the gateway's CPU worth saving (docs/performance.md,
// BenchmarkAuditAppend). A record built by
// newRecord holds Data and Evidence already as encoding/json writes them
// (compact, HTML-escaped), so its bytes are appended as they are; any
// other record (read back from a file or the store, a checkpoint) goes
// through encoding/json. TestRecordEncodingMatchesEncodingJSON and
// FuzzRecordEncoding hold the two to the same bytes.

// canonicalJSON is raw as encoding/json writes a json.RawMessage: compact,
// with <, >, & and U+2028/U+2029 escaped. It reports false for input that
// is not JSON.
func canonicalJSON(raw []byte) ([]byte, bool) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, false
	}
	var out bytes.Buffer
	json.HTMLEscape(&out, buf.Bytes())
	return out.Bytes(), true
}

// preimage is the JSON array a record's hash is taken of.
func (r *Record) preimage(version string) ([]byte, error) {
	if !r.canonical {
		evidence := r.Evidence
		if len(evidence) == 0 {
			evidence = json.RawMessage("null")
		}
		return json.Marshal([]any{version, r.Seq, r.Time, r.Type, r.RequestID, r.Data, evidence, r.Prev, r.Signer})
	}
	b := make([]byte, 0, 160+len(r.Data)+len(r.Evidence))
	b = append(b, '[')
	b = appendString(b, version)
	b = append(b, ',')
	b = strconv.AppendUint(b, r.Seq, 10)
	for _, s := range []string{r.Time, r.Type, r.RequestID} {
		b = append(b, ',')
		b = appendString(b, s)
	}
	b = append(b, ',')
	b = append(b, r.Data...)
	b = append(b, ',')
	if len(r.Evidence) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, r.Evidence...)
	}
	b = append(b, ',')
	b = appendString(b, r.Prev)
	b = append(b, ',')
	b = appendString(b, r.Signer)
	return append(b, ']'), nil
}

// line is the record as one line of the trail (without its newline).
func (r *Record) line() ([]byte, error) {
	if !r.canonical {
		return json.Marshal(r)
	}
	b := make([]byte, 0, 320+len(r.Data)+len(r.Evidence))
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = appendField(b, "time", r.Time)
	b = appendField(b, "type", r.Type)
	b = appendField(b, "request_id", r.RequestID)
	b = append(b, `,"data":`...)
	b = append(b, r.Data...)
	if len(r.Evidence) > 0 {
		b = append(b, `,"evidence":`...)
		b = append(b, r.Evidence...)
	}
	b = appendField(b, "prev", r.Prev)
	if r.Signer != "" {
		b = appendField(b, "signer", r.Signer)
	}
	b = appendField(b, "hash", r.Hash)
	if r.Sig != "" {
		b = appendField(b, "sig", r.Sig)
	}
	return append(b, '}'), nil
}

func appendField(b []byte, name, s string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, s)
}

// appendString appends s as encoding/json writes a string: as it is when
// it needs no escape (hashes, times, ids), else by encoding/json itself.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
