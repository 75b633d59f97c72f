package notify

import (
	"errors"
	"fmt"
	"os"

	"github.com/godbus/dbus/v5"
)

// Desktop sends freedesktop notifications (org.freedesktop.Notifications
// on the session bus): what GNOME, KDE, dunst, mako and the rest show.
type Desktop struct {
	conn *dbus.Conn
}

// ErrNoSessionBus is OpenDesktop's error where no session bus is set.
var ErrNoSessionBus = errors.New("no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)")

// OpenDesktop connects to the session bus and checks that a notification
// server is there. Its error is one line a person can read.
func OpenDesktop() (*Desktop, error) {
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		return nil, ErrNoSessionBus
	}
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return nil, fmt.Errorf("cannot reach the D-Bus session bus: %v", err)
	}
	var names []string
	if err := conn.BusObject().Call("org.freedesktop.DBus.ListNames", 0).Store(&names); err != nil {
		conn.Close()
		return nil, fmt.Errorf("D-Bus session bus: %v", err)
	}
	var activatable []string
	_ = conn.BusObject().Call("org.freedesktop.DBus.ListActivatableNames", 0).Store(&activatable)
	for _, n := range append(names, activatable...) {
		if n == notificationsName {
			return &Desktop{conn: conn}, nil
		}
	}
	conn.Close()
	return nil, errors.New("no notification server on the D-Bus session bus (nothing owns " + notificationsName + ")")
}

const (
	notificationsName = "org.freedesktop.Notifications"
	notificationsPath = "/org/freedesktop/Notifications"
)

// Notify shows summary and body; it returns the notification's id.
func (d *Desktop) Notify(summary, body string) (uint32, error) {
	var id uint32
	obj := d.conn.Object(notificationsName, notificationsPath)
	call := obj.Call(notificationsName+".Notify", 0,
		"signoff", uint32(0), "dialog-question", summary, body, []string{}, map[string]dbus.Variant{
			"urgency": dbus.MakeVariant(byte(2)), // critical: stays until seen
		}, int32(-1))
	if err := call.Store(&id); err != nil {
		return 0, fmt.Errorf("desktop notification: %v", err)
	}
	return id, nil
}

// Close ends the bus connection.
func (d *Desktop) Close() error { return d.conn.Close() }
