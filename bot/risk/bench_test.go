package risk

import "testing"

// BenchmarkClassify classifies the whole labelled corpus once per
// iteration and reports the rate per command, by the wall clock and by
// the process's CPU time (which is what "per core" means on a busy
// machine).
func BenchmarkClassify(b *testing.B) {
	corpus := readCorpus(b)
	c := Default()
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		for _, l := range corpus {
			c.Command(l.cmd)
		}
	}
	n := float64(b.N) * float64(len(corpus))
	b.ReportMetric(b.Elapsed().Seconds()*1e9/n, "ns/command")
	b.ReportMetric(n/b.Elapsed().Seconds(), "commands/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/command")
		b.ReportMetric(n/cpu.Seconds(), "commands/cpu-s")
	}
}
