package file

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// TestEncodeDeclaredTypes: a real is written with a float4's digits and a
// character(n) padded to n, in text and JSON, as PostgreSQL's COPY and
// to_json write them (0.1 and "ab "), not as the double and the
// unpadded text that hold them.
func TestEncodeDeclaredTypes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	fb := array.NewFloat64Builder(mem)
	fb.Append(float64(float32(0.1)))
	f := fb.NewArray()
	fb.Release()
	defer f.Release()
	sb := array.NewStringBuilder(mem)
	sb.Append("ab")
	s := sb.NewArray()
	sb.Release()
	defer s.Release()
	for _, c := range []struct{ got, want string }{
		{string(appendText(nil, f, types.Float4Type, 0)), "0.1"},
		{string(appendJSONValue(nil, f, types.Float4Type, 0)), "0.1"},
		{string(appendText(nil, f, types.Float64Type, 0)), "0.10000000149011612"},
		{string(appendText(nil, s, types.BpcharType(3), 0)), "ab "},
		{string(appendJSONValue(nil, s, types.BpcharType(3), 0)), `"ab "`},
		{string(appendJSONValue(nil, s, types.VarcharType(3), 0)), `"ab"`},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}
