//go:build race

package bot_test

// raceEnabled: the race detector slows goroutine-heavy tests by an order
// of magnitude; the load tests scale down under it.
const raceEnabled = true
