// Package notifytest runs a private D-Bus session bus (the real
// dbus-daemon) with a fake freedesktop notification server on it, so tests
// see exactly what a desktop would be asked to show.
package notifytest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// Notification is one Notify call the fake server received.
type Notification struct {
	App, Summary, Body string
}

type server struct{ got chan Notification }

func (s *server) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.got <- Notification{App: app, Summary: summary, Body: body}
	return 1, nil
}

// SessionBus starts dbus-daemon on a socket in a temporary folder and a
// notification server on it; it returns the bus address (for
// DBUS_SESSION_BUS_ADDRESS) and the notifications received. It fails the
// test when dbus-daemon is not installed (apt-get install dbus-daemon).
func SessionBus(t *testing.T) (addr string, got <-chan Notification) {
	t.Helper()
	addr = startBus(t)
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s := &server{got: make(chan Notification, 16)}
	if err := conn.Export(s, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own org.freedesktop.Notifications: %v %v", reply, err)
	}
	return addr, s.got
}

// EmptyBus is a session bus with no notification server on it.
func EmptyBus(t *testing.T) string {
	t.Helper()
	return startBus(t)
}

// startBus runs dbus-daemon and returns its address once it listens (it
// prints the address only then).
func startBus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Fatal("dbus-daemon is not installed (apt-get install dbus-daemon): the desktop notification tests need a real session bus")
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "--session", "--nofork", "--print-address=1", "--address=unix:path="+filepath.Join(dir, "bus"))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case addr := <-line:
		if addr == "" {
			t.Fatal("dbus-daemon printed no address")
		}
		return addr
	case <-time.After(10 * time.Second):
		t.Fatal("dbus-daemon printed no address in 10s")
	}
	return ""
}
