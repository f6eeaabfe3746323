package taskmanager

import (
	"math"
	"testing"
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
