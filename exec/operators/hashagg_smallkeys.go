package operators

// Group ids for a key of several columns of few values each, without encoding
// every row's key.

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

// smallKeys gives a batch's rows their group ids when the key is two or more
// columns of bigints, timestamps or texts of at most 7 bytes, each of few
// distinct values: TPC-H q1's GROUP BY l_returnflag, l_linestatus, where
// encoding every row's key and probing the table for it were a third of the
// query. Each column's values get small codes (a dictionary per column, kept
// across batches; 0 is NULL), a row's codes side by side index an array of
// the batch's group ids, and only one row of each distinct combination in
// the batch is encoded and looked up in the table, which stays the only
// holder of the groups (their ids, order of first appearance, and keys).
//
// It gives up for good (off) on the first value it cannot code: a longer
// text, another type, or more distinct values in a column than its bits hold;
// the batch then takes the ordinary path, which gives the same ids.
type smallKeys struct {
	off   bool
	bits  uint // per column
	dicts []smallDict
	codes []uint32
	// gidOf is indexed by a row's codes: -1 unseen in the batch, -2 seen
	// (a row of it in reps), else the group id. It is all -1 between batches.
	gidOf []int32
	reps  []int
	one   []arrow.Array
	keys  state.RowKeys
}

// smallKeyBits is the most bits of all a key's codes: gidOf has 1<<15 entries.
const smallKeyBits = 15

// smallDict codes one column's values: an open-addressing table of 256 slots
// kept at most half full, of words (a bigint itself, a text's bytes and
// length) and their codes 1, 2, ... (0: empty slot).
type smallDict struct {
	words [256]uint64
	codes [256]uint8
	n     int
	// byteCode[b] is the code of the one-byte text b, or 0 when not known.
	byteCode [256]uint8
}

// smallSlot is word w's first slot in a smallDict.
func smallSlot(w uint64) uint8 { return uint8((w * 0x9E3779B97F4A7C15) >> 56) }

// code returns w's code, adding it if there are fewer than max codes; 0 when
// w is new and there are max. The callers look in w's first slot themselves.
func (d *smallDict) code(w uint64, max int) uint32 {
	p := smallSlot(w)
	for ; d.codes[p] != 0; p++ {
		if d.words[p] == w {
			return uint32(d.codes[p])
		}
	}
	if d.n >= max {
		return 0
	}
	d.n++
	d.words[p], d.codes[p] = w, uint8(d.n)
	return uint32(d.n)
}

// groups sets gids[i] to the group of row i of the key columns cols (n rows),
// adding new groups to table, and reports whether it could; when it could
// not, it is off.
func (s *smallKeys) groups(table state.Keyed, cols []arrow.Array, n int, gids []uint32) bool {
	if s.off {
		return false
	}
	if s.dicts == nil {
		s.bits = smallKeyBits / uint(len(cols))
		if len(cols) < 2 || s.bits < 2 {
			s.off = true
			return false
		}
		s.dicts = make([]smallDict, len(cols))
		s.gidOf = make([]int32, 1<<(s.bits*uint(len(cols))))
		for i := range s.gidOf {
			s.gidOf[i] = -1
		}
	}
	max := min(1<<s.bits-1, 127)
	codes := vector.GrowSlice(s.codes, n)[:n]
	s.codes = codes
	clear(codes)
	for j, c := range cols {
		if !s.addCodes(&s.dicts[j], c, codes, max) {
			s.off = true
			return false
		}
	}
	// One row of each combination new to the batch, in order of first
	// appearance, so that new groups get their ids in that order.
	gidOf := s.gidOf
	s.reps = s.reps[:0]
	for i, c := range codes {
		if gidOf[c] == -1 {
			gidOf[c] = -2
			s.reps = append(s.reps, i)
		}
	}
	s.one = vector.GrowSlice(s.one, len(cols))[:len(cols)]
	var g [1]uint32
	for _, r := range s.reps {
		for j, c := range cols {
			s.one[j] = array.NewSlice(c, int64(r), int64(r+1))
		}
		err := s.keys.Encode(s.one, nil, 1)
		vector.ReleaseArrays(s.one)
		if err != nil {
			// Not expected, as addCodes took the columns' types; the
			// ordinary path reports it. The groups added hold rows of
			// this batch, which it folds.
			for _, r := range s.reps {
				gidOf[codes[r]] = -1
			}
			s.off = true
			return false
		}
		table.InsertRows(&s.keys, g[:])
		gidOf[codes[r]] = int32(g[0])
	}
	for i, c := range codes {
		gids[i] = uint32(gidOf[c])
	}
	for _, r := range s.reps {
		gidOf[codes[r]] = -1
	}
	return true
}

// addCodes shifts each row's codes left by s.bits and adds its code of
// column c in d; false when a value cannot be coded.
func (s *smallKeys) addCodes(d *smallDict, c arrow.Array, codes []uint32, max int) bool {
	valid, voff := vector.ValidityOf(c)
	bits := s.bits
	switch a := c.(type) {
	case *array.Int64, *array.Timestamp:
		src := arrow.Int64Traits.CastFromBytes(a.Data().Buffers()[1].Bytes())[a.Data().Offset():]
		src = src[:len(codes)]
		for i, x := range src {
			var k uint32
			if valid == nil || bitutil.BitIsSet(valid, voff+i) {
				w := uint64(x)
				if p := smallSlot(w); d.codes[p] != 0 && d.words[p] == w {
					k = uint32(d.codes[p])
				} else if k = d.code(w, max); k == 0 {
					return false
				}
			}
			codes[i] = codes[i]<<bits | k
		}
	case *array.String:
		vo := a.ValueOffsets()[:len(codes)+1]
		base := vo[0]
		// Arrow pads buffers to 64 bytes, so a text's first 8 bytes can
		// mostly be loaded in one go.
		vals := a.ValueBytes()
		if valid == nil && len(vals) == len(codes) && oneByteTexts(vo) {
			return oneByteCodes(d, vals, codes, bits, max)
		}
		full := vals[:cap(vals)]
		for i := range codes {
			var k uint32
			if valid == nil || bitutil.BitIsSet(valid, voff+i) {
				st, n := uint(vo[i]-base), uint(vo[i+1]-vo[i])
				if n > 7 {
					return false
				}
				var w uint64
				if st+8 <= uint(len(full)) {
					w = binary.LittleEndian.Uint64(full[st:]) & (1<<(8*n) - 1)
				} else {
					for b, x := range vals[st : st+n] {
						w |= uint64(x) << (8 * b)
					}
				}
				w |= uint64(n) << 56
				if p := smallSlot(w); d.codes[p] != 0 && d.words[p] == w {
					k = uint32(d.codes[p])
				} else if k = d.code(w, max); k == 0 {
					return false
				}
			}
			codes[i] = codes[i]<<bits | k
		}
	default:
		return false
	}
	return true
}

// oneByteTexts reports whether every text of offsets vo is one byte long.
func oneByteTexts(vo []int32) bool {
	for i := range len(vo) - 1 {
		if vo[i+1]-vo[i] != 1 {
			return false
		}
	}
	return true
}

// oneByteCodes is addCodes for a column of texts of one byte each, none
// NULL, whose bytes are vals: a flag, as TPC-H's l_returnflag, is coded by
// a look-up of its byte.
func oneByteCodes(d *smallDict, vals []byte, codes []uint32, bits uint, max int) bool {
	vals = vals[:len(codes)]
	for i, x := range vals {
		k := uint32(d.byteCode[x])
		if k == 0 {
			if k = d.code(uint64(x)|1<<56, max); k == 0 {
				return false
			}
			d.byteCode[x] = uint8(k)
		}
		codes[i] = codes[i]<<bits | k
	}
	return true
}
