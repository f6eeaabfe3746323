package state

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec/internal/testkit"
)

// TestEncodeSlicedText: keys of a text column (with NULLs and empty
// strings) and a bigint, encoded from slices of arrays, whose offsets and
// bytes do not start at 0, equal those encoded from copies that start
// there, and decode to the slices' values.
func TestEncodeSlicedText(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	sb := array.NewStringBuilder(mem)
	ib := array.NewInt64Builder(mem)
	for i := range 100 {
		switch i % 9 {
		case 0:
			sb.AppendNull()
		case 1:
			sb.Append("")
		default:
			sb.Append(fmt.Sprintf("value %d", i*i))
		}
		ib.Append(int64(i))
	}
	str, num := sb.NewArray(), ib.NewArray()
	sb.Release()
	ib.Release()
	defer str.Release()
	defer num.Release()
	for _, r := range [][2]int64{{0, 100}, {7, 90}, {40, 41}, {50, 50}} {
		ss, sn := array.NewSlice(str, r[0], r[1]), array.NewSlice(num, r[0], r[1])
		n := int(r[1] - r[0])
		// Copies starting at 0.
		cb := array.NewStringBuilder(mem)
		for i := range n {
			if ss.IsNull(i) {
				cb.AppendNull()
			} else {
				cb.Append(ss.(*array.String).Value(i))
			}
		}
		cs := cb.NewArray()
		cb.Release()
		var sliced, copied RowKeys
		if err := sliced.Encode([]arrow.Array{ss, sn}, nil, n); err != nil {
			t.Fatal(err)
		}
		if err := copied.Encode([]arrow.Array{cs, sn}, nil, n); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sliced.offs[:n+1], copied.offs[:n+1]) || !bytes.Equal(sliced.data, copied.data) {
			t.Fatalf("rows %v: sliced keys %v %q, copied %v %q", r, sliced.offs[:n+1], sliced.data, copied.offs[:n+1], copied.data)
		}
		tb := NewKeyTable()
		gids := make([]uint32, n)
		tb.InsertRows(&sliced, gids)
		kc, err := tb.DecodeKeys(mem, []arrow.DataType{arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64}, GroupRange(0, tb.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if tb.Len() != n || !array.Equal(kc[0], ss) || !array.Equal(kc[1], sn) {
			t.Fatalf("rows %v: decoded %v %v, want %v %v", r, kc[0], kc[1], ss, sn)
		}
		for _, a := range append(kc, ss, sn, cs) {
			a.Release()
		}
		tb.Release()
	}
}
