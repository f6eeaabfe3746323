package taskmanager

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec"
)

// TestGCPercentFor: the heap may grow by the floor (64 MiB, or a quarter of
// the memory limit if less) over the live heap, or double; the percentages
// are worked out by hand.
func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live  uint64
		limit int64
		want  int
	}{
		{0, math.MaxInt64, 100},         // no collection yet
		{32 * mib, math.MaxInt64, 200},  // 32 MiB more is 200%
		{16 * mib, math.MaxInt64, 400},  // 64 MiB over 16
		{3 * mib, math.MaxInt64, 2000},  // 2133%, capped
		{100 * mib, math.MaxInt64, 100}, // past the floor: GOGC's default
		{10 * mib, 120 * mib, 300},      // a floor of 30 MiB under --memory 120MiB
		{40 * mib, 120 * mib, 100},      // past that floor
	} {
		if got := gcPercentFor(c.live, c.limit); got != c.want {
			t.Errorf("gcPercentFor(%d MiB, %d MiB) = %d, want %d", c.live/mib, c.limit/mib, got, c.want)
		}
	}
}

// TestWatchdogRestoresGCWhenIdle: while a deployment runs the watchdog raises
// the GC percentage (the heap floor); when the last one is removed it puts
// GOGC's default back and stops, so an idle server does not keep the garbage
// the floor allowed.
func TestWatchdogRestoresGCWhenIdle(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	percent := func() uint64 {
		metrics.Read(gogc)
		return gogc[0].Value.Uint64()
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (GC percent %d)", what, percent())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	var r running
	d, finish := exec.NewDeployment(func(error) {}, nil)
	defer finish(nil)
	runtime.GC() // a live heap far below the floor: the watchdog raises the percentage
	r.add(d, "job")
	waitFor("the watchdog to raise the GC percentage", func() bool { return percent() > 100 })
	r.remove(d)
	waitFor("GOGC's default and the watchdog stopped", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return !r.watching && percent() == 100
	})
}
