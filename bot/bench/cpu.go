package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	goredis "github.com/redis/go-redis/v9"
)

// Where the loaded phase's CPU went: this process's (getrusage), split
// between the bench client and the rest (with --spawn, the gateway) by a
// CPU profile of the phase whose samples carry the client's label, and
// Redis's (INFO cpu). A vote's cost is then known in CPU time, which is
// what bounds votes/s on a machine whose cores are all busy.

// clientLabel marks every goroutine the bench client starts (profile
// labels are inherited by the goroutines a goroutine starts): its HTTP
// transport's, its Redis client's, the floor's server. A gateway started
// before Run carries no label.
const clientLabel = "signoff_bench"

// CPU is the loaded phase's CPU time.
type CPU struct {
	Process time.Duration // all of this process (rusage), 0 when unknown
	// Client is the bench client's part of Process, and Profiled the
	// profile's total it was found in (the profile samples; their sum
	// falls a little short of Process).
	Client, Profiled time.Duration
	Redis            time.Duration // redis-server's, from INFO cpu; 0 when unknown
	// GatewayHere: the gateway runs in this process (--spawn), so
	// Process minus Client is the gateway's.
	GatewayHere bool
	Err         string // why a part is missing
}

// cpuMeter measures one phase.
type cpuMeter struct {
	rdb   goredis.UniversalClient
	proc  time.Duration
	redis time.Duration
	prof  bytes.Buffer
	tee   io.Writer // the caller's --cpuprofile, when given
	on    bool
	errs  []string
}

func startCPU(ctx context.Context, rdb goredis.UniversalClient, tee io.Writer) (*cpuMeter, error) {
	m := &cpuMeter{rdb: rdb, tee: tee}
	w := io.Writer(&m.prof)
	if tee != nil {
		w = io.MultiWriter(&m.prof, tee)
	}
	if err := pprof.StartCPUProfile(w); err != nil {
		if tee != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		m.errs = append(m.errs, "no profile: "+err.Error())
	} else {
		m.on = true
	}
	m.proc, _ = processCPU()
	var err error
	if m.redis, err = redisCPU(ctx, rdb); err != nil {
		m.errs = append(m.errs, "Redis CPU: "+err.Error())
	}
	return m, nil
}

// stop ends the phase and says where its CPU went.
func (m *cpuMeter) stop(ctx context.Context, gatewayHere bool) CPU {
	c := CPU{GatewayHere: gatewayHere}
	if p, ok := processCPU(); ok && m.proc > 0 {
		c.Process = p - m.proc
	} else {
		m.errs = append(m.errs, "no process CPU time on this OS")
	}
	if r, err := redisCPU(ctx, m.rdb); err == nil && m.redis > 0 {
		c.Redis = r - m.redis
	}
	if m.on {
		pprof.StopCPUProfile()
		var err error
		if c.Client, c.Profiled, err = labeledCPU(m.prof.Bytes(), clientLabel); err != nil {
			m.errs = append(m.errs, "profile: "+err.Error())
		}
	}
	c.Err = strings.Join(m.errs, "; ")
	return c
}

// labeledCPU sums a CPU profile's samples, and those carrying label.
func labeledCPU(raw []byte, label string) (labeled, total time.Duration, err error) {
	p, err := profile.Parse(bytes.NewReader(raw))
	if err != nil {
		return 0, 0, err
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return 0, 0, fmt.Errorf("no cpu/nanoseconds samples in the profile")
	}
	for _, s := range p.Sample {
		d := time.Duration(s.Value[idx])
		total += d
		if len(s.Label[label]) > 0 {
			labeled += d
		}
	}
	return labeled, total, nil
}

// redisCPU is redis-server's CPU time so far (user + system).
func redisCPU(ctx context.Context, rdb goredis.UniversalClient) (time.Duration, error) {
	if rdb == nil {
		return 0, fmt.Errorf("no Redis client")
	}
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	return parseRedisCPU(info)
}

// parseRedisCPU reads used_cpu_sys and used_cpu_user from INFO cpu.
func parseRedisCPU(info string) (time.Duration, error) {
	var sum float64
	found := 0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (k != "used_cpu_sys" && k != "used_cpu_user") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return 0, fmt.Errorf("INFO cpu: %s is %q", k, v)
		}
		sum += f
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("INFO cpu has no used_cpu_sys and used_cpu_user")
	}
	return time.Duration(sum * float64(time.Second)), nil
}

// print writes the CPU lines of a phase's report: cores used and CPU
// time a verified vote (what names the work the process's time covers),
// and the votes/s two cores would give at that cost.
func (c *CPU) print(w io.Writer, l *Phase, cores int, what string) {
	if l.Elapsed <= 0 || l.Votes == 0 {
		return
	}
	share := func(d time.Duration) string { return fmt.Sprintf("%.2f cores", float64(d)/float64(l.Elapsed)) }
	each := func(d time.Duration) string { return Dur(d / time.Duration(l.Votes)) }
	client := c.Client
	if c.Profiled > 0 && c.Process > 0 {
		// The profile's samples fall short of the process's time: scale
		// its split to the process's.
		client = time.Duration(float64(c.Process) * float64(c.Client) / float64(c.Profiled))
	}
	if c.Process > 0 {
		fmt.Fprintf(w, "  cpu, this process                   %s (%s a verified vote: %s)\n", share(c.Process), each(c.Process), what)
		if c.Profiled > 0 {
			fmt.Fprintf(w, "    bench client                      %s (%s a vote; by the profile's labels)\n", share(client), each(client))
			if c.GatewayHere {
				fmt.Fprintf(w, "    gateway                           %s (%s a vote)\n", share(c.Process-client), each(c.Process-client))
			}
		}
	}
	if c.Redis > 0 {
		fmt.Fprintf(w, "  cpu, redis-server                   %s (%s a vote)\n", share(c.Redis), each(c.Redis))
	}
	if c.GatewayHere && c.Profiled > 0 && c.Process > 0 && c.Redis > 0 {
		own := c.Process - client + c.Redis
		fmt.Fprintf(w, "  gateway + Redis: %s of CPU a verified vote; at that cost %d cores of their own would verify ≈ %.0f votes/s (a model from the measured cost, not a measurement)\n",
			each(own), cores, float64(cores)*float64(time.Second)/float64(own/time.Duration(l.Votes)))
	}
	if c.Err != "" {
		fmt.Fprintf(w, "  cpu: %s\n", c.Err)
	}
}
