package operators

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/hummer-db/hummer/exec/vector"
)

// Normalised sort keys: each row's sort key encoded as bytes whose order
// (bytes.Compare) is the row order of sortComparator over all the keys, so
// that rows of different batches compare without their columns (a merge of
// sorted runs, sort_spill.go).
//
// Per key: a marker byte, 0x00 for a NULL that sorts first, 0x02 for one that
// sorts last, 0x01 before a value; then the value, its bytes inverted for a
// DESC key. Values: int64 and timestamps big-endian with the sign bit flipped;
// doubles as IEEE 754 bits made monotonic (-0 as 0; NaN above +Inf); decimals
// as their high word (sign flipped) then low word; booleans as 0 or 1; text
// with each 0x00 escaped as 0x00 0xFF and ended by 0x00 0x00, so no key is a
// prefix of a longer one.

const (
	markNullFirst = 0x00
	markValue     = 0x01
	markNullLast  = 0x02
)

// sortKeys are the normalised keys of a batch's rows: row i's is
// data[offs[i]:offs[i+1]].
type sortKeys struct {
	data []byte
	offs []int32
}

func (k *sortKeys) key(i int) []byte { return k.data[k.offs[i]:k.offs[i+1]] }

// encode sets k to the keys of rec's rows under specs.
func (k *sortKeys) encode(rec arrow.RecordBatch, specs []SortKeySpec) error {
	n := int(rec.NumRows())
	k.data = k.data[:0]
	// Encoded key by key, then interleaved: each key column is walked once.
	cols := make([][]byte, len(specs))
	ends := make([][]int32, len(specs))
	for j, spec := range specs {
		if spec.Col < 0 || spec.Col >= int(rec.NumCols()) {
			return fmt.Errorf("sort: key column %d out of range (%d columns)", spec.Col, rec.NumCols())
		}
		var err error
		cols[j], ends[j], err = encodeSortColumn(rec.Column(spec.Col), spec)
		if err != nil {
			return err
		}
	}
	k.offs = vector.GrowSlice(k.offs, n+1)
	k.offs[0] = 0
	for i := range n {
		for j := range specs {
			start := int32(0)
			if i > 0 {
				start = ends[j][i-1]
			}
			k.data = append(k.data, cols[j][start:ends[j][i]]...)
		}
		k.offs[i+1] = int32(len(k.data))
	}
	return nil
}

// encodeSortColumn encodes one key of every row of arr: row i's bytes end at
// ends[i].
func encodeSortColumn(arr arrow.Array, spec SortKeySpec) ([]byte, []int32, error) {
	n := arr.Len()
	out := make([]byte, 0, n*10)
	ends := make([]int32, n)
	valid, voff := vector.ValidityOf(arr)
	if _, ok := arr.(*array.Null); ok {
		valid, voff = []byte{}, 0 // every row NULL
	}
	var value func(dst []byte, i int) []byte
	switch a := arr.(type) {
	case *array.Null:
	case *array.Int64:
		v := a.Int64Values()
		value = func(dst []byte, i int) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v[i])^(1<<63)) }
	case *array.Timestamp:
		v := a.TimestampValues()
		value = func(dst []byte, i int) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v[i])^(1<<63)) }
	case *array.Float64:
		v := a.Float64Values()
		value = func(dst []byte, i int) []byte {
			x := v[i]
			var u uint64
			switch {
			case x != x:
				u = math.MaxUint64
			case x == 0:
				u = 1 << 63
			default:
				u = math.Float64bits(x)
				if u&(1<<63) != 0 {
					u = ^u
				} else {
					u |= 1 << 63
				}
			}
			return binary.BigEndian.AppendUint64(dst, u)
		}
	case *array.Decimal128:
		v := a.Values()
		value = func(dst []byte, i int) []byte {
			dst = binary.BigEndian.AppendUint64(dst, uint64(v[i].HighBits())^(1<<63))
			return binary.BigEndian.AppendUint64(dst, v[i].LowBits())
		}
	case *array.Boolean:
		value = func(dst []byte, i int) []byte {
			if a.Value(i) {
				return append(dst, 1)
			}
			return append(dst, 0)
		}
	case *array.String:
		value = func(dst []byte, i int) []byte {
			for _, c := range []byte(a.Value(i)) {
				dst = append(dst, c)
				if c == 0 {
					dst = append(dst, 0xFF)
				}
			}
			return append(dst, 0, 0)
		}
	default:
		return nil, nil, fmt.Errorf("sort: cannot order %s", arr.DataType())
	}
	nullMark := byte(markNullLast)
	if spec.NullsFirst {
		nullMark = markNullFirst
	}
	for i := range n {
		if valid != nil && (len(valid) == 0 || !bitutil.BitIsSet(valid, voff+i)) {
			out = append(out, nullMark)
		} else {
			out = append(out, markValue)
			start := len(out)
			out = value(out, i)
			if spec.Desc {
				for j := start; j < len(out); j++ {
					out[j] = ^out[j]
				}
			}
		}
		ends[i] = int32(len(out))
	}
	return out, ends, nil
}
