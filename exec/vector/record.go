package vector

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
)

// OutBatchRows caps the rows of a batch an operator builds itself (aggregate
// results, sorted runs, join output), so downstream never sees a giant batch.
const OutBatchRows = 1 << 16

// TaskAlloc returns the task's allocator (the default one when a test passes
// none).
func TaskAlloc(tc *exec.TaskContext) memory.Allocator {
	if tc != nil && tc.Alloc != nil {
		return tc.Alloc
	}
	return memory.DefaultAllocator
}

// NewBuffer returns a buffer of n bytes from mem. The bytes are not zeroed:
// from a PoolAllocator they are what the pool's last user left (the caller
// writes every byte it reads), which saves clearing every batch's buffers.
func NewBuffer(mem memory.Allocator, n int) *memory.Buffer {
	if p, ok := mem.(*PoolAllocator); ok && n > 0 {
		// Sized as Resize sizes them: a multiple of 64 bytes, then cut to n.
		b := memory.NewBufferWithAllocator(p.AllocateUnzeroed((n+63)&^63), mem)
		b.Resize(n)
		return b
	}
	b := memory.NewResizableBuffer(mem)
	b.Resize(n)
	return b
}

// MakeRecord builds a record of n rows from cols, checking each column's type
// against the schema so that a planner mistake is an error rather than a panic
// inside Arrow. It takes over the caller's references to cols in every case.
func MakeRecord(schema *arrow.Schema, cols []arrow.Array, n int) (arrow.RecordBatch, error) {
	defer ReleaseArrays(cols)
	if len(cols) != schema.NumFields() {
		return nil, fmt.Errorf("exec: %d columns for a schema of %d", len(cols), schema.NumFields())
	}
	for i, c := range cols {
		if c == nil {
			return nil, fmt.Errorf("exec: column %d missing", i)
		}
		if !arrow.TypeEqual(c.DataType(), schema.Field(i).Type) {
			return nil, fmt.Errorf("exec: column %d (%s) is %s, the schema says %s",
				i, schema.Field(i).Name, c.DataType(), schema.Field(i).Type)
		}
		if c.Len() != n {
			return nil, fmt.Errorf("exec: column %d has %d rows, want %d", i, c.Len(), n)
		}
	}
	return array.NewRecordBatch(schema, cols, int64(n)), nil
}

// ReleaseArrays releases every array of cols that is not nil.
func ReleaseArrays(cols []arrow.Array) {
	for _, c := range cols {
		if c != nil {
			c.Release()
		}
	}
}

// GrowSlice returns s resized to n entries, reusing its storage when it can.
// The contents are not cleared.
func GrowSlice[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n, n+n/4)
}

// ValidityOf returns the validity bitmap bytes of arr and the bit offset of its
// row 0, or nil when arr has no NULLs.
func ValidityOf(arr arrow.Array) ([]byte, int) {
	if arr.NullN() == 0 {
		return nil, 0
	}
	if arr.DataType().ID() == arrow.NULL {
		// A null array has no bitmap: every row is NULL.
		return make([]byte, bitutil.BytesForBits(int64(arr.Len()))), 0
	}
	d := arr.Data()
	if b := d.Buffers()[0]; b != nil {
		return b.Bytes(), d.Offset()
	}
	return nil, 0
}

// RecordBytes is the memory rec's buffers take (those of its columns and their
// children), for budgets; buffers a slice shares with its parent count whole.
func RecordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += arrayBytes(c.Data())
	}
	return n
}

func arrayBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += arrayBytes(c)
	}
	return n
}
