package nostr

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// pipe reads what a relay sent from in and collects our answers in out.
type pipe struct {
	io.Reader
	out *bytes.Buffer
}

func (p pipe) Write(b []byte) (int, error) { return p.out.Write(b) }

// TestReadRelayMessageCapsSize: a relay's oversized message is refused
// without reading it all; a normal one, after a ping, is read whole.
func TestReadRelayMessageCapsSize(t *testing.T) {
	var in, out bytes.Buffer
	wsutil.WriteServerMessage(&in, ws.OpPing, []byte("hi"))
	wsutil.WriteServerMessage(&in, ws.OpText, []byte(`["NOTICE","ok"]`))
	msg, err := readRelayMessage(pipe{&in, &out})
	if err != nil || string(msg) != `["NOTICE","ok"]` {
		t.Fatalf("got %q, %v", msg, err)
	}
	if out.Len() == 0 {
		t.Error("the ping was not answered")
	}

	in.Reset()
	wsutil.WriteServerMessage(&in, ws.OpText, []byte(`["NOTICE","`+strings.Repeat("x", maxRelayMessage)+`"]`))
	if _, err := readRelayMessage(pipe{&in, &out}); !errors.Is(err, wsutil.ErrMessageTooLarge) {
		t.Fatalf("oversized message: %v, want ErrMessageTooLarge", err)
	}
}

// FuzzDispatch feeds arbitrary relay messages to the dispatcher: it must
// never panic.
func FuzzDispatch(f *testing.F) {
	for _, s := range []string{`["EVENT","1:",{"id":"x"}]`, `["OK","ab",true,""]`, `["CLOSED","1:","auth-required: x"]`, `["NOTICE","hi"]`, `[`, `[1,2]`, `["EOSE","1:"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		c := &relayConn{oks: map[string][]chan okReply{}}
		c.h.event = func(string, json.RawMessage) {}
		c.h.closed = func(string, string) {}
		c.h.notice = func(string) {}
		c.dispatch(msg)
	})
}
