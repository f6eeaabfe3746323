package table

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// writeSegment writes one record batch of the given JSON rows as an Arrow IPC
// file at path: a new file renamed over any old one, as segment files are
// never written in place.
func writeSegment(t *testing.T, path string, schema *arrow.Schema, rows string) {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	f, err := os.Create(path + ".tmp")
	if err != nil {
		t.Fatal(err)
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema))
	if err == nil {
		err = w.Write(rec)
	}
	if err == nil {
		err = w.Close()
	}
	if err2 := f.Close(); err == nil {
		err = err2
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// viewColumns reads every column of path's first batch through the cache, as
// a scan does, and returns them as JSON with the mapping.
func viewColumns(t *testing.T, c *mapCache, path string) ([]arrow.Array, *mapping) {
	t.Helper()
	m, err := c.acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.release()
	r, err := ipc.NewMappedFileReader(m.data)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec, err := r.RecordBatchAt(0)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	var cols []arrow.Array
	for _, col := range rec.Columns() {
		cols = append(cols, m.view(memory.DefaultAllocator, col))
	}
	return cols, m
}

func columnsJSON(t *testing.T, cols []arrow.Array) string {
	t.Helper()
	var parts []string
	for _, c := range cols {
		b, err := c.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, string(b))
	}
	return strings.Join(parts, " ")
}

// TestMapCache: a scan's views of a segment read its rows, and keep the file
// mapped after the scan and after the cache let go of it, until the last is
// released; a second scan finds the mapping cached; a file replaced or
// deleted is mapped afresh or let go of.
func TestMapCache(t *testing.T) {
	dir := t.TempDir()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 15, Scale: 2}, Nullable: true},
	}, nil)
	a, b := filepath.Join(dir, "a.arrow"), filepath.Join(dir, "b.arrow")
	writeSegment(t, a, schema, `[{"k": 1, "s": "one", "d": "1.50"}, {"k": null, "s": null, "d": null}, {"k": 3, "s": "three", "d": "-2.25"}]`)
	writeSegment(t, b, schema, `[{"k": 7, "s": "seven", "d": "7.00"}]`)
	const wantA = `[1,null,3] ["one",null,"three"] ["1.5",null,"-2.25"]`

	c := &mapCache{files: map[string]*mapping{}, budget: 1 << 30}
	cols, m := viewColumns(t, c, a)
	if got := columnsJSON(t, cols); got != wantA {
		t.Fatalf("a: %s, want %s", got, wantA)
	}
	// The cache's reference and one per buffer of the views: k and d have a
	// validity bitmap and values, s a validity bitmap, offsets and bytes.
	if got := m.refs.Load(); got != 1+2+3+2 {
		t.Errorf("a mapped with %d references, want 8", got)
	}
	again, m2 := viewColumns(t, c, a)
	if m2 != m {
		t.Errorf("a second scan mapped a again")
	}
	releaseArrays(again)

	// A budget that holds one file: mapping b lets go of a, which its views
	// keep mapped.
	c.budget = 1
	colsB, mb := viewColumns(t, c, b)
	if c.files[a] != nil || c.files[b] != mb {
		t.Errorf("over budget the cache kept %v", c.files)
	}
	if got := columnsJSON(t, cols); got != wantA {
		t.Fatalf("a after the cache let go of it: %s, want %s", got, wantA)
	}
	releaseArrays(cols)
	if got := m.refs.Load(); got != 0 {
		t.Errorf("a has %d references after its views' release, want 0 (unmapped)", got)
	}

	// b replaced: mapped afresh, its new rows read; the old mapping goes
	// once its views do.
	c.budget = 1 << 30
	writeSegment(t, b, schema, `[{"k": 8, "s": "eight", "d": "8.00"}, {"k": 9, "s": "nine", "d": "9.00"}]`)
	colsB2, mb2 := viewColumns(t, c, b)
	if mb2 == mb {
		t.Errorf("a replaced b was read from its old mapping")
	}
	if got, want := columnsJSON(t, colsB2), `[8,9] ["eight","nine"] ["8","9"]`; got != want {
		t.Errorf("b replaced: %s, want %s", got, want)
	}
	if got, want := columnsJSON(t, colsB), `[7] ["seven"] ["7"]`; got != want {
		t.Errorf("b's old views: %s, want %s", got, want)
	}
	releaseArrays(colsB)
	releaseArrays(colsB2)
	if got := mb.refs.Load(); got != 0 {
		t.Errorf("b's old mapping has %d references, want 0", got)
	}

	// b deleted: the next miss (a, mapped again) lets go of it.
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	colsA, _ := viewColumns(t, c, a)
	releaseArrays(colsA)
	if c.files[b] != nil || mb2.refs.Load() != 0 {
		t.Errorf("deleted b still mapped (%d references)", mb2.refs.Load())
	}

	// The store forgets the files it removes, by path or by directory.
	colsA, ma := viewColumns(t, c, a)
	c.forget("", filepath.Join(dir, "other.arrow"))
	if c.files[a] != ma {
		t.Errorf("forgetting another file let go of a")
	}
	c.forget(dir)
	if len(c.files) != 0 {
		t.Errorf("after forgetting its directory the cache holds %v", c.files)
	}
	if got := columnsJSON(t, colsA); got != wantA {
		t.Errorf("a's views after the cache forgot it: %s, want %s", got, wantA)
	}
	releaseArrays(colsA)
	if got := ma.refs.Load(); got != 0 {
		t.Errorf("a forgotten has %d references after its views' release, want 0", got)
	}
}

func releaseArrays(arrs []arrow.Array) {
	for _, a := range arrs {
		a.Release()
	}
}
