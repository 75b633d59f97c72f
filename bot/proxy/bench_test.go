package proxy_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/signoff/signoff/bot/proxy"
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

// BenchmarkHTTPS runs the same small GET to a local HTTPS server with its
// own certificate directly, through a plain CONNECT tunnel (a door with
// every method) and through an inspected door (read-only: the proxy opens
// TLS with its CA, checks the call, and re-encrypts upstream), keep-alive
// on every side, so the cost of each is the difference in one run.
func BenchmarkHTTPS(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	up := httptest.NewTLSServer(ok)
	defer up.Close()
	host, port := hostPort(b, up.URL)
	// A second server for the inspected door (every httptest server has
	// the same certificate): up is an open door (tunnel), in a read-only one.
	in := httptest.NewTLSServer(ok)
	defer in.Close()
	_, inPort := hostPort(b, in.URL)
	pol := fmt.Sprintf("hosts:\n  - {host: %q, port: %d, access: read-write}\n  - {host: %q, port: %d, access: read-only, paths: [/x]}\n", host, port, host, inPort)
	ca, err := proxy.LoadCA(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(up.Certificate())
	s := newStack(b, pol, func(p *proxy.Proxy) { p.CA = ca; p.UpstreamRoots = roots })
	trustUp := &tls.Config{RootCAs: roots}
	both := roots.Clone()
	both.AddCert(caCert(b, ca))
	run := func(b *testing.B, c *http.Client, u string) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := c.Get(u)
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
	direct := &http.Client{Transport: &http.Transport{TLSClientConfig: trustUp}}
	tunnel := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(s.proxyURL()), TLSClientConfig: trustUp}}
	inspected := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(s.proxyURL()), TLSClientConfig: &tls.Config{RootCAs: both}}}
	b.Run("direct", func(b *testing.B) { run(b, direct, up.URL+"/x") })
	b.Run("tunnel", func(b *testing.B) { run(b, tunnel, up.URL+"/x") })
	b.Run("inspected", func(b *testing.B) { run(b, inspected, in.URL+"/x") })
	// The three in turn, each iteration one request of each: on a shared
	// machine whose load drifts, the ratios are fairer than across runs.
	b.Run("interleaved", func(b *testing.B) {
		var d [3]time.Duration
		get := func(c *http.Client, u string) time.Duration {
			t0 := time.Now()
			resp, err := c.Get(u)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return time.Since(t0)
		}
		for b.Loop() {
			d[0] += get(direct, up.URL+"/x")
			d[1] += get(tunnel, up.URL+"/x")
			d[2] += get(inspected, in.URL+"/x")
		}
		n := float64(b.N)
		b.ReportMetric(float64(d[0].Nanoseconds())/n, "direct-ns/req")
		b.ReportMetric(float64(d[1].Nanoseconds())/n, "tunnel-ns/req")
		b.ReportMetric(float64(d[2].Nanoseconds())/n, "inspected-ns/req")
		b.ReportMetric(100*(float64(d[1])/float64(d[0])-1), "tunnel-%slower")
		b.ReportMetric(100*(float64(d[2])/float64(d[0])-1), "inspected-%slower")
	})
}

func caCert(b testing.TB, ca *proxy.CA) *x509.Certificate {
	blk, _ := pem.Decode(ca.PEM())
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		b.Fatal(err)
	}
	return c
}
