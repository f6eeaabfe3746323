package vector

import (
	"flag"
	"os"
	"runtime"
	"slices"
	"testing"
)

// TestMain poisons what the slice pools take back, except in benchmarks.
func TestMain(m *testing.M) {
	flag.Parse()
	PoisonSlices = flag.Lookup("test.bench").Value.String() == ""
	os.Exit(m.Run())
}

func TestSlicePool(t *testing.T) {
	var p SlicePool[int64]
	for _, n := range []int{0, 1, 1000, 1024, 1025, 5000} {
		s := p.Get(n, true)
		if len(s) != n || cap(s) < 1<<minSliceClass || cap(s)&(cap(s)-1) != 0 || cap(s) < n {
			t.Fatalf("get(%d): len %d cap %d", n, len(s), cap(s))
		}
		for i, v := range s {
			if v != 0 {
				t.Fatalf("get(%d, zero): s[%d] = %d", n, i, v)
			}
		}
		for i := range s {
			s[i] = int64(i) + 1
		}
		p.Put(s)
	}
	// A zeroed get is zero even when the pool hands back a used slice.
	for range 10 {
		s := p.Get(1500, true)
		if i := slices.IndexFunc(s, func(v int64) bool { return v != 0 }); i >= 0 {
			t.Fatalf("zeroed get: s[%d] = %d", i, s[i])
		}
		for i := range s {
			s[i] = -1
		}
		p.Put(s)
	}

	// grow keeps the contents and at least doubles; GrowZero zeroes the new part.
	var s []int64
	for i := range 100_000 {
		s = append(p.Grow(s, 1), int64(i))
	}
	for i, v := range s {
		if v != int64(i) {
			t.Fatalf("after grow: s[%d] = %d", i, v)
		}
	}
	z := p.GrowZero(s[:10], 3000)
	if len(z) != 3000 || !slices.Equal(z[:10], []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("growZero: len %d, first %v", len(z), z[:10])
	}
	if i := slices.IndexFunc(z[10:], func(v int64) bool { return v != 0 }); i >= 0 {
		t.Fatalf("growZero: z[%d] = %d", 10+i, z[10+i])
	}
	if got := p.GrowZero(z, 5); len(got) != 3000 {
		t.Fatalf("growZero to fewer: len %d", len(got))
	}
	p.Put(z)

	// Slices of other capacities are not taken.
	odd := make([]int64, 1000, 1500)
	p.Put(odd)
	for range 10 {
		if s := p.Get(1000, false); cap(s) == 1500 {
			t.Fatal("the pool handed out a slice it did not make")
		}
	}
}

// TestReleaseMemory: what the pools and the heap hold beyond live data goes
// back to the system, above the threshold only.
func TestReleaseMemory(t *testing.T) {
	held := func() uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapSys - ms.HeapReleased
	}
	// A query's worth of state, given back to the pools when it ends.
	for range 4 {
		s := PoolInt64.Get(16<<20, true) // 128 MiB
		PoolInt64.Put(s)
	}
	b := make([][]byte, 64)
	for i := range b {
		b[i] = make([]byte, 2<<20)
	}
	b = nil
	if h := held(); h < 128<<20 {
		t.Fatalf("only %d MiB held after the allocations", h>>20)
	}
	if ReleaseMemory(1 << 62) {
		t.Error("released below the threshold")
	}
	if !ReleaseMemory(64 << 20) {
		t.Fatal("did not release")
	}
	if h := held(); h > 64<<20 {
		t.Errorf("%d MiB of heap still held after the release", h>>20)
	}
}
