package state

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/vector"
)

// KeyTable maps keys to dense ids 0, 1, 2, ... in order of first insertion. Keys
// live in one byte arena, so a table of a million words is a handful of
// allocations. Open addressing with linear probing, at most half full.
//
// A slot is 4 bytes: id+1 (0 = empty) in its low bits, as many as the mask of
// the slot array has (a table at most half full has room there for every id),
// and the key's tag above them (slotTag: bits of its hash, and a top bit that
// marks a key of 16 bytes or more). So a vocabulary of 60k words probes a
// 512 KiB slot array, which leaves room in a core's 1 MiB L2 cache for the
// frequent words' ids and counts. Each key's first 16 bytes are kept per id in
// words (keyWords), a shorter key's length in the byte after its end: a key of
// up to 15 bytes (nearly every word) is equal when its tag and both words are,
// and only longer keys compare the rest, and their length, in the arena. For
// frequent words, which have low ids, words[g] is a cache hit.
// (BenchmarkHashAggWords against slots of 8 bytes, with 23 bits of hash and the
// length capped at 255 in the high half: 632 -> 671 MB/s, medians of 6
// alternating runs. Slots of 16 bytes holding the first word, which spare the
// access to words but double the slot array, measured slower still.)
type KeyTable struct {
	seed  uint64
	slots []uint32
	mask  uint64 // len(slots)-1, at most 1<<31-1
	arena []byte
	offs  []int       // key g is arena[offs[g]:offs[g+1]]
	words [][2]uint64 // words[g] is key g's bytes 0 to 7 and 8 to 15, zero-padded, and its length (keyWords); none in an integer table
	// nullID is the id of the NULL key of a raw table, or -1.
	nullID int32
	// ints, when set, indexes the keys in place of slots and words: a table of one
	// integer column's keys (keytable_int.go).
	ints *intTable
}

// NewKeyTable returns an empty table whose hashes are seeded at random, so
// that no input can be chosen to collide in it.
func NewKeyTable() *KeyTable {
	t := &KeyTable{seed: maphash.Comparable(maphash.MakeSeed(), 0), nullID: -1}
	t.slots = vector.PoolUint32.Get(1024, true)
	t.mask = uint64(len(t.slots) - 1)
	t.offs = append(vector.PoolInt.Get(0, false), 0)
	return t
}

// Release gives the table's arrays back to their pools; the table must not be
// used afterwards, nor any slice of its arena.
func (t *KeyTable) Release() {
	if t.ints != nil {
		intSlots.Put(t.ints.slots)
	}
	vector.PoolUint32.Put(t.slots)
	vector.PoolWords.Put(t.words)
	vector.PoolInt.Put(t.offs)
	vector.PoolBytes.Put(t.arena)
	*t = KeyTable{}
}

// Reset empties the table and keeps its arrays, for as many keys again.
func (t *KeyTable) Reset() {
	if t.ints != nil {
		clear(t.ints.slots)
		t.ints.null = -1
	} else {
		clear(t.slots)
	}
	t.arena, t.offs, t.words = t.arena[:0], t.offs[:1], t.words[:0]
	t.nullID = -1
}

// Reserve makes room for n more keys of keyBytes bytes in all, so that adding
// them does not grow the table on the way. Growing is two fifths of the cost of
// adding a key (BenchmarkKeyTableInsert): each doubling moves every slot.
func (t *KeyTable) Reserve(n, keyBytes int) {
	t.arena = vector.PoolBytes.Grow(t.arena, keyBytes)
	t.offs = vector.PoolInt.Grow(t.offs, n)
	if t.ints != nil {
		size := len(t.ints.slots)
		for (t.Len()+n)*2 > size-1 {
			size *= 2
		}
		if size > len(t.ints.slots) {
			t.ints.resize(size)
		}
		return
	}
	t.words = vector.PoolWords.Grow(t.words, n)
	size := len(t.slots)
	for uint64(t.Len()+n)*2 > uint64(size-1) {
		size *= 2
	}
	if size > len(t.slots) {
		t.resize(size)
	}
}

// Len returns the number of keys.
func (t *KeyTable) Len() int { return len(t.offs) - 1 }

// key returns key g.
func (t *KeyTable) key(g uint32) []byte { return t.arena[t.offs[g]:t.offs[g+1]] }

// Key returns key g as RowKeys encoded it, and whether it is the NULL key of
// one text column (a raw key, whose NULL has no bytes of its own). The bytes
// alias the table until it changes.
func (t *KeyTable) Key(g uint32) (key []byte, null bool) { return t.key(g), int32(g) == t.nullID }

// slotTag returns the bits above idMask of the slot of a key of n bytes hashing
// to h: hash bits that the slot's position does not use, and the top bit for a
// key of 16 bytes or more.
func slotTag(h uint64, n int, idMask uint32) uint32 {
	tag := uint32(h>>33) &^ idMask
	if n >= 16 {
		tag |= 1 << 31
	}
	return tag
}

// slotID returns the id in a used slot m of a table whose mask is idMask.
func slotID(m, idMask uint32) uint32 { return m&idMask - 1 }

// keyWords returns what words keeps of a key of n bytes whose first two words,
// zero-padded, are w0 and w1: those, with n in the last byte when the key is
// shorter than 16 bytes (where w1 has only padding). Two keys of up to 15 bytes
// are equal exactly when their keyWords are, and a longer key's slot tag tells
// it from them.
func keyWords(w0, w1 uint64, n int) [2]uint64 {
	if n < 16 {
		w1 |= uint64(n) << 56
	}
	return [2]uint64{w0, w1}
}

// equal reports whether key g, whose slot tag matches key's, equals key, whose
// first two words are w0 and w1.
func (t *KeyTable) equal(g uint32, key []byte, w0, w1 uint64) bool {
	if t.words[g] != keyWords(w0, w1, len(key)) {
		return false
	}
	return len(key) < 16 || string(t.key(g)) == string(key)
}

// probe returns key's slot: the one holding it, or the empty one where it goes.
func (t *KeyTable) probe(key []byte, h, w0, w1 uint64) uint64 {
	idMask := uint32(t.mask)
	tag := slotTag(h, len(key), idMask)
	for p := h & t.mask; ; p = (p + 1) & t.mask {
		m := t.slots[p]
		if m == 0 || m&^idMask == tag && t.equal(slotID(m, idMask), key, w0, w1) {
			return p
		}
	}
}

// findOrInsert returns key's id, adding it if new.
func (t *KeyTable) findOrInsert(key []byte) uint32 {
	if t.ints != nil {
		return t.intFindOrInsert(key)
	}
	h, w0, w1 := vector.HashKey(key, t.seed)
	return t.findOrInsertHashed(key, h, w0, w1)
}

// findOrInsertHashed is findOrInsert for the key's vector.HashKey results (which tests
// fake, to make keys collide).
func (t *KeyTable) findOrInsertHashed(key []byte, h, w0, w1 uint64) uint32 {
	p := t.probe(key, h, w0, w1)
	if m := t.slots[p]; m != 0 {
		return slotID(m, uint32(t.mask))
	}
	return t.insertAt(p, key, h, w0, w1)
}

// insertAt adds key, which hashes to h and starts with words w0 and w1, in the
// empty slot p that probing for it ended at, and returns its id.
func (t *KeyTable) insertAt(p uint64, key []byte, h, w0, w1 uint64) uint32 {
	g := uint32(t.Len())
	t.arena = append(vector.PoolBytes.Grow(t.arena, len(key)), key...)
	t.offs = append(vector.PoolInt.Grow(t.offs, 1), len(t.arena))
	t.words = append(vector.PoolWords.Grow(t.words, 1), keyWords(w0, w1, len(key)))
	t.slots[p] = slotTag(h, len(key), uint32(t.mask)) | (g + 1)
	if uint64(g+1)*2 > t.mask {
		t.grow()
	}
	return g
}

// find returns key's id, or -1.
func (t *KeyTable) find(key []byte) int32 {
	if t.ints != nil {
		return t.intFind(key)
	}
	h, w0, w1 := vector.HashKey(key, t.seed)
	m := t.slots[t.probe(key, h, w0, w1)]
	if m == 0 {
		return -1
	}
	return int32(slotID(m, uint32(t.mask)))
}

// grow makes room for more keys: it quadruples the slots up to 1<<16 and
// doubles them beyond. Each growth moves every key, and a large vocabulary
// gets to 1<<16 slots in three moves rather than six:
// BenchmarkKeyTableInsert/growing 50 -> 44 ns a key. A slot holds the id in
// the bits of the mask, so the table stops at 1<<31 slots (a billion keys).
func (t *KeyTable) grow() {
	if len(t.slots) >= 1<<31 {
		panic("exec: a key table of over a billion keys")
	}
	if len(t.slots) < 1<<16 {
		t.resize(4 * len(t.slots))
		return
	}
	t.resize(2 * len(t.slots))
}

// resize moves the keys to size slots (a power of two), rehashing them in id
// order (a sequential read of the arena) rather than keeping a hash per key.
func (t *KeyTable) resize(size int) {
	slots := vector.PoolUint32.Get(size, true)
	mask := uint64(len(slots) - 1)
	for g := range uint32(t.Len()) {
		if int32(g) == t.nullID {
			continue
		}
		key := t.key(g)
		h, _, _ := vector.HashKey(key, t.seed)
		p := h & mask
		for slots[p] != 0 {
			p = (p + 1) & mask
		}
		slots[p] = slotTag(h, len(key), uint32(mask)) | (g + 1)
	}
	vector.PoolUint32.Put(t.slots)
	t.slots, t.mask = slots, mask
}

// Compacted returns a new table of t's keys ids, distinct ids of t, key
// ids[i] with id i (the NULL key of a raw table too): what a table whose
// holders let go of most of its keys is rebuilt into. It copies the keys'
// bytes, where decoding them into columns and encoding those again cost
// three times as much (Nexmark q9's Top-N). t is unchanged.
func (t *KeyTable) Compacted(ids []uint32) *KeyTable {
	var n *KeyTable
	if t.ints != nil {
		n = NewIntKeyTable()
	} else {
		n = NewKeyTable()
	}
	size := 0
	for _, g := range ids {
		size += t.offs[g+1] - t.offs[g]
	}
	n.Reserve(len(ids), size)
	for _, g := range ids {
		if int32(g) == t.nullID {
			n.nullGroup()
		} else {
			n.findOrInsert(t.key(g))
		}
	}
	return n
}

// nullGroup returns the id of the NULL key of a raw table, adding it if new. It
// has an empty arena entry and no slot.
func (t *KeyTable) nullGroup() uint32 {
	if t.nullID < 0 {
		t.nullID = int32(t.Len())
		t.offs = append(vector.PoolInt.Grow(t.offs, 1), len(t.arena))
		t.words = append(vector.PoolWords.Grow(t.words, 1), [2]uint64{})
	}
	return uint32(t.nullID)
}

// InsertRows sets gids[i] to the id of row i's key, adding new keys. In a raw
// table NULL rows share the NULL key's id; encoded keys carry their NULLs.
//
// It is WordCount's hot loop (GROUP BY word). Most rows are a key of up to 15
// bytes already in the table: findShort handles runs of those in a loop without
// calls, and findOrInsert every other row (new keys, longer keys, and a key
// whose two words cannot be loaded without reading past data's capacity).
// Loading each row's slot in a pass before the probing loop, so that cache
// misses overlap, paid off with a slower probing loop but not with this one.
func (t *KeyTable) InsertRows(k *RowKeys, gids []uint32) {
	gids = gids[:k.n]
	if t.ints != nil {
		t.intInsertRows(k, gids)
		return
	}
	offs := k.offs[:k.n+1]
	// Arrow pads buffers to 64 bytes and encode leaves 16 spare bytes, so a
	// short key can mostly be loaded as two words past its end.
	data := k.data[:cap(k.data)]
	if k.raw && k.nullRow != nil {
		for i := range gids {
			if k.nullRow[i] {
				gids[i] = t.nullGroup()
			} else {
				gids[i] = t.findOrInsert(data[offs[i]:offs[i+1]])
			}
		}
		return
	}
	for i := 0; i < len(gids); i++ {
		var p, h, w0, w1 uint64
		i, p, h, w0, w1 = t.findShort(data, offs, gids, i)
		if i == len(gids) {
			break
		}
		key := data[offs[i]:offs[i+1]]
		if p == noSlot {
			gids[i] = t.findOrInsert(key)
		} else {
			gids[i] = t.insertAt(p, key, h, w0, w1)
		}
	}
}

// noSlot is findShort's slot when it stopped at a key it did not probe for.
const noSlot = ^uint64(0)

// findShort sets gids[i], from row i on, while row i's key is at most 15 bytes,
// can be loaded as two words from data, and is in the table. It returns the
// first row it did not do and, when that row's key is such a key but new, the
// empty slot p where it goes and its hash and words, for insertAt (else p is
// noSlot): probing again for a new key cost a tenth of the time of adding it.
// It inlines vector.HashKey and probe for such keys (the compiler inlines slotTag,
// slotID and keyWords) and, being a leaf, keeps its loop in registers: calls
// made the loop spill and reload most of its variables on every row.
func (t *KeyTable) findShort(data []byte, offs []int32, gids []uint32, i int) (int, uint64, uint64, uint64, uint64) {
	slots, mask, words := t.slots, t.mask, t.words
	idMask := uint32(mask)
	s0, s1 := t.seed^vector.HashK0, t.seed^vector.HashK1
	offs = offs[:len(gids)+1]
	for ; i < len(gids); i++ {
		s, e := uint(uint32(offs[i])), uint(uint32(offs[i+1]))
		n := e - s
		if n > 15 || s+16 > uint(len(data)) {
			return i, noSlot, 0, 0, 0
		}
		h, w0, w1 := vector.ShortKey(data[s:s+16], n, s0, s1)
		tag := slotTag(h, int(n), idMask)
		kw := keyWords(w0, w1, int(n))
		for p := h & mask; ; p = (p + 1) & mask {
			m := slots[p]
			g := slotID(m, idMask)
			if m&^idMask == tag && int(g) < len(words) && words[g] == kw {
				gids[i] = g
				break
			}
			if m == 0 {
				return i, p, h, w0, w1
			}
		}
	}
	return i, noSlot, 0, 0, 0
}

// FindRows sets ids[i] to the id InsertRows would give row i's key (a NULL key
// is a key, as in GROUP BY), or -1 when the table lacks it; it adds nothing.
func (t *KeyTable) FindRows(k *RowKeys, ids []int32) {
	data, offs := k.data, k.offs
	for i := range ids[:k.n] {
		if k.raw && k.nullRow != nil && k.nullRow[i] {
			ids[i] = t.nullID
			continue
		}
		ids[i] = t.find(data[offs[i]:offs[i+1]])
	}
}

// Bytes returns the memory the table holds: its slots, arena, offsets and
// key words.
func (t *KeyTable) Bytes() int64 {
	if t.ints != nil {
		return int64(cap(t.ints.slots))*16 + int64(cap(t.arena)) + int64(cap(t.offs))*8 + int64(cap(t.words))*16
	}
	return int64(cap(t.slots))*4 + int64(cap(t.arena)) + int64(cap(t.offs))*8 + int64(cap(t.words))*16
}

// LookupRows sets ids[i] to the id of row i's key, or -1 when the table lacks it
// or the row has a NULL key column (NULL never equals anything in a join).
func (t *KeyTable) LookupRows(k *RowKeys, ids []int32) {
	data, offs := k.data, k.offs
	for i := range ids[:k.n] {
		if k.nullRow != nil && k.nullRow[i] {
			ids[i] = -1
			continue
		}
		ids[i] = t.find(data[offs[i]:offs[i+1]])
	}
}

// rawKeyColumn builds the text column of keys lo..hi-1 of a raw table.
func (t *KeyTable) rawKeyColumn(mem memory.Allocator, lo, hi int) (arrow.Array, error) {
	n := hi - lo
	if n == 0 {
		return array.MakeArrayOfNull(mem, arrow.BinaryTypes.String, 0), nil
	}
	base := t.offs[lo]
	size := t.offs[hi] - base
	if size > math.MaxInt32 {
		return nil, fmt.Errorf("exec: %d bytes of keys in one batch", size)
	}
	ob := vector.NewBuffer(mem, (n+1)*4)
	offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())
	db := vector.NewBuffer(mem, size)
	copy(db.Bytes(), t.arena[base:base+size])
	offs[0] = 0
	for j := range n {
		offs[j+1] = int32(t.offs[lo+j+1] - base)
	}
	var nb *memory.Buffer
	nulls := 0
	if g := int(t.nullID); g >= lo && g < hi {
		nb = vector.NewBuffer(mem, int(bitutil.BytesForBits(int64(n))))
		bitutil.SetBitsTo(nb.Bytes(), 0, int64(n), true)
		bitutil.ClearBit(nb.Bytes(), g-lo)
		nulls = 1
	}
	data := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nb, ob, db}, nil, nulls, 0)
	ob.Release()
	db.Release()
	if nb != nil {
		nb.Release()
	}
	out := array.NewStringData(data)
	data.Release()
	return out, nil
}

// rawKeysAt builds the text column of keys ids of a raw table.
func (t *KeyTable) rawKeysAt(mem memory.Allocator, ids []uint32) arrow.Array {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(len(ids))
	for _, g := range ids {
		if int32(g) == t.nullID {
			b.AppendNull()
		} else {
			b.BinaryBuilder.Append(t.key(g))
		}
	}
	return b.NewArray()
}

// DecodeKeys rebuilds the key columns (of the given types) of the keys sel.
func (t *KeyTable) DecodeKeys(mem memory.Allocator, types []arrow.DataType, sel GroupSel) ([]arrow.Array, error) {
	if isRawKey(types) {
		if sel.ids != nil {
			return []arrow.Array{t.rawKeysAt(mem, sel.ids)}, nil
		}
		a, err := t.rawKeyColumn(mem, sel.lo, sel.hi)
		if err != nil {
			return nil, err
		}
		return []arrow.Array{a}, nil
	}
	n := sel.Len()
	pos := make([]int, n)
	for j := range n {
		pos[j] = t.offs[sel.At(j)]
	}
	ar := t.arena
	cols := make([]arrow.Array, 0, len(types))
	for _, dt := range types {
		b := array.NewBuilder(mem, dt)
		b.Reserve(n)
		switch bb := b.(type) {
		case *array.NullBuilder:
			bb.AppendNulls(n)
			for j := range pos {
				pos[j]++
			}
		case *array.BooleanBuilder:
			for j, p := range pos {
				if ar[p] == 0 {
					bb.AppendNull()
				} else {
					bb.Append(ar[p+1] == 1)
				}
				pos[j] = p + 2
			}
		case *array.Int64Builder:
			for j, p := range pos {
				if ar[p] == 0 {
					bb.AppendNull()
				} else {
					bb.Append(int64(binary.LittleEndian.Uint64(ar[p+1:])))
				}
				pos[j] = p + 9
			}
		case *array.TimestampBuilder:
			for j, p := range pos {
				if ar[p] == 0 {
					bb.AppendNull()
				} else {
					bb.Append(arrow.Timestamp(binary.LittleEndian.Uint64(ar[p+1:])))
				}
				pos[j] = p + 9
			}
		case *array.Float64Builder:
			for j, p := range pos {
				if ar[p] == 0 {
					bb.AppendNull()
				} else {
					bb.Append(math.Float64frombits(binary.LittleEndian.Uint64(ar[p+1:])))
				}
				pos[j] = p + 9
			}
		case *array.Decimal128Builder:
			for j, p := range pos {
				if ar[p] == 0 {
					bb.AppendNull()
				} else {
					lo := binary.LittleEndian.Uint64(ar[p+1:])
					hi := int64(binary.LittleEndian.Uint64(ar[p+9:]))
					bb.Append(decimal128.New(hi, lo))
				}
				pos[j] = p + 17
			}
		case *array.StringBuilder:
			for j, p := range pos {
				if ar[p] == 0 {
					bb.AppendNull()
					pos[j] = p + 5
				} else {
					l := int(binary.LittleEndian.Uint32(ar[p+1:]))
					bb.BinaryBuilder.Append(ar[p+5 : p+5+l])
					pos[j] = p + 5 + l
				}
			}
		default:
			b.Release()
			vector.ReleaseArrays(cols)
			return nil, fmt.Errorf("exec: cannot decode a %s key", dt)
		}
		cols = append(cols, b.NewArray())
		b.Release()
	}
	return cols, nil
}

// DecodeGrouped decodes the keys of a table whose keys were encoded with a
// group id before their columns (RowKeys.Encode with a prefix, as
// count(DISTINCT) keeps its (group, value) pairs): it returns, for keys
// 0..Len()-1, each key's group and its columns of types.
func (t *KeyTable) DecodeGrouped(mem memory.Allocator, types []arrow.DataType) ([]uint32, []arrow.Array, error) {
	m := t.Len()
	// DecodeKeys reads a table whose keys start 3 bytes on as a NULL column (1
	// byte, never read) then the columns; the extra column also keeps a lone
	// text column off its raw path.
	view := &KeyTable{arena: t.arena, offs: make([]int, m)}
	groups := make([]uint32, m)
	for p := range m {
		off := t.offs[p]
		view.offs[p] = off + 3
		groups[p] = binary.LittleEndian.Uint32(t.arena[off:])
	}
	cols, err := view.DecodeKeys(mem, append([]arrow.DataType{arrow.Null}, types...), GroupRange(0, m))
	if err != nil {
		return nil, nil, err
	}
	cols[0].Release()
	return groups, cols[1:], nil
}

// InsertKey returns the id of key, a key as RowKeys encodes it (and Key
// returns it) that is not the NULL key of one text column, adding it if new:
// a key read back from disk state.
func (t *KeyTable) InsertKey(key []byte) uint32 { return t.findOrInsert(key) }
