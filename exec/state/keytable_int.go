package state

import (
	"encoding/binary"
	"hash/maphash"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec/vector"
)

// A KeyTable of keys of one bigint, timestamp or double column
// (NewIntKeyTable) keeps its arena and offsets as any other, but finds keys
// by an index of their values, intSlots, instead of slots and words (it
// keeps no words): a slot of 16 bytes holds the value and the id, so that
// finding a key is one multiply and one cache line where the byte index
// reads its slot, then its words, in two places; growing moves the slots
// and reads no arena. Such a key is 9 bytes (RowKeys: a flag byte, 1 valid
// and 0 NULL, then the value little-endian, or zeros for NULL); the NULL key
// has an id of its own, intTable.null, and no slot. TPC-H's GROUP BY
// l_orderkey (q18: 1.5M keys) spent a third of its time in findShort and
// growing the byte index.
type intSlot struct {
	val uint64
	id  uint32 // id+1; 0: empty
}

// intTable is the index of a KeyTable of one integer column's keys.
type intTable struct {
	slots []intSlot
	mult  uint64 // odd, random: no input can be chosen to collide
	shift uint   // 64 - log2(len(slots))
	// null is the id of the NULL key, or -1.
	null int32
	// touched keeps intInsertRows' loads ahead of its probes from being
	// optimised away.
	touched uint32
}

// IntKeyed reports whether keys of columns of types can go in a table of
// NewIntKeyTable's.
func IntKeyed(types []arrow.DataType) bool {
	if len(types) != 1 {
		return false
	}
	switch types[0].ID() {
	case arrow.INT64, arrow.TIMESTAMP, arrow.FLOAT64:
		return true
	}
	return false
}

// intKeyBytes is the width of a key in an integer KeyTable.
const intKeyBytes = 9

// IntKeyBytes is the width of a key in a table of NewIntKeyTable's, for
// Reserve.
const IntKeyBytes = intKeyBytes

// NewIntKeyTable returns an empty table for the keys RowKeys encodes of one
// bigint, timestamp or double column (every key intKeyBytes long; see
// intSlot): the same table as NewKeyTable's, its keys found faster.
func NewIntKeyTable() *KeyTable {
	t := &KeyTable{nullID: -1}
	t.ints = &intTable{mult: maphash.Comparable(maphash.MakeSeed(), 0) | 1, null: -1}
	t.ints.resize(1024)
	t.offs = append(vector.PoolInt.Get(0, false), 0)
	return t
}

// intSlots keeps slot arrays between tables, as vector's pools keep the
// other tables' arrays: a final aggregate's table of 750k keys (TPC-H q18,
// a task) grows to 32 MiB of slots in eleven doublings, and from Go's
// allocator each was fresh memory the kernel faulted in and zeroed, a fifth
// of the cost of growing.
var intSlots vector.SlicePool[intSlot]

// resize makes the index size slots (a power of two), moving its keys.
func (x *intTable) resize(size int) {
	bits := uint(0)
	for 1<<bits < size {
		bits++
	}
	old := x.slots
	x.slots, x.shift = intSlots.Get(size, true), 64-bits
	defer intSlots.Put(old)
	mask := uint64(size - 1)
	for _, s := range old {
		if s.id == 0 {
			continue
		}
		p := (s.val * x.mult) >> x.shift
		for x.slots[p].id != 0 {
			p = (p + 1) & mask
		}
		x.slots[p] = s
	}
}

// intFindOrInsert returns the id of key, of intKeyBytes bytes, adding it if new.
func (t *KeyTable) intFindOrInsert(key []byte) uint32 {
	x := t.ints
	if key[0] == 0 {
		if x.null < 0 {
			x.null = int32(t.appendKey(key))
		}
		return uint32(x.null)
	}
	v := binary.LittleEndian.Uint64(key[1:])
	mask := uint64(len(x.slots) - 1)
	p := (v * x.mult) >> x.shift
	for {
		s := x.slots[p]
		if s.id == 0 {
			break
		}
		if s.val == v {
			return s.id - 1
		}
		p = (p + 1) & mask
	}
	g := t.appendKey(key)
	x.slots[p] = intSlot{val: v, id: g + 1}
	if uint64(g+1)*2 > mask {
		x.resize(2 * len(x.slots))
	}
	return g
}

// intFind returns key's id, or -1.
func (t *KeyTable) intFind(key []byte) int32 {
	x := t.ints
	if len(key) != intKeyBytes {
		return -1
	}
	if key[0] == 0 {
		return x.null
	}
	v := binary.LittleEndian.Uint64(key[1:])
	mask := uint64(len(x.slots) - 1)
	for p := (v * x.mult) >> x.shift; ; p = (p + 1) & mask {
		s := x.slots[p]
		if s.id == 0 {
			return -1
		}
		if s.val == v {
			return int32(s.id - 1)
		}
	}
}

// appendKey adds key to the arena and offsets, and returns its id.
func (t *KeyTable) appendKey(key []byte) uint32 {
	g := uint32(t.Len())
	t.arena = append(vector.PoolBytes.Grow(t.arena, len(key)), key...)
	t.offs = append(vector.PoolInt.Grow(t.offs, 1), len(t.arena))
	return g
}

// intInsertRows is InsertRows for an integer table: the rows' keys are
// intKeyBytes apart in k.data.
//
// A row whose key is the previous row's takes its id without probing: rows
// that come grouped by key (TPC-H's lineitem by l_orderkey, 4 rows an
// order) probe once a run, and other rows pay one compare.
//
// The rows go in chunks of intChunk: a first pass loads the slot each
// row's probe starts at, loads that do not wait on each other, so that
// their cache misses overlap, and the probing pass then finds them in the
// cache. A table past the cache (a final aggregate's 750k keys of TPC-H
// q18 a task, 24 MiB of slots) misses on nearly every new key, and one
// miss at a time cost most of the insert.
func (t *KeyTable) intInsertRows(k *RowKeys, gids []uint32) {
	x := t.ints
	data, offs := k.data, k.offs[:len(gids)+1]
	// last is the previous row's value and lastID its id+1; 0: none (a NULL
	// or odd-sized key, or the first row).
	var last uint64
	lastID := uint32(0)
	var touched uint32
	for c := 0; c < len(gids); c += intChunk {
		end := min(c+intChunk, len(gids))
		slots := x.slots
		for i := c; i < end; i++ {
			s := offs[i]
			if offs[i+1]-s == intKeyBytes {
				v := binary.LittleEndian.Uint64(data[s+1 : s+intKeyBytes])
				touched += slots[(v*x.mult)>>x.shift].id
			}
		}
		mask := uint64(len(x.slots) - 1)
		for i := c; i < end; i++ {
			s, e := offs[i], offs[i+1]
			key := data[s:e]
			if len(key) != intKeyBytes || key[0] == 0 {
				gids[i] = t.intFindOrInsert(key)
				mask = uint64(len(x.slots) - 1)
				lastID = 0
				continue
			}
			v := binary.LittleEndian.Uint64(key[1:])
			if v == last && lastID != 0 {
				gids[i] = lastID - 1
				continue
			}
			p := (v * x.mult) >> x.shift
			for {
				sl := x.slots[p]
				if sl.val == v && sl.id != 0 {
					gids[i] = sl.id - 1
					break
				}
				if sl.id == 0 {
					gids[i] = t.intFindOrInsert(key)
					mask = uint64(len(x.slots) - 1)
					break
				}
				p = (p + 1) & mask
			}
			last, lastID = v, gids[i]+1
		}
	}
	x.touched = touched
}

// intChunk is the rows intInsertRows loads the slots of ahead of probing.
const intChunk = 64

// InsertInt64s is InsertRows for the keys of one bigint or timestamp column
// without NULLs, given as its values, in a table of NewIntKeyTable's: it
// needs no RowKeys, whose encoding of every row into 9 bytes was a tenth of
// the cost of a partial aggregate grouping TPC-H's lineitem by l_orderkey;
// only new keys are encoded, into the arena. Otherwise it works as
// intInsertRows (the previous row's id reused, slots loaded ahead).
func (t *KeyTable) InsertInt64s(vals []int64, gids []uint32) {
	x := t.ints
	gids = gids[:len(vals)]
	var key [intKeyBytes]byte
	key[0] = 1
	var last uint64
	lastID := uint32(0)
	var touched uint32
	for c := 0; c < len(vals); c += intChunk {
		end := min(c+intChunk, len(vals))
		slots := x.slots
		for _, v := range vals[c:end] {
			touched += slots[(uint64(v)*x.mult)>>x.shift].id
		}
		mask := uint64(len(x.slots) - 1)
		for i := c; i < end; i++ {
			v := uint64(vals[i])
			if v == last && lastID != 0 {
				gids[i] = lastID - 1
				continue
			}
			p := (v * x.mult) >> x.shift
			for {
				sl := x.slots[p]
				if sl.val == v && sl.id != 0 {
					gids[i] = sl.id - 1
					break
				}
				if sl.id == 0 {
					binary.LittleEndian.PutUint64(key[1:], v)
					gids[i] = t.intFindOrInsert(key[:])
					mask = uint64(len(x.slots) - 1)
					break
				}
				p = (p + 1) & mask
			}
			last, lastID = v, gids[i]+1
		}
	}
	x.touched = touched
}
