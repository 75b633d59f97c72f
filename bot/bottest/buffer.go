package bottest

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer that a server or a command may write to while
// the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Lines are the lines written so far that contain s.
func (l *Buffer) Lines(s string) []string {
	var out []string
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// Count is how many times s was written so far.
func (l *Buffer) Count(s string) int { return strings.Count(l.String(), s) }
