package vector

import (
	"testing"
	"unsafe"
)

func aligned(b []byte) bool { return uintptr(unsafe.Pointer(unsafe.SliceData(b)))%poolAlign == 0 }

// TestPoolAllocator: buffers come back zeroed and aligned whether fresh or
// reused, Reallocate keeps the contents and zeroes what it adds, and a freed
// buffer is reused by the next allocation of its size class only.
func TestPoolAllocator(t *testing.T) {
	a := NewPoisoningPoolAllocator()
	for _, size := range []int{1, 100, 4095, 4096, 5000, 1 << 16, 100000} {
		for round := range 3 {
			b := a.Allocate(size)
			if len(b) != size || !aligned(b) {
				t.Fatalf("Allocate(%d): len %d, aligned %v", size, len(b), aligned(b))
			}
			for i, c := range b {
				if c != 0 {
					t.Fatalf("Allocate(%d), round %d: byte %d is %#x, want 0", size, round, i, c)
				}
			}
			for i := range b {
				b[i] = byte(i) | 1
			}
			a.Free(b)
		}
	}

	// Reuse: a freed 64 KiB buffer serves the next 40 KiB allocation (same
	// class), zeroed; poisoned while it sat in the pool.
	b := a.Allocate(1 << 16)
	p := unsafe.SliceData(b)
	a.Free(b)
	if b[0] != 0xdb || b[len(b)-1] != 0xdb {
		t.Errorf("a freed buffer was not poisoned: %#x ... %#x", b[0], b[len(b)-1])
	}
	c := a.Allocate(40 << 10)
	if unsafe.SliceData(c) != p {
		t.Log("the pool dropped the buffer (a collection ran); reuse not checked")
	}
	for i, x := range c {
		if x != 0 {
			t.Fatalf("reused buffer: byte %d is %#x, want 0", i, x)
		}
	}

	// Reallocate within the class and beyond it.
	for i := range c {
		c[i] = 7
	}
	c = a.Reallocate(1000, c) // shrink
	c = a.Reallocate(50<<10, c)
	if c[999] != 7 || c[1000] != 0 || c[len(c)-1] != 0 {
		t.Errorf("grown in place: c[999]=%d c[1000]=%d c[last]=%d, want 7 0 0", c[999], c[1000], c[len(c)-1])
	}
	c = a.Reallocate(200<<10, c)
	if len(c) != 200<<10 || !aligned(c) || c[999] != 7 || c[1000] != 0 || c[len(c)-1] != 0 {
		t.Errorf("grown to a new buffer: len %d aligned %v c[999]=%d c[1000]=%d", len(c), aligned(c), c[999], c[1000])
	}
	a.Free(c)

	// Small buffers come from Go's allocator and are not pooled.
	small := a.Allocate(2000)
	small[0] = 1
	a.Free(small)
	if small[0] != 1 {
		t.Error("Free pooled (and poisoned) a small buffer")
	}
}
