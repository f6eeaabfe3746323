package records

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// TestBlockNarrowTypes: a block's columns of declared widths and lengths
// (smallint, integer, real, varchar(n), char(n)) take and refuse exactly
// the fields the row-at-a-time parser does (parseValue, whose range and
// length checks the wire tests hold to PostgreSQL's), whether the query
// reads the column (ParseColumn) or not (ValidateColumn); the fast paths
// of the holding types know no widths.
func TestBlockNarrowTypes(t *testing.T) {
	fields := [][]byte{
		[]byte("1"), []byte("32767"), []byte("32768"), []byte("-32769"), []byte("2147483647"),
		[]byte("2147483648"), []byte("12345678"), []byte("abc"), []byte("abcd"), []byte("ab"),
		[]byte("3.5e38"), []byte("3.5e39"), []byte("héllo"), []byte("hé"), nil,
	}
	ascii := make([]bool, len(fields))
	for r, f := range fields {
		ascii[r] = true
		for _, c := range f {
			if c >= 0x80 {
				ascii[r] = false
			}
		}
	}
	tys := []types.Type{types.Int2Type, types.Int4Type, types.Float4Type, types.VarcharType(3), types.BpcharType(3)}
	for _, ty := range tys {
		var want []bool // per field: the row-at-a-time parser refuses it
		refused := 0
		for _, f := range fields {
			var v value
			bad := f != nil && parseValue(ty, f, &v, nil) != nil
			want = append(want, bad)
			if bad {
				refused++
			}
		}
		if refused == 0 || refused == len(fields)-1 {
			t.Fatalf("%v: the parser refuses %d of %d fields: a test that cannot tell", ty, refused, len(fields))
		}
		bb := NewBuilder(memory.NewGoAllocator(), types.Schema{{Name: "c", Type: ty}})
		parsed := make([]error, len(fields))
		bb.ParseColumn(0, fields, ascii, parsed)
		bb.Release()
		validated := make([]error, len(fields))
		ValidateColumn(types.Field{Name: "c", Type: ty}, fields, ascii, validated)
		for r, f := range fields {
			if got := parsed[r] != nil; got != want[r] {
				t.Errorf("ParseColumn(%v, %q): refused %v, the row-at-a-time parser %v (%v)", ty, f, got, want[r], parsed[r])
			}
			if got := validated[r] != nil; got != want[r] {
				t.Errorf("ValidateColumn(%v, %q): refused %v, the row-at-a-time parser %v (%v)", ty, f, got, want[r], validated[r])
			}
		}
	}
}
