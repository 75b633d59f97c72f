package steptrace

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestStepsAreTheTimesBetweenMarks(t *testing.T) {
	r := NewRecorder()
	defer Install(r)()
	for range 3 {
		ctx := Start(context.Background())
		time.Sleep(2 * time.Millisecond)
		Mark(ctx, "first")
		Mark(ctx, "second")
		time.Sleep(time.Millisecond)
		End(ctx, "rest")
	}
	steps, whole := r.Steps()
	if len(steps) != 3 || steps[0].Name != "first" || steps[1].Name != "second" || steps[2].Name != "rest" {
		t.Fatalf("steps = %+v, want first, second, rest in that order", steps)
	}
	for _, s := range steps {
		if s.N != 3 {
			t.Errorf("step %q marked %d times, want 3", s.Name, s.N)
		}
	}
	if steps[0].P50 < 2*time.Millisecond || steps[1].P50 >= time.Millisecond || steps[2].P50 < time.Millisecond {
		t.Errorf("p50s = %v, %v, %v; want ≥ 2ms, < 1ms, ≥ 1ms", steps[0].P50, steps[1].P50, steps[2].P50)
	}
	if whole.N != 3 || whole.P50 < 3*time.Millisecond {
		t.Errorf("whole = %+v, want 3 traces of ≥ 3ms", whole)
	}
}

func TestNothingIsRecordedWithoutARecorder(t *testing.T) {
	ctx := context.Background()
	if got := Start(ctx); got != ctx {
		t.Fatal("Start with no recorder installed made a new context")
	}
	r := NewRecorder()
	uninstall := Install(r)
	traced := Start(ctx)
	uninstall()
	Mark(traced, "after uninstall") // not kept: marks stop with the recorder
	End(traced, "rest")
	Mark(ctx, "untraced")
	if steps, whole := r.Steps(); len(steps) != 0 || whole.N != 0 {
		t.Fatalf("recorded %+v, %+v; want nothing", steps, whole)
	}
}

func TestATraceWithNoMarksIsNotKept(t *testing.T) {
	r := NewRecorder()
	defer Install(r)()
	End(Start(context.Background()), "rest")
	if _, whole := r.Steps(); whole.N != 0 {
		t.Fatalf("kept %d traces with no marks", whole.N)
	}
}

func TestConcurrentTraces(t *testing.T) {
	r := NewRecorder()
	defer Install(r)()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				ctx := Start(context.Background())
				Mark(ctx, "a")
				Mark(ctx, "b")
				End(ctx, "rest")
			}
		})
	}
	wg.Wait()
	steps, whole := r.Steps()
	if whole.N != 800 || len(steps) != 3 || steps[0].N != 800 || steps[1].N != 800 {
		t.Fatalf("steps %+v, whole %+v; want each of 800 traces", steps, whole)
	}
}
