//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkRunStartup: `signoff run -- true` beside its floor, a plain
// exec of `true`, in one run (the design's goal: at most 20 ms added).
func BenchmarkRunStartup(b *testing.B) {
	w := newWorld(b)
	b.Run("plain-exec", func(b *testing.B) {
		for b.Loop() {
			must(b, w.cmd(w.ws, "true").Run())
		}
	})
	b.Run("inside-run", func(b *testing.B) {
		for b.Loop() {
			if out, err := w.cmd(w.ws, "signoff", "run", "--quiet", "--", "true").CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
}

// BenchmarkRunGitStatusAndBuild: `git status` and a warm `go build ./...`
// of this repository, outside and inside signoff run, in one run (goal:
// at most 5% slower inside).
func BenchmarkRunGitStatusAndBuild(b *testing.B) {
	w := newWorld(b)
	repo, err := filepath.Abs("../..")
	must(b, err)
	cache := strings.TrimSpace(goEnv(b, "GOCACHE"))
	modcache := strings.TrimSpace(goEnv(b, "GOMODCACHE"))
	persona := filepath.Join(w.home, ".config/signoff/personas")
	entries, _ := os.ReadDir(persona)
	for _, e := range entries {
		f, err := os.OpenFile(filepath.Join(persona, e.Name()), os.O_APPEND|os.O_WRONLY, 0)
		must(b, err)
		_, err = f.WriteString("sandbox:\n  writable: [" + cache + "]\n")
		f.Close()
		must(b, err)
	}
	w.serve.Process.Kill()
	w.serve.Wait()
	w.url = ""
	w.startServe()
	w.env = append(w.env, "GOCACHE="+cache, "GOMODCACHE="+modcache, "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local",
		"GOPATH="+filepath.Dir(filepath.Dir(modcache)), "GOROOT="+runtime.GOROOT())
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	must(b, w.cmd(repo, goBin, "build", "./...").Run()) // warm
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"git-status", []string{"git", "status", "--short"}},
		{"go-build", []string{goBin, "build", "./..."}},
	} {
		b.Run(tc.name+"/outside", func(b *testing.B) {
			for b.Loop() {
				if out, err := w.cmd(repo, tc.argv[0], tc.argv[1:]...).CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
		b.Run(tc.name+"/inside", func(b *testing.B) {
			args := append([]string{"run", "--quiet", "--"}, tc.argv...)
			for b.Loop() {
				if out, err := w.cmd(repo, "signoff", args...).CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}

func goEnv(b *testing.B, name string) string {
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "env", name).Output()
	must(b, err)
	return string(out)
}
