package main

import (
	"sync"
	"time"
)

// scaling is how much more work this machine itself does on two cores than on
// one (2 is perfect), probed in the bench process just before and just after
// the engines run, with three kinds of work:
//   - Memory copies 64 MiB per core, out of every cache: it needs the memory
//     bandwidth, which the cores share with each other and with whatever else
//     runs on the host.
//   - Cache copies 256 KiB per core, within the core's own caches: it scales
//     below 2 when the two cores are in fact one (two hyperthreads on the host).
//   - Arithmetic is a chain of multiplications in registers: it scales below 2
//     only when a core is taken away outright.
//
// The parallelism goal is bounded by these: they tell a slow spell of the
// machine from a fault of the engine.
type scaling struct {
	Memory     [2]float64 `json:"memory_copy"` // before, after
	Cache      [2]float64 `json:"cache_copy"`
	Arithmetic [2]float64 `json:"arithmetic"`
}

// Each probe moves probeBytes per core, or multiplies probeMuls times, and
// takes the best of probeRounds.
const (
	probeBytes  = 256 << 20
	probeMuls   = 50_000_000
	probeRounds = 3
)

// prober holds the probes' buffers, allocated once: a large and a small pair
// per core.
type prober struct {
	big, small [2][2][]byte // [core][src, dst]
	sink       [2]uint64
}

func newProber() *prober {
	p := &prober{}
	for w := range 2 {
		for i := range 2 {
			p.big[w][i] = make([]byte, 64<<20)
			p.small[w][i] = make([]byte, 256<<10)
		}
		copy(p.big[w][1], p.big[w][0]) // fault every page in before timing
		copy(p.small[w][1], p.small[w][0])
	}
	return p
}

// probe returns each probe's scaling now.
func (p *prober) probe() (memory, cache, arithmetic float64) {
	copies := func(bufs *[2][2][]byte) func(w int) {
		return func(w int) {
			src, dst := bufs[w][0], bufs[w][1]
			for range probeBytes / len(src) {
				copy(dst, src)
			}
		}
	}
	arith := func(w int) {
		x := uint64(w + 1)
		for range probeMuls {
			x ^= x >> 30
			x *= 0xbf58476d1ce4e5b9
			x ^= x >> 27
		}
		p.sink[w] = x
	}
	return bestRatio(copies(&p.big)), bestRatio(copies(&p.small)), bestRatio(arith)
}

// bestRatio returns 2 x the best time of work(0) alone over the best time of
// work(0) and work(1) at once, the two ways alternating.
func bestRatio(work func(w int)) float64 {
	one, two := time.Duration(1<<62), time.Duration(1<<62)
	for range probeRounds {
		t := time.Now()
		work(0)
		one = min(one, time.Since(t))
		t = time.Now()
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() { work(w) })
		}
		wg.Wait()
		two = min(two, time.Since(t))
	}
	return round(2*one.Seconds()/two.Seconds(), 2)
}
