package proxy

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// IdentifyLoopback names the program behind a loopback client: the
// socket whose ends are client and server is found in /proc/net/tcp (or
// tcp6), and the process holding it in /proc/*/fd. It returns "" when the
// client is not on loopback, not on Linux, or not visible to this user.
func IdentifyLoopback(client, server net.Addr) string {
	c, err1 := netip.ParseAddrPort(client.String())
	s, err2 := netip.ParseAddrPort(server.String())
	if err1 != nil || err2 != nil || !c.Addr().Unmap().IsLoopback() {
		return ""
	}
	return identifyProc("/proc", c, s)
}

func identifyProc(root string, client, server netip.AddrPort) string {
	inode := ""
	for _, f := range []string{"net/tcp", "net/tcp6"} {
		if inode = findInode(filepath.Join(root, f), client, server); inode != "" {
			break
		}
	}
	if inode == "" || inode == "0" {
		return ""
	}
	want := "socket:[" + inode + "]"
	procs, _ := os.ReadDir(root)
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		dir := filepath.Join(root, p.Name(), "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && l == want {
				exe, err := os.Readlink(filepath.Join(root, p.Name(), "exe"))
				if err != nil {
					return ""
				}
				return strings.TrimSuffix(exe, " (deleted)")
			}
		}
	}
	return ""
}

// findInode returns the inode of the socket from client to server listed
// in a /proc/net/tcp file.
func findInode(file string, client, server netip.AddrPort) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		l, err1 := parseProcAddr(fields[1])
		r, err2 := parseProcAddr(fields[2])
		if err1 != nil || err2 != nil {
			continue
		}
		if sameEnd(l, client) && sameEnd(r, server) {
			return fields[9]
		}
	}
	return ""
}

func sameEnd(a, b netip.AddrPort) bool {
	return a.Port() == b.Port() && a.Addr().Unmap() == b.Addr().Unmap()
}

// parseProcAddr reads "0100007F:1F90": the address as 32-bit words in
// host (little-endian) order, then the port in hex.
func parseProcAddr(s string) (netip.AddrPort, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, err
	}
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw) != 4 && len(raw) != 16 {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a, uint16(port)), nil
}
