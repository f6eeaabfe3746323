package exec

import (
	"math/bits"
	"sync"
	"unsafe"
)

// slicePool keeps large slices of T between jobs, by power-of-two capacity, for
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
type slicePool[T any] struct {
	classes [maxSliceClass + 1]sync.Pool // of *[]T, each of capacity 1<<class
}

// poisonSlices, set by the package's tests, makes put fill every slice it takes
// back with 0xdb bytes, so that a slice used after it was put reads as garbage.
var poisonSlices bool

// Slices of fewer than 1<<minSliceClass elements are not worth pooling, nor
// above 1<<maxSliceClass, which are rare.
const (
	minSliceClass = 10
	maxSliceClass = 30
)

// get returns a slice of length n and capacity the next power of two (at least
// 1<<minSliceClass). Its contents are undefined unless zero is set.
func (p *slicePool[T]) get(n int, zero bool) []T {
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

// put takes s back. Slices the pool did not make (their capacity is not one of
// its classes) go to the collector.
func (p *slicePool[T]) put(s []T) {
	n := cap(s)
	c := bits.Len(uint(max(n, 1) - 1))
	if n != 1<<c || c < minSliceClass || c > maxSliceClass {
		return
	}
	if poisonSlices {
		var zero T
		b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s[:1]))), n*int(unsafe.Sizeof(zero)))
		for i := range b {
			b[i] = 0xdb
		}
	}
	s = s[:0]
	p.classes[c].Put(&s)
}

// grow returns s with room for extra more elements, from the pool when it must
// move (doubling its capacity at least, and putting the old one back). The
// elements past len(s) are undefined. It is small enough to be inlined, so that
// a caller adding one element at a time pays no call while s has room
// (keyTable.insertAt: BenchmarkKeyTableInsert/reserved 31 -> 28 ns a key).
func (p *slicePool[T]) grow(s []T, extra int) []T {
	if len(s)+extra <= cap(s) {
		return s
	}
	return p.move(s, extra)
}

// move is grow's case of a slice that must move.
func (p *slicePool[T]) move(s []T, extra int) []T {
	ns := p.get(max(2*cap(s), len(s)+extra), false)[:len(s)]
	copy(ns, s)
	p.put(s)
	return ns
}

// growZero is growZero (hashagg_funcs.go) on pooled slices: s extended to n
// elements, the new ones zero.
func (p *slicePool[T]) growZero(s []T, n int) []T {
	old := len(s)
	if n <= old {
		return s
	}
	s = p.grow(s, n-old)[:n]
	clear(s[old:])
	return s
}

// The pools of the key tables' and aggregates' arrays, and of scratch space.
var (
	poolInt32  slicePool[int32]
	poolUint32 slicePool[uint32]
	poolUint64 slicePool[uint64]
	poolInt64  slicePool[int64]
	poolWords  slicePool[[2]uint64]
	poolInt    slicePool[int]
	poolBytes  slicePool[byte]
)
