package redis

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

func slowlogHook(rdb goredis.UniversalClient, ev string) {
	ctx := context.Background()
	switch ev {
	case "start":
		rdb.ConfigSet(ctx, "slowlog-max-len", "1000000")
		rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0")
		rdb.Do(ctx, "SLOWLOG", "RESET")
	case "done":
		rdb.ConfigSet(ctx, "slowlog-log-slower-than", "-1")
		res, _ := rdb.Do(ctx, "SLOWLOG", "GET", "-1").Slice()
		by := map[string][]int64{}
		for _, e := range res {
			ent := e.([]any)
			args := ent[3].([]any)
			name := strings.ToLower(fmt.Sprint(args[0]))
			if (name == "evalsha" || name == "eval") && len(args) > 1 {
				a := fmt.Sprint(args[1])
				if len(a) > 8 {
					a = a[:8]
				}
				name += " " + a + " nkeys=" + fmt.Sprint(args[2])
			}
			by[name] = append(by[name], ent[2].(int64))
		}
		var names []string
		for n := range by {
			names = append(names, n)
		}
		sort.Strings(names)
		var b strings.Builder
		for _, n := range names {
			x := by[n]
			sort.Slice(x, func(i, j int) bool { return x[i] < x[j] })
			fmt.Fprintf(&b, "  slowlog %-32s n=%5d p50 %4dµs p90 %4dµs sum %dµs\n", n, len(x), x[len(x)/2], x[len(x)*9/10], sum(x))
		}
		os.Stderr.WriteString(b.String())
	}
}

func sum(x []int64) (s int64) {
	for _, v := range x {
		s += v
	}
	return
}
