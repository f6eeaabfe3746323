package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// A change in place (an UPDATE of one segment's row and of a row still in
// the log) rewrites only the segment that held the row and the log: the
// other segments stay the same files, and the rows are right before and
// after a restart. A changed key that collides with a row the change keeps
// is refused with 23505; one that comes back (an UPDATE of another column)
// is not.
func TestChangeRewritesOnlyTouchedSegments(t *testing.T) {
	dir := t.TempDir()
	s, _ := openStore(t, dir)
	s.Create("t1")
	var want []string
	for part := 0; part < 3; part++ {
		var items []string
		for i := part*10 + 1; i <= part*10+10; i++ {
			items = append(items, fmt.Sprintf("%d:r", i))
			want = append(want, fmt.Sprintf("%d|r", i))
		}
		insert(t, s, "t1", keyed, items...)
		foldLog(t, s, "t1")
	}
	insert(t, s, "t1", keyed, "31:log", "32:log")
	before := segmentFiles(t, s, "t1")
	if len(before) != 3 {
		t.Fatalf("segments %v, want 3", before)
	}

	tx, _ := s.Begin("t1", keyed)
	tx.Change()
	ids := scanRowIDs(t, s, "t1")
	del := int64s(ids[15], ids[31])
	if err := tx.Delete(del); err != nil {
		t.Fatal(err)
	}
	del.Release()
	r := rows(t, "31:new")
	if err := tx.Append(r); err != nil {
		t.Fatal(err)
	}
	r.Release()
	if n := tx.Deleted(); n != 2 {
		t.Errorf("Deleted = %d, want 2", n)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(r string) bool { return r == "15|r" })
	want = append(want, "31|new", "32|log")
	slices.Sort(want)
	equal(t, "after the change", scan(t, s, "t1", 2), want...)
	after := segmentFiles(t, s, "t1")
	kept := 0
	for _, f := range before {
		if slices.Contains(after, f) {
			kept++
		}
	}
	if kept != 2 {
		t.Errorf("segments before %v, after %v: %d kept, want the 2 without a changed row", before, after, kept)
	}
	s2, _ := openStore(t, dir)
	equal(t, "after a restart", scan(t, s2, "t1", 1), want...)

	// Key 5 again, without deleting the row that has it.
	tx, _ = s2.Begin("t1", keyed)
	tx.Change()
	ids = scanRowIDs(t, s2, "t1")
	del = int64s(ids[6])
	tx.Delete(del)
	del.Release()
	r = rows(t, "5:clash")
	tx.Append(r)
	r.Release()
	var ce *ConstraintError
	if err := tx.Commit(); !errors.As(err, &ce) || ce.Code != "23505" || ce.Detail != "Key (id)=(5) already exists." {
		t.Errorf("a changed key that clashes: %v", err)
	}
	equal(t, "after the refused change", scan(t, s2, "t1", 1), want...)
	// Key 5 comes back with another name.
	tx, _ = s2.Begin("t1", keyed)
	tx.Change()
	ids = scanRowIDs(t, s2, "t1")
	del = int64s(ids[5])
	tx.Delete(del)
	del.Release()
	r = rows(t, "5:renamed")
	tx.Append(r)
	r.Release()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(r string) bool { return r == "5|r" })
	want = append(want, "5|renamed")
	slices.Sort(want)
	equal(t, "after the key came back", scan(t, s2, "t1", 1), want...)
}

func segmentFiles(t *testing.T, s *Store, id string) []string {
	var segs []string
	for _, f := range files(t, s, id) {
		if strings.HasPrefix(f, "s-") {
			segs = append(segs, f)
		}
	}
	return segs
}

func int64s(vs ...int64) *array.Int64 {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(vs, nil)
	return b.NewInt64Array()
}

// scanRowIDs scans table id with its row-id column and returns the id of each
// key.
func scanRowIDs(t *testing.T, s *Store, id string) map[int64]int64 {
	t.Helper()
	withID := append(slices.Clone(schema), types.Field{Name: exec.RowIDColumn, Type: types.Int64Type})
	p, err := s.Pin(id)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	reg := exec.NewRegistry()
	Register(reg)
	out := map[int64]int64{}
	for i := 0; i < 2; i++ {
		src, err := reg.NewSource(exec.ConnectorSpec{Connector: Name, URL: p.URL, Schema: withID, Columns: []int{0, 2}})
		if err != nil {
			t.Fatal(err)
		}
		var c conntest.Collector
		if err := src.Open(context.Background(), conntest.TaskContext(t, memory.DefaultAllocator, i, 2)); err != nil {
			t.Fatal(err)
		}
		if err := src.Run(context.Background(), &c); err != nil {
			t.Fatal(err)
		}
		src.Close()
		for _, row := range c.Rows() {
			k, v, _ := strings.Cut(row, "|")
			kn, _ := strconv.ParseInt(k, 10, 64)
			vn, _ := strconv.ParseInt(v, 10, 64)
			if _, dup := out[kn]; dup {
				t.Fatalf("key %d read twice", kn)
			}
			out[kn] = vn
		}
		c.Release()
	}
	return out
}

// A sink's upsert that touches existing keys (an update of 15, a delete of
// 25, a new key 40) rewrites only the segments holding 15 and 25.
func TestUpsertRewritesOnlyTouchedSegments(t *testing.T) {
	s, _ := openStore(t, t.TempDir())
	s.Create("t1")
	var want []string
	for part := 0; part < 3; part++ {
		var items []string
		for i := part*10 + 1; i <= part*10+10; i++ {
			items = append(items, fmt.Sprintf("%d:r", i))
			want = append(want, fmt.Sprintf("%d|r", i))
		}
		insert(t, s, "t1", keyed, items...)
		foldLog(t, s, "t1")
	}
	before := segmentFiles(t, s, "t1")
	rec := rows(t, "15:new", "25:r", "40:added")
	defer rec.Release()
	changes := []exec.Batch{{Rec: rec, Ops: []exec.ChangeKind{exec.UpdateAfter, exec.Delete, exec.Insert}}}
	if err := s.applyChanges("t1", keyed, changes, "", 0); err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(r string) bool { return r == "15|r" || r == "25|r" })
	want = append(want, "15|new", "40|added")
	slices.Sort(want)
	equal(t, "after the upsert", scan(t, s, "t1", 1), want...)
	after := segmentFiles(t, s, "t1")
	if !slices.Contains(after, before[0]) || slices.Contains(after, before[1]) || slices.Contains(after, before[2]) {
		t.Errorf("segments before %v, after %v: want only the first kept", before, after)
	}
}
