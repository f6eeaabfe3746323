package vector

import (
	"math/bits"
	"sync"
	"unsafe"
)

// SlicePool keeps large slices of T between jobs, by power-of-two capacity, for
// the state that operators grow while they run: a key table's slots, key words,
// offsets and arena, an aggregate's per-group counters. Every query builds such
// arrays afresh, and a vocabulary of 60k words makes some 10 MB of them in a
// dozen doublings. From Go's allocator each doubling is fresh memory that the
// kernel faults in and zeroes and the collector later finds; from a pool, the
// second and later queries reuse what the first grew. Measured on WordCount
// (10 x kjv, BenchmarkWordCount in cmd/hummer), it took 9 ms off a 104 ms query
// at parallelism 2, where four tables grow at once.
//
// An operator gives its slices back (put) when it is done with them; one it
// never gives back is left to the collector, which also empties the pool of
// what it holds for two collections unused. A slice must not be used once put.
type SlicePool[T any] struct {
	classes [maxSliceClass + 1]sync.Pool // of *[]T, each of capacity 1<<class
}

// PoisonSlices, set by tests (testkit.Main), makes Put fill every slice it takes
// back with 0xdb bytes, so that a slice used after it was put reads as garbage.
var PoisonSlices bool

// Slices of fewer than 1<<minSliceClass elements are not worth pooling, nor
// above 1<<maxSliceClass, which are rare.
const (
	minSliceClass = 10
	maxSliceClass = 30
)

// Get returns a slice of length n and capacity the next power of two (at least
// 1<<minSliceClass). Its contents are undefined unless zero is set.
func (p *SlicePool[T]) Get(n int, zero bool) []T {
	c := max(bits.Len(uint(max(n, 1)-1)), minSliceClass)
	if c > maxSliceClass {
		return make([]T, n)
	}
	if v, _ := p.classes[c].Get().(*[]T); v != nil {
		s := (*v)[:n]
		if zero {
			clear(s)
		}
		return s
	}
	return make([]T, n, 1<<c)
}

// Put takes s back. Slices the pool did not make (their capacity is not one of
// its classes) go to the collector.
func (p *SlicePool[T]) Put(s []T) {
	n := cap(s)
	c := bits.Len(uint(max(n, 1) - 1))
	if n != 1<<c || c < minSliceClass || c > maxSliceClass {
		return
	}
	if PoisonSlices {
		var zero T
		b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s[:1]))), n*int(unsafe.Sizeof(zero)))
		for i := range b {
			b[i] = 0xdb
		}
	}
	s = s[:0]
	p.classes[c].Put(&s)
}

// Grow returns s with room for extra more elements, from the pool when it must
// move (doubling its capacity at least, and putting the old one back). The
// elements past len(s) are undefined. It is small enough to be inlined, so that
// a caller adding one element at a time pays no call while s has room
// (state.KeyTable.insertAt: BenchmarkKeyTableInsert/reserved 31 -> 28 ns a key).
func (p *SlicePool[T]) Grow(s []T, extra int) []T {
	if len(s)+extra <= cap(s) {
		return s
	}
	return p.move(s, extra)
}

// move is grow's case of a slice that must move.
func (p *SlicePool[T]) move(s []T, extra int) []T {
	ns := p.Get(max(2*cap(s), len(s)+extra), false)[:len(s)]
	copy(ns, s)
	p.Put(s)
	return ns
}

// GrowZero is GrowZero (hashagg_funcs.go) on pooled slices: s extended to n
// elements, the new ones zero.
func (p *SlicePool[T]) GrowZero(s []T, n int) []T {
	old := len(s)
	if n <= old {
		return s
	}
	s = p.Grow(s, n-old)[:n]
	clear(s[old:])
	return s
}

// The pools of the key tables' and aggregates' arrays, and of scratch space.
var (
	PoolInt32  SlicePool[int32]
	PoolUint32 SlicePool[uint32]
	PoolUint64 SlicePool[uint64]
	PoolInt64  SlicePool[int64]
	PoolWords  SlicePool[[2]uint64]
	PoolInt    SlicePool[int]
	PoolBytes  SlicePool[byte]
)

// GrowZero extends s to n entries, the new ones zero.
func GrowZero[T any](s []T, n int) []T {
	if len(s) >= n {
		return s
	}
	if cap(s) >= n {
		old := len(s)
		s = s[:n]
		clear(s[old:])
		return s
	}
	c := 2 * cap(s)
	if c < n {
		c = n
	}
	if c < 64 {
		c = 64
	}
	ns := make([]T, n, c)
	copy(ns, s)
	return ns
}
