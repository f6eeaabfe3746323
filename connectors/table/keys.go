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
