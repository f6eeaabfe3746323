package expr

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// ValueOf returns row i of arr as a scalar. It is for single values (constants,
// EXPLAIN, tests), not for loops over a batch. Arrays of a type the engine does
// not store give a NULL of type null.
func ValueOf(arr arrow.Array, i int) types.Value {
	t, err := types.FromArrow(arr.DataType())
	if err != nil {
		return types.NullValue(types.NullType)
	}
	if arr.IsNull(i) {
		return types.NullValue(t)
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return types.BoolValue(a.Value(i))
	case *array.Int64:
		return types.IntValue(a.Value(i))
	case *array.Float64:
		return types.FloatValue(a.Value(i))
	case *array.Decimal128:
		return types.DecimalValue(t, a.Value(i))
	case *array.String:
		return types.StringValue(a.Value(i))
	case *array.Timestamp:
		return types.TimestampValue(int64(a.Value(i)))
	}
	return types.NullValue(t)
}

// ArrayOf returns an array of n copies of v, of type v.Type's Arrow type,
// allocated from mem. The caller releases it.
func ArrayOf(v types.Value, n int, mem memory.Allocator) (arrow.Array, error) {
	dt, err := arrowType(v.Type)
	if err != nil {
		return nil, err
	}
	if v.Null || v.Type.ID == types.Null {
		return array.MakeArrayOfNull(mem, dt, n), nil
	}
	switch v.Type.ID {
	case types.Bool:
		buf := newBitmap(mem, n)
		if v.Bool {
			bitutil.SetBitsTo(buf.Bytes(), 0, int64(n), true)
		}
		return finish(dt, n, 0, nil, buf), nil
	case types.Int64, types.Timestamp, types.Date:
		buf, vals := newValues[int64](mem, n)
		for i := range vals {
			vals[i] = v.Int
		}
		return finish(dt, n, 0, nil, buf), nil
	case types.Float64:
		buf, vals := newValues[float64](mem, n)
		for i := range vals {
			vals[i] = v.Float
		}
		return finish(dt, n, 0, nil, buf), nil
	case types.Decimal:
		buf, vals := newValues[decimal128.Num](mem, n)
		d := v.Decimal()
		for i := range vals {
			vals[i] = d
		}
		return finish(dt, n, 0, nil, buf), nil
	case types.String:
		offs, o := newValues[int32](mem, n+1)
		for i := range o {
			o[i] = int32(i * len(v.Str))
		}
		data, d := newValues[uint8](mem, n*len(v.Str))
		// Fill by doubling: each copy repeats everything written so far.
		for k := copy(d, v.Str); k < len(d); k *= 2 {
			copy(d[k:], d[:k])
		}
		return finish(dt, n, 0, nil, offs, data), nil
	}
	return nil, fmt.Errorf("%w: no arrays of type %s", ErrBadExpression, v.Type)
}

// arrowType is types.Type.Arrow without its panic on an unknown type.
func arrowType(t types.Type) (arrow.DataType, error) {
	if t.ID > types.Date {
		return nil, fmt.Errorf("%w: unknown type %s", ErrBadExpression, t)
	}
	return t.Arrow(), nil
}
