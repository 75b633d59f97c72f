package risk

import (
	"runtime"
	"testing"
)

// floorPerCore is the speed the classifier must keep with the packs
// loaded: commands per second of one core's CPU time.
const floorPerCore = 200_000

// BenchmarkClassify classifies the hand-written corpus (testdata/corpus.tsv,
// mostly adversarial: nesting, substitution, here-documents) once per
// iteration and reports the rate per command, by the wall clock and by the
// process's CPU time (which is what "per core" means on a busy machine),
// next to the floor.
func BenchmarkClassify(b *testing.B) {
	var cmds []string
	for _, l := range readCorpus(b) {
		cmds = append(cmds, l.cmd)
	}
	benchCommands(b, cmds)
}

// BenchmarkClassifyCorpus classifies every command of the labelled corpus
// (testdata/corpus/*.tsv, all categories, tool calls left out).
func BenchmarkClassifyCorpus(b *testing.B) {
	var cmds []string
	for _, ls := range readCorpusDir(b) {
		for _, l := range ls {
			if len(l.cmd) < 5 || l.cmd[:5] != "tool:" {
				cmds = append(cmds, l.cmd)
			}
		}
	}
	benchCommands(b, cmds)
}

func benchCommands(b *testing.B, cmds []string) {
	c := Default()
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		for _, cmd := range cmds {
			c.Command(cmd)
		}
	}
	n := float64(b.N) * float64(len(cmds))
	b.ReportMetric(b.Elapsed().Seconds()*1e9/n, "ns/command")
	b.ReportMetric(n/b.Elapsed().Seconds(), "commands/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/command")
		b.ReportMetric(n/cpu.Seconds(), "commands/cpu-s")
	}
	b.ReportMetric(floorPerCore, "floor-commands/cpu-s")
}

// BenchmarkLoadPacks parses and compiles the embedded packs and reports
// the heap the loaded rules hold.
func BenchmarkLoadPacks(b *testing.B) {
	packs := DefaultPacks()
	var held uint64
	for b.Loop() {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		r, err := ParsePacks(packs)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		held = m1.HeapAlloc - m0.HeapAlloc
		runtime.KeepAlive(r)
	}
	b.ReportMetric(float64(held), "heap-bytes/rules")
	b.ReportMetric(float64(len(packs)), "packs")
}
