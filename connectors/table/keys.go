package table

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// appendKey appends to buf the encoding of row's values in cols: equal keys
// encode equally and different ones differently (each value has a fixed
// width or a length prefix), so the encoding is a map key.
func appendKey(buf []byte, rec arrow.RecordBatch, cols []int, row int) []byte {
	for _, c := range cols {
		switch a := rec.Column(c).(type) {
		case *array.Int64:
			buf = binary.BigEndian.AppendUint64(buf, uint64(a.Value(row)))
		case *array.Timestamp:
			buf = binary.BigEndian.AppendUint64(buf, uint64(a.Value(row)))
		case *array.Float64:
			v := a.Value(row)
			if v == 0 {
				v = 0 // -0 equals 0
			}
			if math.IsNaN(v) {
				v = math.NaN() // one NaN, as PostgreSQL's NaN equals NaN
			}
			buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(v))
		case *array.Decimal128:
			v := a.Value(row)
			buf = binary.BigEndian.AppendUint64(buf, uint64(v.HighBits()))
			buf = binary.BigEndian.AppendUint64(buf, v.LowBits())
		case *array.Boolean:
			b := byte(0)
			if a.Value(row) {
				b = 1
			}
			buf = append(buf, b)
		case *array.String:
			v := a.Value(row)
			buf = binary.AppendUvarint(buf, uint64(len(v)))
			buf = append(buf, v...)
		default:
			s := a.ValueStr(row)
			buf = binary.AppendUvarint(buf, uint64(len(s)))
			buf = append(buf, s...)
		}
	}
	return buf
}

// NewRows returns the rows of rec whose values (all columns, NULLs equal to
// each other, as a set operation takes them) seen lacks, adding them: nil
// when every row is new.
func NewRows(rec arrow.RecordBatch, seen map[string]bool) []int32 {
	cols := make([]int, rec.NumCols())
	for i := range cols {
		cols[i] = i
	}
	var keep []int32
	all := true
	var buf []byte
	for row := 0; row < int(rec.NumRows()); row++ {
		buf = buf[:0]
		for _, c := range cols {
			if rec.Column(c).IsNull(row) {
				buf = append(buf, 0)
				continue
			}
			buf = append(buf, 1)
			buf = appendKey(buf, rec, []int{c}, row)
		}
		if seen[string(buf)] {
			all = false
			continue
		}
		seen[string(buf)] = true
		keep = append(keep, int32(row))
	}
	if all {
		return nil
	}
	if keep == nil {
		keep = []int32{}
	}
	return keep
}
