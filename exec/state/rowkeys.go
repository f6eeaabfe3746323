package state

// Encoding the key columns of a batch into one byte string per row, a column
// at a time on the Arrow buffers; the keys' hashing is exec/vector's, the
// table that gives them ids keytable.go's.

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/hummer-db/hummer/exec/vector"
)

// Key encoding.
//
// A row's key is the concatenation, per key column, of a flag byte (0 NULL,
// 1 valid) and the value: 1 byte for a boolean, 8 little-endian bytes for bigint,
// timestamp and double (with -0 and NaN made canonical so that equal numbers
// encode equally), 16 for a decimal, and a 4-byte length then the bytes for text.
// A NULL writes zeros of the same width, so fixed-width keys have fixed width.
// Two keys are equal exactly when the rows are equal under GROUP BY (NULL equal
// to NULL), and the encoding is decodable (KeyTable.DecodeKeys).
//
// One text column alone is not encoded at all ("raw" keys): a row's key is the
// string's own bytes read in place from the Arrow buffers, and NULL is flagged
// beside it. That is WordCount's GROUP BY word.

// RowKeys is the keys of one batch.
type RowKeys struct {
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

// KeyWidth returns the encoded width of a fixed-width key column, or -1 for text.
func KeyWidth(dt arrow.DataType) (int, error) {
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

// Encode computes the keys of n rows of cols. prefix, when not nil, is a group id
// per row written before the columns (count distinct keys on (group, value)).
// The keys alias cols' buffers (raw) or k's scratch, until the next encode.
func (k *RowKeys) Encode(cols []arrow.Array, prefix []uint32, n int) error {
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
			k.nullRow = vector.GrowSlice(k.nulls, n)
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
		w, err := KeyWidth(c.DataType())
		if err != nil {
			return err
		}
		if w < 0 {
			hasString = true
			w = 5
		}
		fixed += w
	}
	offs := vector.GrowSlice(k.offBuf, n+1)
	k.offBuf = offs
	if !hasString {
		for i := range n + 1 {
			offs[i] = int32(i * fixed)
		}
	} else {
		// Each row's size, a column at a time from the offsets (in pos,
		// which is set again below), then their running sum.
		size := vector.GrowSlice(k.pos, n)
		k.pos = size
		for i := range size {
			size[i] = int32(fixed)
		}
		for _, c := range cols {
			s, ok := c.(*array.String)
			if !ok {
				continue
			}
			vo := s.ValueOffsets()
			nulls := s.NullN() > 0
			for i := range size {
				if !nulls || s.IsValid(i) {
					size[i] += vo[i+1] - vo[i]
				}
			}
		}
		total := 0
		for i, sz := range size {
			offs[i] = int32(total)
			total += int(sz)
			if total > math.MaxInt32 {
				return fmt.Errorf("exec: keys of one batch exceed 2 GiB")
			}
		}
		offs[n] = int32(total)
	}
	k.offs = offs
	// 16 spare bytes let KeyTable load the last key's first words in one go.
	buf := vector.GrowSlice(k.buf, int(offs[n])+16)[:offs[n]]
	k.buf = buf
	k.data = buf
	pos := vector.GrowSlice(k.pos, n)
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
				k.nullRow = vector.GrowSlice(k.nulls, n)
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
	valid, voff := vector.ValidityOf(c)
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
		// The bytes straight from the buffers: Value's bounds checks and
		// string header per row were a tenth of TPC-H q1's GROUP BY of two
		// text columns.
		vo := a.ValueOffsets()
		vals := a.ValueBytes()
		base := vo[0]
		for i := range n {
			p := pos[i]
			if isValid(i) {
				v := vals[vo[i]-base : vo[i+1]-base]
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

// SetEncoded makes k the keys of columns of types already encoded: key i is
// data[offs[i]:offs[i+1]], as Encode wrote it (and KeyTable.Key returns it),
// and, for one text column, nulls[i] says key i is NULL (nil: none is). The
// keys alias data, which is not changed.
func (k *RowKeys) SetEncoded(types []arrow.DataType, data []byte, offs []int32, nulls []bool) {
	k.n = len(offs) - 1
	k.raw = isRawKey(types)
	k.data, k.offs, k.nullRow = data, offs, nil
	if k.raw {
		k.nullRow = nulls
		return
	}
	for i := range k.n {
		if nullKey(types, data[offs[i]:offs[i+1]]) {
			k.nullRow = vector.GrowSlice(k.nulls, k.n)
			k.nulls = k.nullRow
			for j := range k.n {
				k.nullRow[j] = nullKey(types, data[offs[j]:offs[j+1]])
			}
			return
		}
	}
}

// nullKey reports whether some column of an encoded key is NULL.
func nullKey(types []arrow.DataType, key []byte) bool {
	for _, dt := range types {
		if len(key) == 0 || key[0] == 0 {
			return true
		}
		w, _ := KeyWidth(dt)
		if w < 0 {
			w = 5 + int(binary.LittleEndian.Uint32(key[1:]))
		}
		key = key[min(w, len(key)):]
	}
	return false
}

// Null reports whether some key column of row i is NULL (a join's NULL keys
// match nothing).
func (k *RowKeys) Null(i int) bool { return k.nullRow != nil && k.nullRow[i] }

// Key returns row i's key as encoded (for one text column, the string's
// bytes; Null says whether it is NULL). It aliases the keys' buffers.
func (k *RowKeys) Key(i int) []byte { return k.data[k.offs[i]:k.offs[i+1]] }

// Bytes returns the size of the batch's encoded keys, for KeyTable.Reserve.
func (k *RowKeys) Bytes() int { return int(k.offs[k.n] - k.offs[0]) }
