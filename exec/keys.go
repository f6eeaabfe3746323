package exec

// Shared key machinery of the built-in operators: encoding the key columns of a
// batch into one byte string per row, hashing them, and the open-addressing
// table that maps keys to dense ids (hash_agg's groups, hash_join's build
// keys); plus the small buffer and record helpers every operator uses.
// Everything here works a column at a time on Arrow buffers. (Gathering rows by
// an index vector lives with the filter, in filter.go.)

import (
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
	offs []int32
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
	// 16 spare bytes let keyTable load the last key's first words in one go.
	buf := growSlice(k.buf, int(offs[n])+16)[:offs[n]]
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

// Hashing keys: a key of up to 16 bytes (nearly every word) costs two 8-byte
// loads and one 64x64->128-bit multiply, in the manner of wyhash; longer ones
// fold 8 bytes per multiply. The key's first two words come back too, so the
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

// shortHash is the hash of a key of n <= 16 bytes whose zero-padded words are
// w0 and w1, for the seed whose k0 and k1 are seed^hashK0 and seed^hashK1.
func shortHash(w0, w1, n, k0, k1 uint64) uint64 { return hashMix(w0^k0, w1^k1^n) }

// shortKey hashes the key of n <= 16 bytes at the start of b, which holds 16
// bytes (Arrow pads its buffers, so they may run past the key), and returns its
// words too: hashKey's case of such keys in two loads. It is inlined, so that
// the loops over a batch's keys that call it (keyTable.findShort, HashRows)
// stay leaves and keep their variables in registers.
func shortKey(b []byte, n uint, k0, k1 uint64) (h, w0, w1 uint64) {
	b = b[:16]
	w0 = binary.LittleEndian.Uint64(b) & firstWord[n]
	w1 = binary.LittleEndian.Uint64(b[8:]) & secondWord[n]
	return shortHash(w0, w1, uint64(n), k0, k1), w0, w1
}

// lowBytes[n] keeps the first n bytes of a little-endian word.
var lowBytes = [9]uint64{0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffff, 0xffffffffffff, 0xffffffffffffff, ^uint64(0)}

// firstWord[n] and secondWord[n] keep the bytes of a key of n <= 16 bytes in
// the two words loaded from its start (a lookup is fewer instructions than a
// shift, which Go guards against counts of 64).
var firstWord, secondWord = func() (f, s [17]uint64) {
	for n := range 17 {
		f[n] = lowBytes[min(n, 8)]
		s[n] = lowBytes[max(n-8, 0)]
	}
	return f, s
}()

// loadWord reads up to 8 bytes of p, little-endian, zero-padded. When p's
// capacity allows (Arrow buffers are padded to 64 bytes) it is one load.
func loadWord(p []byte) uint64 {
	n := len(p)
	if n >= 8 {
		return binary.LittleEndian.Uint64(p)
	}
	if cap(p) >= 8 {
		return binary.LittleEndian.Uint64(p[:8]) & lowBytes[n]
	}
	var w uint64
	for i := n - 1; i >= 0; i-- {
		w = w<<8 | uint64(p[i])
	}
	return w
}

// hashKey returns p's hash and its first two words (bytes 0-7 and 8-15,
// zero-padded). Loops over many keys take their keys of up to 16 bytes through
// shortKey instead.
func hashKey(p []byte, seed uint64) (h, w0, w1 uint64) {
	n := uint64(len(p))
	w0 = loadWord(p)
	if n > 8 {
		w1 = loadWord(p[8:])
	}
	if n <= 16 {
		return shortHash(w0, w1, n, seed^hashK0, seed^hashK1), w0, w1
	}
	h = seed ^ n
	for len(p) > 8 {
		h = hashMix(h^binary.LittleEndian.Uint64(p)^hashK0, hashK1)
		p = p[8:]
	}
	return hashMix(h^loadWord(p)^hashK2, hashK1^n), w0, w1
}

// keyTable maps keys to dense ids 0, 1, 2, ... in order of first insertion. Keys
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
type keyTable struct {
	seed  uint64
	slots []uint32
	mask  uint64 // len(slots)-1, at most 1<<31-1
	arena []byte
	offs  []int       // key g is arena[offs[g]:offs[g+1]]
	words [][2]uint64 // words[g] is key g's bytes 0 to 7 and 8 to 15, zero-padded, and its length (keyWords)
	// nullID is the id of the NULL key of a raw table, or -1.
	nullID int32
}

func newKeyTable() *keyTable {
	t := &keyTable{seed: maphash.Comparable(maphash.MakeSeed(), 0), nullID: -1}
	t.slots = poolUint32.get(1024, true)
	t.mask = uint64(len(t.slots) - 1)
	t.offs = append(poolInt.get(0, false), 0)
	return t
}

// release gives the table's arrays back to their pools; the table must not be
// used afterwards, nor any slice of its arena.
func (t *keyTable) release() {
	poolUint32.put(t.slots)
	poolWords.put(t.words)
	poolInt.put(t.offs)
	poolBytes.put(t.arena)
	*t = keyTable{}
}

// reserve makes room for n more keys of keyBytes bytes in all, so that adding
// them does not grow the table on the way. Growing is two fifths of the cost of
// adding a key (BenchmarkKeyTableInsert): each doubling moves every slot.
func (t *keyTable) reserve(n, keyBytes int) {
	t.arena = poolBytes.grow(t.arena, keyBytes)
	t.offs = poolInt.grow(t.offs, n)
	t.words = poolWords.grow(t.words, n)
	size := len(t.slots)
	for uint64(t.len()+n)*2 > uint64(size-1) {
		size *= 2
	}
	if size > len(t.slots) {
		t.resize(size)
	}
}

// len returns the number of keys.
func (t *keyTable) len() int { return len(t.offs) - 1 }

// key returns key g.
func (t *keyTable) key(g uint32) []byte { return t.arena[t.offs[g]:t.offs[g+1]] }

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
func (t *keyTable) equal(g uint32, key []byte, w0, w1 uint64) bool {
	if t.words[g] != keyWords(w0, w1, len(key)) {
		return false
	}
	return len(key) < 16 || string(t.key(g)) == string(key)
}

// probe returns key's slot: the one holding it, or the empty one where it goes.
func (t *keyTable) probe(key []byte, h, w0, w1 uint64) uint64 {
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
func (t *keyTable) findOrInsert(key []byte) uint32 {
	h, w0, w1 := hashKey(key, t.seed)
	return t.findOrInsertHashed(key, h, w0, w1)
}

// findOrInsertHashed is findOrInsert for the key's hashKey results (which tests
// fake, to make keys collide).
func (t *keyTable) findOrInsertHashed(key []byte, h, w0, w1 uint64) uint32 {
	p := t.probe(key, h, w0, w1)
	if m := t.slots[p]; m != 0 {
		return slotID(m, uint32(t.mask))
	}
	return t.insertAt(p, key, h, w0, w1)
}

// insertAt adds key, which hashes to h and starts with words w0 and w1, in the
// empty slot p that probing for it ended at, and returns its id.
func (t *keyTable) insertAt(p uint64, key []byte, h, w0, w1 uint64) uint32 {
	g := uint32(t.len())
	t.arena = append(poolBytes.grow(t.arena, len(key)), key...)
	t.offs = append(poolInt.grow(t.offs, 1), len(t.arena))
	t.words = append(poolWords.grow(t.words, 1), keyWords(w0, w1, len(key)))
	t.slots[p] = slotTag(h, len(key), uint32(t.mask)) | (g + 1)
	if uint64(g+1)*2 > t.mask {
		t.grow()
	}
	return g
}

// find returns key's id, or -1.
func (t *keyTable) find(key []byte) int32 {
	h, w0, w1 := hashKey(key, t.seed)
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
func (t *keyTable) grow() {
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
func (t *keyTable) resize(size int) {
	slots := poolUint32.get(size, true)
	mask := uint64(len(slots) - 1)
	for g := range uint32(t.len()) {
		if int32(g) == t.nullID {
			continue
		}
		key := t.key(g)
		h, _, _ := hashKey(key, t.seed)
		p := h & mask
		for slots[p] != 0 {
			p = (p + 1) & mask
		}
		slots[p] = slotTag(h, len(key), uint32(mask)) | (g + 1)
	}
	poolUint32.put(t.slots)
	t.slots, t.mask = slots, mask
}

// nullGroup returns the id of the NULL key of a raw table, adding it if new. It
// has an empty arena entry and no slot.
func (t *keyTable) nullGroup() uint32 {
	if t.nullID < 0 {
		t.nullID = int32(t.len())
		t.offs = append(poolInt.grow(t.offs, 1), len(t.arena))
		t.words = append(poolWords.grow(t.words, 1), [2]uint64{})
	}
	return uint32(t.nullID)
}

// insertRows sets gids[i] to the id of row i's key, adding new keys. In a raw
// table NULL rows share the NULL key's id; encoded keys carry their NULLs.
//
// It is WordCount's hot loop (GROUP BY word). Most rows are a key of up to 15
// bytes already in the table: findShort handles runs of those in a loop without
// calls, and findOrInsert every other row (new keys, longer keys, and a key
// whose two words cannot be loaded without reading past data's capacity).
// Loading each row's slot in a pass before the probing loop, so that cache
// misses overlap, paid off with a slower probing loop but not with this one.
func (t *keyTable) insertRows(k *rowKeys, gids []uint32) {
	gids = gids[:k.n]
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
// It inlines hashKey and probe for such keys (the compiler inlines slotTag,
// slotID and keyWords) and, being a leaf, keeps its loop in registers: calls
// made the loop spill and reload most of its variables on every row.
func (t *keyTable) findShort(data []byte, offs []int32, gids []uint32, i int) (int, uint64, uint64, uint64, uint64) {
	slots, mask, words := t.slots, t.mask, t.words
	idMask := uint32(mask)
	s0, s1 := t.seed^hashK0, t.seed^hashK1
	offs = offs[:len(gids)+1]
	for ; i < len(gids); i++ {
		s, e := uint(uint32(offs[i])), uint(uint32(offs[i+1]))
		n := e - s
		if n > 15 || s+16 > uint(len(data)) {
			return i, noSlot, 0, 0, 0
		}
		h, w0, w1 := shortKey(data[s:s+16], n, s0, s1)
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

// lookupRows sets ids[i] to the id of row i's key, or -1 when the table lacks it
// or the row has a NULL key column (NULL never equals anything in a join).
func (t *keyTable) lookupRows(k *rowKeys, ids []int32) {
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
func (t *keyTable) rawKeyColumn(mem memory.Allocator, lo, hi int) (arrow.Array, error) {
	n := hi - lo
	if n == 0 {
		return array.MakeArrayOfNull(mem, arrow.BinaryTypes.String, 0), nil
	}
	base := t.offs[lo]
	size := t.offs[hi] - base
	if size > math.MaxInt32 {
		return nil, fmt.Errorf("exec: %d bytes of keys in one batch", size)
	}
	ob := newBuffer(mem, (n+1)*4)
	offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())
	db := newBuffer(mem, size)
	copy(db.Bytes(), t.arena[base:base+size])
	offs[0] = 0
	for j := range n {
		offs[j+1] = int32(t.offs[lo+j+1] - base)
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

// rawKeysAt builds the text column of keys ids of a raw table.
func (t *keyTable) rawKeysAt(mem memory.Allocator, ids []uint32) arrow.Array {
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

// decodeKeys rebuilds the key columns (of the given types) of the keys sel.
func (t *keyTable) decodeKeys(mem memory.Allocator, types []arrow.DataType, sel groupSel) ([]arrow.Array, error) {
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
	n := sel.len()
	pos := make([]int, n)
	for j := range n {
		pos[j] = t.offs[sel.at(j)]
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
