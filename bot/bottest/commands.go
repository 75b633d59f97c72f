package bottest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// Commands records what a real client sends to Redis (add it with
// rdb.AddHook): each command as its name and first argument, and the round
// trips (a pipeline is one). Tag, when set, may rename a command as it is
// recorded (say, by who sent it).
type Commands struct {
	Tag func(name string) string

	mu    sync.Mutex
	cmds  []string
	args  [][]string // each command's arguments after its name
	trips int64
}

func (c *Commands) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (c *Commands) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		c.note(cmd)
		return next(ctx, cmd)
	}
}

func (c *Commands) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		c.note(cmds...)
		return next(ctx, cmds)
	}
}

func (c *Commands) note(cmds ...goredis.Cmder) {
	names := make([]string, len(cmds))
	args := make([][]string, len(cmds))
	for i, cmd := range cmds {
		for _, a := range cmd.Args()[1:] {
			if b, ok := a.([]byte); ok { // a script's line, say: as text
				a = string(b)
			}
			args[i] = append(args[i], fmt.Sprint(a))
		}
		names[i] = strings.ToUpper(cmd.Name())
		if args := cmd.Args(); len(args) > 1 {
			names[i] += " " + fmt.Sprint(args[1])
		}
		if c.Tag != nil {
			names[i] = c.Tag(names[i])
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cmds = append(c.cmds, names...)
	c.args = append(c.args, args...)
	c.trips++
}

// Reset forgets what was recorded.
func (c *Commands) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cmds, c.args, c.trips = nil, nil, 0
}

// Trips is the round trips recorded.
func (c *Commands) Trips() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trips
}

// Count is how many commands named name were sent with a first argument
// holding arg.
func (c *Commands) Count(name, arg string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.cmds {
		if cmd, first, _ := strings.Cut(s, " "); cmd == name && strings.Contains(first, arg) {
			n++
		}
	}
	return n
}

// Sent is how many commands named name (as recorded: upper case, or as
// Tag renamed it) were sent with arguments for which match is true.
func (c *Commands) Sent(name string, match func(args []string) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for i, s := range c.cmds {
		if cmd, _, _ := strings.Cut(s, " "); cmd == name && match(c.args[i]) {
			n++
		}
	}
	return n
}

// String lists the commands recorded.
func (c *Commands) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(c.cmds)
}

// TagListReads is a Commands.Tag marking each command sent by Store.List
// (the gateway's sweep lists pending requests, reading each) as
// "NAME(list)": a read of a request, but not one the code under test made.
func TagListReads(name string) string {
	buf := make([]byte, 16<<10)
	if !strings.Contains(string(buf[:runtime.Stack(buf, false)]), "(*Store).List(") {
		return name
	}
	cmd, rest, _ := strings.Cut(name, " ")
	return cmd + "(list) " + rest
}
