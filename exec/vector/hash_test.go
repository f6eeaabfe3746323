package vector

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// exactStrings builds a text column whose value bytes are a Go slice of exactly
// their length: no padding after the last value, so HashRows cannot read past it
// and must take its slow path there.
func exactStrings(vals []string) *array.String {
	offs := make([]int32, 0, len(vals)+1)
	var data []byte
	offs = append(offs, 0)
	for _, v := range vals {
		data = append(data, v...)
		offs = append(offs, int32(len(data)))
	}
	data = data[:len(data):len(data)]
	ob := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs))
	db := memory.NewBufferBytes(data)
	d := array.NewData(arrow.BinaryTypes.String, len(vals), []*memory.Buffer{nil, ob, db}, nil, 0, 0)
	defer d.Release()
	return array.NewStringData(d)
}

func hashColumn(t *testing.T, col arrow.Array) []uint64 {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: col.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
	defer rec.Release()
	h := make([]uint64, col.Len())
	if err := HashRows(rec, []int{0}, h); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHashRowsStringsAgree checks that a text value hashes the same wherever it
// sits: in a padded Arrow buffer, where the short-value path loads 16 bytes at
// once, at the very end of an unpadded one, where it cannot, and in a slice of
// a column. Two subtasks that disagreed would send one key to two places.
func TestHashRowsStringsAgree(t *testing.T) {
	var vals []string
	for n := range 40 { // every length of the short path, and longer
		v := make([]byte, n)
		for i := range v {
			v[i] = byte('a' + (n*7+i)%26)
		}
		vals = append(vals, string(v))
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := array.NewStringBuilder(mem)
	b.AppendValues(vals, nil)
	padded := b.NewArray()
	b.Release()
	defer padded.Release()
	want := hashColumn(t, padded)

	seen := map[uint64]string{}
	for i, v := range vals {
		if other, ok := seen[want[i]]; ok {
			t.Errorf("%q and %q hash alike", v, other)
		}
		seen[want[i]] = v
		// Alone in an unpadded buffer: the value is its last bytes.
		alone := exactStrings([]string{v})
		if got := hashColumn(t, alone)[0]; got != want[i] {
			t.Errorf("%q (%d bytes): %x at the end of an unpadded buffer, %x in a padded one", v, len(v), got, want[i])
		}
		alone.Release()
		// A slice of the column that starts at the value.
		sl := array.NewSlice(padded, int64(i), int64(len(vals)))
		if got := hashColumn(t, sl)[0]; got != want[i] {
			t.Errorf("%q: %x in a slice, %x in the column", v, got, want[i])
		}
		sl.Release()
	}
}

// TestHashRowsSpreadsWords checks that the hashes partition distinct words
// about evenly, as an exchange's subtasks need.
func TestHashRowsSpreadsWords(t *testing.T) {
	var vals []string
	for i := range 20000 {
		vals = append(vals, fmt.Sprintf("w%d", i))
	}
	col := exactStrings(vals)
	defer col.Release()
	h := hashColumn(t, col)
	for _, parts := range []uint64{2, 3, 8} {
		counts := make([]int, parts)
		for _, v := range h {
			counts[v%parts]++
		}
		even := len(vals) / int(parts)
		for p, c := range counts {
			if c < even*9/10 || c > even*11/10 {
				t.Errorf("%d parts: part %d holds %d of %d words, want about %d", parts, p, c, len(vals), even)
			}
		}
	}
}
