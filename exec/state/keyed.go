// Package state owns the state operators keep: keyed state, and the envelope
// their checkpoints are written in.
//
// Keyed state maps every distinct key an operator has seen (a GROUP BY's
// groups, a join's build keys, a view's rows) to a dense id, 0, 1, 2..., and
// the operator keeps the values of each key (an aggregate's accumulators, a
// join's rows, a view's counts) in columns indexed by that id. Keyed is that
// map; its one implementation is the in-memory KeyTable over keys encoded a
// batch at a time (RowKeys). Every call takes a whole batch. The disk state
// backend (exec/state/disk) keeps that shape: the ids become the slots of a
// bounded cache in front of pebble, which the operator fills for a batch's
// keys in one call and writes back when it empties the cache.
//
// A checkpoint of an operator is a blob in the envelope of envelope.go
// (magic, version, checksum, sections, usually Arrow IPC streams), and a
// task's checkpoint the TaskSnapshot of its source's and operators' blobs
// (snapshot.go).
//
// It may import exec and exec/vector.
package state

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Keyed is keyed state as operators write it: each distinct key, encoded by
// RowKeys, has a dense id in order of first insertion.
type Keyed interface {
	// InsertRows sets ids[i] to the id of row i's key, adding the keys not
	// yet held. ids has a row's room for each key.
	InsertRows(keys *RowKeys, ids []uint32)
	// LookupRows sets ids[i] to the id of row i's key, or -1 when it is not
	// held (or has a NULL column: NULL matches nothing, as in a join).
	LookupRows(keys *RowKeys, ids []int32)
	// FindRows is LookupRows with NULL keys as keys (as in GROUP BY): the ids
	// InsertRows would give, or -1 for the keys not held.
	FindRows(keys *RowKeys, ids []int32)
	// Bytes returns the memory the state holds, for budgets (work_mem).
	Bytes() int64
	// Len returns the number of keys held.
	Len() int
	// Reserve makes room for n more keys of keyBytes bytes in all.
	Reserve(n, keyBytes int)
	// Key returns key id's bytes as RowKeys encoded them, and whether it is
	// the NULL key of one text column (which has no bytes of its own).
	Key(id uint32) (key []byte, null bool)
	// DecodeKeys returns the key columns, of types, of the selected ids.
	DecodeKeys(mem memory.Allocator, types []arrow.DataType, sel GroupSel) ([]arrow.Array, error)
	// Release gives the state's memory back; the state is not used after.
	Release()
}

var _ Keyed = (*KeyTable)(nil)

// GroupSel selects the groups an aggregate's result covers: ids when not nil
// (a streaming aggregation's changed groups), else lo..hi-1 (a bounded one's
// result, in order).
type GroupSel struct {
	lo, hi int
	ids    []uint32
}

// GroupRange selects the groups lo..hi-1.
func GroupRange(lo, hi int) GroupSel { return GroupSel{lo: lo, hi: hi} }

// GroupIDs selects the groups ids, in their order.
func GroupIDs(ids []uint32) GroupSel { return GroupSel{ids: ids} }

// Len returns the number of groups selected.
func (s GroupSel) Len() int {
	if s.ids != nil {
		return len(s.ids)
	}
	return s.hi - s.lo
}

// At returns the i-th group selected.
func (s GroupSel) At(i int) int {
	if s.ids != nil {
		return int(s.ids[i])
	}
	return s.lo + i
}

// End returns one past the highest group selected, what state must be grown to.
func (s GroupSel) End() int {
	if s.ids == nil {
		return s.hi
	}
	end := 0
	for _, g := range s.ids {
		end = max(end, int(g)+1)
	}
	return end
}

// Int64s returns vals at the selected groups: a subslice for a range, else a
// gathered copy.
func (s GroupSel) Int64s(vals []int64) []int64 {
	if s.ids == nil {
		return vals[s.lo:s.hi]
	}
	out := make([]int64, len(s.ids))
	for i, g := range s.ids {
		out[i] = vals[g]
	}
	return out
}
