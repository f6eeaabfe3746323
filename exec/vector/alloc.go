// Package vector holds the column-buffer kernels every part of the runtime
// shares: gathering rows of Arrow arrays by an index vector (gather.go),
// building and releasing records (record.go), hashing keys and rows
// (hash.go), and pooled memory: the TaskManagers' Arrow allocator (this file)
// and the pools of scratch slices operators and exchanges grow
// (slicepool.go). Everything works on whole column buffers.
//
// It may import exec (for Batch's change kinds and TaskContext) and nothing
// else of Hummer's.
package vector

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// PoolAllocator is the TaskManagers' default Arrow allocator: it hands out
// buffers of 4 KiB and more from per-size-class pools and takes them back when
// Arrow frees them (a buffer's last Release), so a job that streams batches
// through its operators reuses the same few megabytes instead of allocating
// fresh ones for the garbage collector to find. Measured on WordCount, the
// collector's work and its zeroing of fresh memory took about a tenth of the
// CPU with Go's allocator, and with both cores busy (parallelism 2) it has no
// idle core to run on.
//
// Like Arrow's allocators it returns zeroed memory: Arrow's builders set
// validity bits on it. A freed buffer must not be used again, which reference
// counting ensures; the tests run every job on a poisoning pool (poison) so
// that a buffer used after its release shows up as wrong results.
//
// Smaller buffers come from Go's allocator: pooling them costs about what
// allocating does.
type PoolAllocator struct {
	classes [maxPoolClass + 1]sync.Pool // of *[]byte, each of cap 1<<class
	// poison, in tests, fills freed buffers with 0xdb before pooling them.
	poison bool
}

const (
	minPoolClass = 12 // 4 KiB
	maxPoolClass = 26 // 64 MiB: larger buffers are rare and go to the collector
	poolAlign    = 64 // Arrow's buffer alignment
)

var _ memory.Allocator = (*PoolAllocator)(nil)

// NewPoolAllocator returns an empty pool.
func NewPoolAllocator() *PoolAllocator { return &PoolAllocator{} }

// poolClass returns the size class of a buffer of size bytes: the smallest c
// with size <= 1<<c.
func poolClass(size int) int { return bits.Len(uint(size - 1)) }

// Allocate returns size zeroed bytes, 64-byte aligned.
func (a *PoolAllocator) Allocate(size int) []byte {
	c := poolClass(size)
	if size <= 0 || c < minPoolClass || c > maxPoolClass {
		return memory.DefaultAllocator.Allocate(size)
	}
	if p, _ := a.classes[c].Get().(*[]byte); p != nil {
		b := (*p)[:size]
		clear(b)
		return b
	}
	n := 1 << c
	raw := make([]byte, n+poolAlign)
	shift := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(raw))) % poolAlign); r != 0 {
		shift = poolAlign - r
	}
	return raw[shift : shift+size : shift+n]
}

// AllocateUnzeroed is Allocate without the zeroing, for a caller that writes
// every byte it reads back (a copy, a gather): a pooled buffer holds what its
// last user left in it.
func (a *PoolAllocator) AllocateUnzeroed(size int) []byte {
	if c := poolClass(size); size > 0 && c >= minPoolClass && c <= maxPoolClass {
		if p, _ := a.classes[c].Get().(*[]byte); p != nil {
			return (*p)[:size]
		}
	}
	return a.Allocate(size)
}

// Reallocate grows or shrinks b to size bytes, keeping its contents; bytes
// past b's length are zeroed.
func (a *PoolAllocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Free takes b, which Allocate or Reallocate returned, back into its size
// class's pool (small buffers go to the collector). It tells its buffers by
// their capacity, a power of two no other allocator gives, so as
// memory.Allocator requires it must not be given memory from elsewhere.
func (a *PoolAllocator) Free(b []byte) {
	n := cap(b)
	c := poolClass(n)
	if n != 1<<c || c < minPoolClass || c > maxPoolClass || uintptr(unsafe.Pointer(unsafe.SliceData(b[:1])))%poolAlign != 0 {
		return
	}
	b = b[:n]
	if a.poison {
		for i := range b {
			b[i] = 0xdb
		}
	}
	a.classes[c].Put(&b)
}

// NewPoisoningPoolAllocator returns a pool that overwrites every buffer it
// takes back, for tests: wrapped in a memory.CheckedAllocator it finds leaks,
// and a buffer used after its release reads as garbage.
func NewPoisoningPoolAllocator() *PoolAllocator { return &PoolAllocator{poison: true} }

// DefaultPool is the allocator of TaskManagers given none.
var DefaultPool = NewPoolAllocator()
