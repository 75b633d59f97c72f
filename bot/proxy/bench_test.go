package proxy_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkGet runs the same small GET to a loopback server directly and
// through the proxy (policy check, forward, keep-alive on both sides), so
// the proxy's added latency is the difference of the two in one run.
func BenchmarkGet(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	host, port := hostPort(b, up.URL)
	s := newStack(b, fmt.Sprintf("hosts:\n  - {host: %q, port: %d, access: read-only}\n", host, port), nil)
	run := func(b *testing.B, c *http.Client) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := c.Get(up.URL + "/x")
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, &http.Client{Transport: &http.Transport{}}) })
	b.Run("proxy", func(b *testing.B) {
		run(b, &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(s.proxyURL())}})
	})
}

// BenchmarkTunnel moves 1 MiB a call through a TCP connection to a sink,
// directly and through a CONNECT tunnel, for throughput (MB/s).
func BenchmarkTunnel(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // read a chunk, answer one byte
				defer c.Close()
				buf := make([]byte, 64<<10)
				var n int
				for {
					m, err := c.Read(buf)
					n += m
					if err != nil {
						return
					}
					for n >= 1<<20 {
						c.Write([]byte{1})
						n -= 1 << 20
					}
				}
			}()
		}
	}()
	host, port := hostPort(b, "http://"+ln.Addr().String())
	s := newStack(b, fmt.Sprintf("hosts:\n  - {host: %q, port: %d, access: read-write}\n", host, port), nil)
	chunk := make([]byte, 1<<20)
	run := func(b *testing.B, c net.Conn) {
		defer c.Close()
		b.SetBytes(int64(len(chunk)))
		one := make([]byte, 1)
		for b.Loop() {
			if _, err := c.Write(chunk); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, one); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("direct", func(b *testing.B) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		run(b, c)
	})
	b.Run("proxy", func(b *testing.B) {
		c, err := net.Dial("tcp", s.proxyLn.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(time.Minute))
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", ln.Addr(), ln.Addr())
		head := make([]byte, len("HTTP/1.1 200 Connection Established\r\n\r\n"))
		if _, err := io.ReadFull(c, head); err != nil || string(head[:12]) != "HTTP/1.1 200" {
			b.Fatalf("CONNECT: %q %v", head, err)
		}
		run(b, c)
	})
}
