package exec

// Shared key machinery of the built-in operators: encoding the key columns of a
// batch into one byte string per row, hashing them, and the open-addressing
// table that maps keys to dense ids (hash_agg's groups, hash_join's build
// keys); plus the small buffer and record helpers every operator uses.
// Everything here works a column at a time on Arrow buffers. (Gathering rows by
// an index vector lives with the filter, in filter.go.)

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// outBatchRows caps the rows of a batch an operator builds itself (aggregate
// results, sorted runs, join output), so downstream never sees a giant batch.
const outBatchRows = 1 << 16

// taskAlloc returns the task's allocator (the default one when a test passes
// none).
func taskAlloc(tc *TaskContext) memory.Allocator {
	if tc != nil && tc.Alloc != nil {
		return tc.Alloc
	}
	return memory.DefaultAllocator
}

// newBuffer returns a buffer of n bytes from mem. The bytes are not zeroed.
func newBuffer(mem memory.Allocator, n int) *memory.Buffer {
	b := memory.NewResizableBuffer(mem)
	b.Resize(n)
	return b
}

// makeRecord builds a record of n rows from cols, checking each column's type
// against the schema so that a planner mistake is an error rather than a panic
// inside Arrow. It takes over the caller's references to cols in every case.
func makeRecord(schema *arrow.Schema, cols []arrow.Array, n int) (arrow.RecordBatch, error) {
	defer releaseArrays(cols)
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

func releaseArrays(cols []arrow.Array) {
	for _, c := range cols {
		if c != nil {
			c.Release()
		}
	}
}

// rowSigns returns +1 for each row that adds to a result (Insert, UpdateAfter)
// and -1 for each that retracts (Delete, UpdateBefore), or nil when every row is
// an Insert, so aggregate loops can keep a branch-free fast path.
func rowSigns(ops []ChangeKind, dst []int8) []int8 {
	if ops == nil {
		return nil
	}
	dst = growSlice(dst, len(ops))
	retract := false
	for i, op := range ops {
		if op == Delete || op == UpdateBefore {
			dst[i] = -1
			retract = true
		} else {
			dst[i] = 1
		}
	}
	if !retract {
		return nil
	}
	return dst
}

// growSlice returns s resized to n entries, reusing its storage when it can.
// The contents are not cleared.
func growSlice[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n, n+n/4)
}

// validityOf returns the validity bitmap bytes of arr and the bit offset of its
// row 0, or nil when arr has no NULLs.
func validityOf(arr arrow.Array) ([]byte, int) {
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

// Key encoding.
//
// A row's key is the concatenation, per key column, of a flag byte (0 NULL,
// 1 valid) and the value: 1 byte for a boolean, 8 little-endian bytes for bigint,
// timestamp and double (with -0 and NaN made canonical so that equal numbers
// encode equally), 16 for a decimal, and a 4-byte length then the bytes for text.
// A NULL writes zeros of the same width, so fixed-width keys have fixed width.
// Two keys are equal exactly when the rows are equal under GROUP BY (NULL equal
// to NULL), and the encoding is decodable (decodeKeys).
//
// One text column alone is not encoded at all ("raw" keys): a row's key is the
// string's own bytes read in place from the Arrow buffers, and NULL is flagged
// beside it. That is WordCount's GROUP BY word.

// rowKeys is the keys of one batch.
type rowKeys struct {
	n    int
	raw  bool
	data []byte
	// offs has n+1 entries when !raw: row i's key is data[offs[i]:offs[i+1]].
	// When raw, offs are the string column's offsets (absolute in data).
	offs   []int32
	hashes []uint64
	words  []uint64
	// nullRow[i] says some key column is NULL at row i; nil when none is.
	nullRow []bool

	buf    []byte
	offBuf []int32
	pos    []int32
	nulls  []bool
}

// isRawKey reports whether keys of these types are used raw (see above).
func isRawKey(types []arrow.DataType) bool {
	return len(types) == 1 && types[0].ID() == arrow.STRING
}

// keyWidth returns the encoded width of a fixed-width key column, or -1 for text.
func keyWidth(dt arrow.DataType) (int, error) {
	switch dt.ID() {
	case arrow.NULL:
		return 1, nil
	case arrow.BOOL:
		return 2, nil
	case arrow.INT64, arrow.FLOAT64, arrow.TIMESTAMP:
		return 9, nil
	case arrow.DECIMAL128:
		return 17, nil
	case arrow.STRING:
		return -1, nil
	}
	return 0, fmt.Errorf("exec: cannot use a %s column as a key", dt)
}

// encode computes the keys of n rows of cols. prefix, when not nil, is a group id
// per row written before the columns (count distinct keys on (group, value)).
// The keys alias cols' buffers (raw) or k's scratch, until the next encode.
func (k *rowKeys) encode(cols []arrow.Array, prefix []uint32, n int) error {
	k.n = n
	k.nullRow = nil
	if prefix == nil && len(cols) == 1 && cols[0].DataType().ID() == arrow.STRING {
		s := cols[0].(*array.String)
		k.raw = true
		k.offs = s.ValueOffsets()
		k.data = nil
		if b := s.Data().Buffers()[2]; b != nil {
			k.data = b.Bytes()
		}
		if s.NullN() > 0 {
			k.nullRow = growSlice(k.nulls, n)
			k.nulls = k.nullRow
			for i := range n {
				k.nullRow[i] = s.IsNull(i)
			}
		}
		return nil
	}
	k.raw = false
	fixed := 0
	if prefix != nil {
		fixed = 4
	}
	hasString := false
	for _, c := range cols {
		w, err := keyWidth(c.DataType())
		if err != nil {
			return err
		}
		if w < 0 {
			hasString = true
			w = 5
		}
		fixed += w
	}
	offs := growSlice(k.offBuf, n+1)
	k.offBuf = offs
	if !hasString {
		for i := range n + 1 {
			offs[i] = int32(i * fixed)
		}
	} else {
		total := 0
		for i := range n {
			offs[i] = int32(total)
			total += fixed
			for _, c := range cols {
				if s, ok := c.(*array.String); ok && s.IsValid(i) {
					total += s.ValueLen(i)
				}
			}
			if total > math.MaxInt32 {
				return fmt.Errorf("exec: keys of one batch exceed 2 GiB")
			}
		}
		offs[n] = int32(total)
	}
	k.offs = offs
	// 8 spare bytes let hashKey load the last key's first word in one go.
	buf := growSlice(k.buf, int(offs[n])+8)[:offs[n]]
	k.buf = buf
	k.data = buf
	pos := growSlice(k.pos, n)
	k.pos = pos
	copy(pos, offs[:n])
	if prefix != nil {
		for i := range n {
			binary.LittleEndian.PutUint32(buf[pos[i]:], prefix[i])
			pos[i] += 4
		}
	}
	for _, c := range cols {
		if c.NullN() > 0 {
			if k.nullRow == nil {
				k.nullRow = growSlice(k.nulls, n)
				k.nulls = k.nullRow
				clear(k.nullRow)
			}
			for i := range n {
				if c.IsNull(i) {
					k.nullRow[i] = true
				}
			}
		}
		encodeKeyColumn(buf, pos, c, n)
	}
	return nil
}

// encodeKeyColumn appends column c's part of each row's key at pos[i].
func encodeKeyColumn(buf []byte, pos []int32, c arrow.Array, n int) {
	valid, voff := validityOf(c)
	isValid := func(i int) bool { return valid == nil || bitutil.BitIsSet(valid, voff+i) }
	switch a := c.(type) {
	case *array.Null:
		for i := range n {
			buf[pos[i]] = 0
			pos[i]++
		}
	case *array.Boolean:
		for i := range n {
			p := pos[i]
			if isValid(i) {
				buf[p] = 1
				buf[p+1] = 0
				if a.Value(i) {
					buf[p+1] = 1
				}
			} else {
				buf[p], buf[p+1] = 0, 0
			}
			pos[i] = p + 2
		}
	case *array.Int64, *array.Timestamp, *array.Float64:
		d := c.Data()
		src := arrow.Uint64Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset():]
		isFloat := c.DataType().ID() == arrow.FLOAT64
		for i := range n {
			p := pos[i]
			if isValid(i) {
				v := src[i]
				if isFloat {
					v = canonicalFloatBits(v)
				}
				buf[p] = 1
				binary.LittleEndian.PutUint64(buf[p+1:], v)
			} else {
				clear(buf[p : p+9])
			}
			pos[i] = p + 9
		}
	case *array.Decimal128:
		d := c.Data()
		src := d.Buffers()[1].Bytes()[16*d.Offset():]
		for i := range n {
			p := pos[i]
			if isValid(i) {
				buf[p] = 1
				copy(buf[p+1:p+17], src[16*i:16*i+16])
			} else {
				clear(buf[p : p+17])
			}
			pos[i] = p + 17
		}
	case *array.String:
		for i := range n {
			p := pos[i]
			if isValid(i) {
				v := a.Value(i)
				buf[p] = 1
				binary.LittleEndian.PutUint32(buf[p+1:], uint32(len(v)))
				pos[i] = p + 5 + int32(copy(buf[p+5:], v))
			} else {
				clear(buf[p : p+5])
				pos[i] = p + 5
			}
		}
	}
}

// canonicalFloatBits makes -0 equal to 0 and every NaN one NaN, as SQL's
// grouping and equality want.
func canonicalFloatBits(v uint64) uint64 {
	f := math.Float64frombits(v)
	if f == 0 {
		return 0
	}
	if f != f {
		return 0x7ff8000000000001
	}
	return v
}

// hash fills k.hashes and k.words (each key's first 8 bytes, zero-padded).
func (k *rowKeys) hash(seed uint64) {
	k.hashes = growSlice(k.hashes, k.n)
	k.words = growSlice(k.words, k.n)
	h, w, data, offs := k.hashes, k.words, k.data, k.offs
	for i := range h {
		h[i], w[i] = hashKey(data[offs[i]:offs[i+1]], seed)
	}
}

// Hashing keys: short keys (WordCount's words are 4 to 5 bytes) cost one
// 8-byte load and one 64x64->128-bit multiply, in the manner of wyhash; longer
// ones fold 8 bytes per multiply. The key's first word comes back too, so the
// table compares most keys without touching its arena.
const (
	hashK0 = 0xa0761d6478bd642f
	hashK1 = 0xe7037ed1a0b428db
	hashK2 = 0x8ebc6af09c88c6e3
)

func hashMix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// loadWord reads up to 8 bytes of p, little-endian, zero-padded. When p's
// capacity allows (Arrow buffers are padded to 64 bytes) it is one load.
func loadWord(p []byte) uint64 {
	n := len(p)
	if n >= 8 {
		return binary.LittleEndian.Uint64(p)
	}
	if cap(p) >= 8 {
		return binary.LittleEndian.Uint64(p[:8]) & (^uint64(0) >> (64 - 8*uint(n)))
	}
	var w uint64
	for i := n - 1; i >= 0; i-- {
		w = w<<8 | uint64(p[i])
	}
	return w
}

func hashKey(p []byte, seed uint64) (h, first uint64) {
	n := uint64(len(p))
	first = loadWord(p)
	if n <= 8 {
		return hashMix(first^seed^hashK0, n^hashK1), first
	}
	h = seed ^ n
	for len(p) > 8 {
		h = hashMix(h^binary.LittleEndian.Uint64(p)^hashK0, hashK1)
		p = p[8:]
	}
	return hashMix(h^loadWord(p)^hashK2, hashK1^n), first
}

// keyTable maps keys to dense ids 0, 1, 2, ... in order of first insertion. Keys
// live in one byte arena, so a table of a million words is a handful of
// allocations. Open addressing with linear probing, at most half full. A slot is
// 8 bytes: the high 24 bits of the key's hash, its length (capped at 255) and
// id+1 (0 = empty), so a vocabulary of 100k words probes a 1 MiB slot array that
// stays in L2. Each key's first 8 bytes are kept per id in words: a key of up to
// 8 bytes (most words) is compared with one more load, which for frequent words
// (low ids, inserted first) is a cache hit; longer keys compare the rest in the
// arena.
type keyTable struct {
	seed   uint64
	slots  []uint64
	mask   uint64
	arena  []byte
	starts []int // key g is arena[starts[g]:starts[g]+lens[g]]
	lens   []uint32
	hashes []uint64
	words  []uint64 // words[g] is key g's first 8 bytes, zero-padded
	// nullID is the id of the NULL key of a raw table, or -1.
	nullID int32
	// touched keeps touch's loads from being optimised away.
	touched uint64
}

func newKeyTable() *keyTable {
	t := &keyTable{seed: maphash.Comparable(maphash.MakeSeed(), 0), nullID: -1}
	t.slots = make([]uint64, 1024)
	t.mask = uint64(len(t.slots) - 1)
	return t
}

// len returns the number of keys.
func (t *keyTable) len() int { return len(t.starts) }

func (t *keyTable) add(key []byte, h, w uint64) uint32 {
	g := uint32(len(t.starts))
	t.starts = append(t.starts, len(t.arena))
	t.lens = append(t.lens, uint32(len(key)))
	t.hashes = append(t.hashes, h)
	t.words = append(t.words, w)
	t.arena = append(t.arena, key...)
	return g
}

func slotTag(h uint64, n int) uint64 {
	return h>>40<<40 | uint64(min(n, 255))<<32
}

// equal reports whether key g, whose slot tag (hash bits and length up to 255)
// matches key's, equals key, whose first 8 bytes are w.
func (t *keyTable) equal(g uint32, key []byte, w uint64) bool {
	if t.words[g] != w {
		return false
	}
	if len(key) <= 8 {
		return true
	}
	if int(t.lens[g]) != len(key) {
		return false
	}
	s := t.starts[g]
	return bytes.Equal(t.arena[s+8:s+len(key)], key[8:])
}

// findOrInsert returns key's id, adding it if new.
func (t *keyTable) findOrInsert(key []byte, h, w uint64) uint32 {
	tag := slotTag(h, len(key))
	for p := h & t.mask; ; p = (p + 1) & t.mask {
		m := t.slots[p]
		if m&^0xffffffff == tag && t.equal(uint32(m)-1, key, w) {
			return uint32(m) - 1
		}
		if m == 0 {
			g := t.add(key, h, w)
			t.slots[p] = tag | uint64(g+1)
			if uint64(len(t.starts))*2 > t.mask {
				t.grow()
			}
			return g
		}
	}
}

// find returns key's id or -1.
func (t *keyTable) find(key []byte, h, w uint64) int32 {
	tag := slotTag(h, len(key))
	for p := h & t.mask; ; p = (p + 1) & t.mask {
		m := t.slots[p]
		if m == 0 {
			return -1
		}
		if m&^0xffffffff == tag && t.equal(uint32(m)-1, key, w) {
			return int32(uint32(m) - 1)
		}
	}
}

func (t *keyTable) grow() {
	slots := make([]uint64, 2*len(t.slots))
	mask := uint64(len(slots) - 1)
	for _, m := range t.slots {
		if m == 0 {
			continue
		}
		p := t.hashes[uint32(m)-1] & mask
		for slots[p] != 0 {
			p = (p + 1) & mask
		}
		slots[p] = m
	}
	t.slots, t.mask = slots, mask
}

// nullGroup returns the id of the NULL key of a raw table, adding it if new. It
// has an empty arena entry and no slot.
func (t *keyTable) nullGroup() uint32 {
	if t.nullID < 0 {
		t.nullID = int32(t.add(nil, 0, 0))
	}
	return uint32(t.nullID)
}

// insertRows sets gids[i] to the id of row i's key, adding new keys. In a raw
// table NULL rows share the NULL key's id; encoded keys carry their NULLs.
func (t *keyTable) insertRows(k *rowKeys, gids []uint32) {
	k.hash(t.seed)
	hs, ws, data, offs := k.hashes, k.words, k.data, k.offs
	t.touch(hs)
	if k.raw && k.nullRow != nil {
		for i, h := range hs {
			if k.nullRow[i] {
				gids[i] = t.nullGroup()
				continue
			}
			gids[i] = t.findOrInsert(data[offs[i]:offs[i+1]], h, ws[i])
		}
		return
	}
	for i, h := range hs {
		gids[i] = t.findOrInsert(data[offs[i]:offs[i+1]], h, ws[i])
	}
}

// touch loads the slot of every hash before the probing loop: these loads do
// not depend on each other, so the CPU overlaps their cache misses, where the
// probing loop, whose every step branches on what it loaded, would take them one
// at a time. A table larger than the L2 cache (a vocabulary of some 100k words)
// is then probed at cache speed.
func (t *keyTable) touch(hs []uint64) {
	var sum uint64
	slots, mask := t.slots, t.mask
	for _, h := range hs {
		sum += slots[h&mask]
	}
	t.touched = sum
}

// lookupRows sets ids[i] to the id of row i's key, or -1 when the table lacks it
// or the row has a NULL key column (NULL never equals anything in a join).
func (t *keyTable) lookupRows(k *rowKeys, ids []int32) {
	k.hash(t.seed)
	hs, ws, data, offs := k.hashes, k.words, k.data, k.offs
	for i, h := range hs {
		if k.nullRow != nil && k.nullRow[i] {
			ids[i] = -1
			continue
		}
		ids[i] = t.find(data[offs[i]:offs[i+1]], h, ws[i])
	}
}

// rawKeyColumn builds the text column of keys lo..hi-1 of a raw table.
func (t *keyTable) rawKeyColumn(mem memory.Allocator, lo, hi int) (arrow.Array, error) {
	n := hi - lo
	if n == 0 {
		return array.MakeArrayOfNull(mem, arrow.BinaryTypes.String, 0), nil
	}
	base := t.starts[lo]
	size := t.starts[hi-1] + int(t.lens[hi-1]) - base
	if size > math.MaxInt32 {
		return nil, fmt.Errorf("exec: %d bytes of keys in one batch", size)
	}
	ob := newBuffer(mem, (n+1)*4)
	offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())
	db := newBuffer(mem, size)
	copy(db.Bytes(), t.arena[base:base+size])
	offs[0] = 0
	for j := range n {
		offs[j+1] = int32(t.starts[lo+j] + int(t.lens[lo+j]) - base)
	}
	var nb *memory.Buffer
	nulls := 0
	if g := int(t.nullID); g >= lo && g < hi {
		nb = newBuffer(mem, int(bitutil.BytesForBits(int64(n))))
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

// decodeKeys rebuilds the key columns (of the given types) of keys lo..hi-1.
func (t *keyTable) decodeKeys(mem memory.Allocator, types []arrow.DataType, lo, hi int) ([]arrow.Array, error) {
	if isRawKey(types) {
		a, err := t.rawKeyColumn(mem, lo, hi)
		if err != nil {
			return nil, err
		}
		return []arrow.Array{a}, nil
	}
	n := hi - lo
	pos := make([]int, n)
	for j := range n {
		pos[j] = t.starts[lo+j]
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
			releaseArrays(cols)
			return nil, fmt.Errorf("exec: cannot decode a %s key", dt)
		}
		cols = append(cols, b.NewArray())
		b.Release()
	}
	return cols, nil
}
