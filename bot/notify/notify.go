package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/signoff/signoff/bot"
)

// DefaultTimeout is a notify command's time limit when the persona gives none.
const DefaultTimeout = 10 * time.Second

// MaxRunning bounds the notify commands running at once on a replica: a
// burst of requests must not become a burst of processes.
const MaxRunning = 8

// Message is what the command reads on stdin: the request, and the
// commands that answer it.
type Message struct {
	Request *bot.Request `json:"request"`
	// Approve and Show are the commands a person runs, e.g.
	// "signoff approve 01J…".
	Approve string `json:"approve"`
	Deny    string `json:"deny"`
	Show    string `json:"show"`
}

// NewMessage is m for r.
func NewMessage(r *bot.Request) Message {
	return Message{Request: r, Approve: "signoff approve " + r.ID, Deny: "signoff deny " + r.ID, Show: "signoff show " + r.ID}
}

// Runner runs personas' notify commands. The zero value is ready; Close
// waits for the commands still running.
type Runner struct {
	Logger *slog.Logger
	// Env is the commands' environment (nil: PATH, HOME, LANG, TMPDIR
	// and USER from this process, nothing else).
	Env []string

	once sync.Once
	sem  chan struct{}
	wg   sync.WaitGroup
}

// Notify starts p's notify command for r, if p has one, and returns at
// once; the outcome is logged. A command still running when MaxRunning
// others are is not started (and the log says so).
func (n *Runner) Notify(r *bot.Request, p bot.Persona) {
	if p.Notify == nil || len(p.Notify.Command) == 0 {
		return
	}
	n.once.Do(func() { n.sem = make(chan struct{}, MaxRunning) })
	select {
	case n.sem <- struct{}{}:
	default:
		n.log().Warn("notify: not run, too many notify commands running", "id", r.ID, "persona", p.Name, "max", MaxRunning)
		return
	}
	n.wg.Add(1)
	go func() {
		defer func() { <-n.sem; n.wg.Done() }()
		start := time.Now()
		out, err := Run(context.Background(), *p.Notify, r, n.Env)
		if err != nil {
			n.log().Warn("notify command failed", "id", r.ID, "persona", p.Name, "command", p.Notify.Command[0], "err", err, "output", out)
			return
		}
		n.log().Info("notify command ran", "id", r.ID, "persona", p.Name, "command", p.Notify.Command[0], "took", time.Since(start).Round(time.Millisecond))
	}()
}

// Close waits for the notify commands still running (each ends by its
// time limit).
func (n *Runner) Close() { n.wg.Wait() }

func (n *Runner) log() *slog.Logger {
	if n.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return n.Logger
}

// maxOutput is how much of a failed command's output is kept for the log.
const maxOutput = 2 << 10

// ErrTimeout is Run's error when the command outlived its limit.
var ErrTimeout = errors.New("notify command killed: it outlived its time limit")

// Run runs cmd with r's Message as JSON on stdin and waits, at most
// cmd.Timeout (DefaultTimeout when 0); then the command's whole process
// group is killed. env nil gives the small default environment. It returns
// the command's combined output, clipped, for the log.
func Run(ctx context.Context, cmd bot.Notify, r *bot.Request, env []string) (string, error) {
	if len(cmd.Command) == 0 {
		return "", errors.New("notify: no command")
	}
	limit := cmd.Timeout
	if limit <= 0 {
		limit = DefaultTimeout
	}
	body, err := json.Marshal(NewMessage(r))
	if err != nil {
		return "", fmt.Errorf("notify: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Command[0], cmd.Command[1:]...)
	c.Stdin = bytes.NewReader(append(body, '\n'))
	var out clipped
	c.Stdout, c.Stderr = &out, &out
	c.Env = env
	if env == nil {
		c.Env = DefaultEnv()
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = time.Second
	err = c.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return out.String(), fmt.Errorf("%w (%s)", ErrTimeout, limit)
	}
	if err != nil {
		return out.String(), fmt.Errorf("notify command %s: %w", cmd.Command[0], err)
	}
	return out.String(), nil
}

// DefaultEnv is the notify command's environment: enough to find programs
// and a home, none of the gateway's settings or secrets.
func DefaultEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "LANG", "TMPDIR", "USER"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// clipped keeps the first maxOutput bytes written to it.
type clipped struct {
	mu sync.Mutex
	b  strings.Builder
}

func (c *clipped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := maxOutput - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *clipped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.TrimSpace(c.b.String())
}
