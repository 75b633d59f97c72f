package notify_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/signoff/signoff/bot/notify"
	"github.com/signoff/signoff/bot/notify/notifytest"
)

// TestDesktopNotifiesOverTheSessionBus: a real dbus-daemon, a notification
// server on it; Notify reaches it.
func TestDesktopNotifiesOverTheSessionBus(t *testing.T) {
	addr, got := notifytest.SessionBus(t)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	d, err := notify.OpenDesktop()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Notify("signoff: demo asks", "rm -rf /tmp/x"); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n.App != "signoff" || n.Summary != "signoff: demo asks" || n.Body != "rm -rf /tmp/x" {
			t.Errorf("got %+v", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification in 5s")
	}
}

// TestDesktopSaysWhyItCannot: no bus, or a bus with no notification
// server, is one clear line.
func TestDesktopSaysWhyItCannot(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	if _, err := notify.OpenDesktop(); !errors.Is(err, notify.ErrNoSessionBus) {
		t.Errorf("no bus: %v", err)
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", notifytest.EmptyBus(t))
	if _, err := notify.OpenDesktop(); err == nil || !strings.Contains(err.Error(), "no notification server") {
		t.Errorf("empty bus: %v", err)
	}
}
