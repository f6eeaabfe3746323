package table

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

var schema = types.Schema{{Name: "id", Type: types.Int64Type}, {Name: "name", Type: types.StringType}}

var keyed = Constraints{Table: "t", Schema: schema, Key: []int{0}}

// rows builds a batch of (id, name) rows from "1:a" items; "2:" is a NULL name.
func rows(t *testing.T, items ...string) arrow.RecordBatch {
	t.Helper()
	return rows2(items...)
}

// scan reads table id as parallelism subtasks would, through the registered
// source, and returns the rows sorted.
func scan(t *testing.T, s *Store, id string, parallelism int) []string {
	t.Helper()
	p, err := s.Pin(id)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	return scanURL(t, p.URL, parallelism)
}

func scanURL(t *testing.T, url string, parallelism int) []string {
	t.Helper()
	reg := exec.NewRegistry()
	Register(reg)
	var got []string
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for i := 0; i < parallelism; i++ {
		src, err := reg.NewSource(exec.ConnectorSpec{Connector: Name, URL: url, Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		var c conntest.Collector
		if err := src.Open(context.Background(), conntest.TaskContext(t, mem, i, parallelism)); err != nil {
			t.Fatal(err)
		}
		if err := src.Run(context.Background(), &c); err != nil {
			t.Fatal(err)
		}
		src.Close()
		got = append(got, c.Rows()...)
		c.Release()
	}
	slices.Sort(got)
	return got
}

// openStore opens a store that the test closes when it ends, so no
// background writer outlives it.
func openStore(t *testing.T, dir string) (*Store, error) {
	s, err := OpenStore(dir)
	if err == nil {
		t.Cleanup(s.Close)
	}
	return s, err
}

func insert(t *testing.T, s *Store, id string, c Constraints, items ...string) error {
	t.Helper()
	tx, err := s.Begin(id, c)
	if err != nil {
		t.Fatal(err)
	}
	rec := rows(t, items...)
	defer rec.Release()
	if err := tx.Append(rec); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func equal(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

func TestInsertScanAndConstraints(t *testing.T) {
	s, err := openStore(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create("t1"); err != nil {
		t.Fatal(err)
	}
	equal(t, "empty", scan(t, s, "t1", 1))
	if err := insert(t, s, "t1", keyed, "1:a", "2:b", "3:"); err != nil {
		t.Fatal(err)
	}
	equal(t, "after insert", scan(t, s, "t1", 2), "1|a", "2|b", "3|NULL")

	// A duplicate key, against the table or within the statement, fails the
	// whole statement with 23505; a NULL key with 23502.
	var ce *ConstraintError
	err = insert(t, s, "t1", keyed, "4:d", "2:x")
	if !errors.As(err, &ce) || ce.Code != "23505" || ce.Detail != "Key (id)=(2) already exists." {
		t.Errorf("duplicate key: %v", err)
	}
	err = insert(t, s, "t1", keyed, "5:e", "5:f")
	if !errors.As(err, &ce) || ce.Code != "23505" {
		t.Errorf("duplicate within a statement: %v", err)
	}
	err = insert(t, s, "t1", Constraints{Table: "t", Schema: schema, NotNull: []int{1}}, "6:")
	if !errors.As(err, &ce) || ce.Code != "23502" || !strings.Contains(err.Error(), `column "name" of relation "t"`) {
		t.Errorf("NULL in a NOT NULL column: %v", err)
	}
	equal(t, "after refused statements", scan(t, s, "t1", 1), "1|a", "2|b", "3|NULL")

	// The keys survive a reopen of the store: they are read back from the segments.
	s2, err := openStore(t, s.root)
	if err != nil {
		t.Fatal(err)
	}
	err = insert(t, s2, "t1", keyed, "1:z")
	if !errors.As(err, &ce) || ce.Code != "23505" {
		t.Errorf("duplicate after reopen: %v", err)
	}
	if err := insert(t, s2, "t1", keyed, "4:d"); err != nil {
		t.Fatal(err)
	}
	equal(t, "reopened", scan(t, s2, "t1", 3), "1|a", "2|b", "3|NULL", "4|d")
}

// A pinned version reads the same after later commits replace it, and its
// files go when it is released.
func TestSnapshotsAndReplace(t *testing.T) {
	s, err := openStore(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Create("t1")
	if err := insert(t, s, "t1", keyed, "1:a", "2:b"); err != nil {
		t.Fatal(err)
	}
	old, err := s.Pin("t1")
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := s.Begin("t1", keyed)
	tx.Replace()
	rec := rows(t, "2:b", "1:c") // a replacement may reuse its keys
	if err := tx.Append(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	equal(t, "current", scan(t, s, "t1", 1), "1|c", "2|b")
	equal(t, "pinned before the replace", scanURL(t, old.URL, 2), "1|a", "2|b")
	before := files(t, s, "t1")
	old.Release()
	after := files(t, s, "t1")
	if len(after) >= len(before) {
		t.Errorf("releasing the old version kept its files: %v, then %v", before, after)
	}
	equal(t, "after release", scan(t, s, "t1", 1), "1|c", "2|b")

	// A rolled-back Tx leaves nothing, not even its files.
	tx, _ = s.Begin("t1", keyed)
	rec = rows(t, "9:z")
	tx.Append(rec)
	rec.Release()
	tx.Rollback()
	equal(t, "rolled back", scan(t, s, "t1", 1), "1|c", "2|b")
	equal(t, "files after rollback", files(t, s, "t1"), after...)
}

// Many small INSERTs end up in few segments, with every row.
func TestSmallInsertsMerge(t *testing.T) {
	s, err := openStore(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Create("t1")
	var want []string
	for i := 1; i <= 3*mergeSmall; i++ {
		if err := insert(t, s, "t1", keyed, fmt.Sprintf("%d:r%d", i, i)); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%d|r%d", i, i))
	}
	slices.Sort(want)
	equal(t, "rows", scan(t, s, "t1", 2), want...)
	segs := 0
	for _, f := range files(t, s, "t1") {
		if strings.HasPrefix(f, "s-") {
			segs++
		}
	}
	if segs > mergeSmall+1 {
		t.Errorf("%d segments after %d single-row inserts", segs, 3*mergeSmall)
	}
	if n, _ := s.Rows("t1"); n != int64(3*mergeSmall) {
		t.Errorf("Rows = %d", n)
	}
}

// What a crash leaves (a segment no version names, a half-written version)
// is ignored and removed when the table is next opened.
func TestCrashLeftovers(t *testing.T) {
	dir := t.TempDir()
	s, _ := openStore(t, dir)
	s.Create("t1")
	if err := insert(t, s, "t1", keyed, "1:a"); err != nil {
		t.Fatal(err)
	}
	tdir := filepath.Join(dir, "t1")
	os.WriteFile(filepath.Join(tdir, segmentFile(99)), []byte("partial"), 0o644)
	os.WriteFile(filepath.Join(tdir, versionFile(3)+".tmp"), []byte("{"), 0o644)
	s2, _ := openStore(t, dir)
	equal(t, "after a crash", scan(t, s2, "t1", 1), "1|a")
	for _, f := range files(t, s2, "t1") {
		if strings.Contains(f, "99") || strings.HasSuffix(f, ".tmp") {
			t.Errorf("leftover %s kept", f)
		}
	}
	if err := insert(t, s2, "t1", keyed, "2:b"); err != nil {
		t.Fatal(err)
	}
	equal(t, "written after", scan(t, s2, "t1", 1), "1|a", "2|b")
}

// A table dropped while a scan has it pinned stays readable until released.
func TestDropWhilePinned(t *testing.T) {
	dir := t.TempDir()
	s, _ := openStore(t, dir)
	s.Create("t1")
	insert(t, s, "t1", keyed, "1:a")
	p, _ := s.Pin("t1")
	if err := s.Drop("t1"); err != nil {
		t.Fatal(err)
	}
	equal(t, "pinned", scanURL(t, p.URL, 1), "1|a")
	p.Release()
	if _, err := os.Stat(filepath.Join(dir, "t1")); !os.IsNotExist(err) {
		t.Errorf("dropped table's directory: %v", err)
	}
	s.Create("t2")
	os.Mkdir(filepath.Join(dir, "gone"), 0o755)
	if err := s.Keep(map[string]bool{"t2": true}); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "t2" {
		t.Errorf("after Keep: %v", ents)
	}
}

func files(t *testing.T, s *Store, id string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(s.root, id))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// Concurrent single-row INSERTs commit in groups: every acknowledged row is
// there once, a key inserted by several writers is there once (the others
// get 23505), and a writer that replaces the table meanwhile (rewriting it
// as it is, as an UPDATE that changes nothing) loses none of them.
//
// Again with the rewrites as changes in place (every row deleted by its row
// id and put back), while the log is folded every few records.
func TestGroupCommit(t *testing.T) {
	t.Run("replace", func(t *testing.T) { groupCommit(t, false) })
	t.Run("change, folding", func(t *testing.T) { groupCommit(t, true) })
}

func groupCommit(t *testing.T, change bool) {
	s, err := openStore(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if change {
		s.foldRecords = 3
	}
	s.Create("t1")
	const writers, each = 16, 30
	var wg sync.WaitGroup
	var dupOK, dupRefused atomic.Int64
	errs := make(chan error, writers+1)
	stop := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := insertRows(s, fmt.Sprintf("%d:w%d", 1+w*1000+i, w)); err != nil {
					errs <- err
					return
				}
			}
			var ce *ConstraintError
			switch err := insertRows(s, "0:dup"); {
			case err == nil:
				dupOK.Add(1)
			case errors.As(err, &ce) && ce.Code == "23505":
				dupRefused.Add(1)
			default:
				errs <- err
			}
		}()
	}
	var rewrites atomic.Int64
	wg.Add(1)
	go func() { // replaces the table by its own rows, over and over
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			tx, err := s.Begin("t1", keyed)
			if err != nil {
				errs <- err
				return
			}
			if change {
				tx.Change()
				var ids []int64
				for _, id := range scanRowIDs(t, s, "t1") {
					ids = append(ids, id)
				}
				del := int64s(ids...)
				err = tx.Delete(del)
				del.Release()
			} else {
				tx.Replace()
			}
			p, _ := s.Pin("t1")
			rows := scanURL(t, p.URL, 1)
			p.Release()
			if len(rows) > 0 && err == nil {
				items := make([]string, len(rows))
				for i, r := range rows {
					items[i] = strings.Replace(r, "|", ":", 1)
				}
				rec := rows2(items...)
				err = tx.Append(rec)
				rec.Release()
			}
			if err == nil {
				err = tx.Commit()
			} else {
				tx.Rollback()
			}
			if err != nil {
				errs <- err
				return
			}
			rewrites.Add(1)
		}
	}()
	deadline := time.Now().Add(time.Minute)
	for dupOK.Load()+dupRefused.Load() < writers && len(errs) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if dupOK.Load() != 1 || dupRefused.Load() != writers-1 {
		t.Errorf("key 0: %d inserts succeeded and %d were refused, want 1 and %d", dupOK.Load(), dupRefused.Load(), writers-1)
	}
	if rewrites.Load() == 0 {
		t.Errorf("no rewrite ran among the inserts")
	}
	got := scan(t, s, "t1", 2)
	if len(got) != writers*each+1 {
		t.Errorf("%d rows after %d inserts and a duplicate (%d rewrites meanwhile)", len(got), writers*each, rewrites.Load())
	}
	seen := map[string]bool{}
	for _, r := range got {
		id, _, _ := strings.Cut(r, "|")
		if seen[id] {
			t.Errorf("key %s twice", id)
		}
		seen[id] = true
	}
}

// insertRows inserts "id:name" rows in one Tx, without testing.T (for
// goroutines).
func insertRows(s *Store, items ...string) error {
	tx, err := s.Begin("t1", keyed)
	if err != nil {
		return err
	}
	rec := rows2(items...)
	defer rec.Release()
	if err := tx.Append(rec); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// rows2 is rows without testing.T (for goroutines); it panics on a bad item.
func rows2(items ...string) arrow.RecordBatch {
	var sb strings.Builder
	sb.WriteString("[")
	for i, it := range items {
		id, name, _ := strings.Cut(it, ":")
		if i > 0 {
			sb.WriteString(",")
		}
		n := "null"
		if name != "" {
			n = fmt.Sprintf("%q", name)
		}
		fmt.Fprintf(&sb, `{"id": %s, "name": %s}`, id, n)
	}
	sb.WriteString("]")
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema.Arrow(), strings.NewReader(sb.String()))
	if err != nil {
		panic(err)
	}
	return rec
}

// A scan skips the segments whose value ranges its filter rules out: three
// INSERTs of ten ids each (each folded from the log into a segment of its
// own), then a lookup of id 15 reads only the second's
// rows; conditions it cannot judge by ranges read everything.
func TestPruneSegments(t *testing.T) {
	s, err := openStore(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Create("t1")
	for b := 0; b < 3; b++ {
		var items []string
		for i := 1; i <= 10; i++ {
			items = append(items, fmt.Sprintf("%d:r", b*10+i))
		}
		if err := insert(t, s, "t1", keyed, items...); err != nil {
			t.Fatal(err)
		}
		foldLog(t, s, "t1")
	}
	id := expr.Column(0, types.Int64Type, "id")
	lit := func(v int64) *expr.Expr { return expr.Literal(types.IntValue(v)) }
	count := func(f *expr.Expr) int {
		p, _ := s.Pin("t1")
		defer p.Release()
		reg := exec.NewRegistry()
		Register(reg)
		src, err := reg.NewSource(exec.ConnectorSpec{Connector: Name, URL: p.URL, Schema: schema, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		var c conntest.Collector
		if err := src.Open(context.Background(), conntest.TaskContext(t, memory.DefaultAllocator, 0, 1)); err != nil {
			t.Fatal(err)
		}
		if err := src.Run(context.Background(), &c); err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		return c.NumRows()
	}
	for _, c := range []struct {
		what string
		f    *expr.Expr
		want int
	}{
		{"id = 15", expr.Call("=", types.BoolType, id, lit(15)), 10},
		{"15 = id", expr.Call("=", types.BoolType, lit(15), id), 10},
		{"id = 99", expr.Call("=", types.BoolType, id, lit(99)), 0},
		{"id > 20", expr.Call(">", types.BoolType, id, lit(20)), 10},
		{"id >= 10 AND id < 21", expr.Call("and", types.BoolType, expr.Call(">=", types.BoolType, id, lit(10)), expr.Call("<", types.BoolType, id, lit(21))), 20},
		{"21 > id", expr.Call(">", types.BoolType, lit(21), id), 20},
		{"id = 15 OR id = 25", expr.Call("or", types.BoolType, expr.Call("=", types.BoolType, id, lit(15)), expr.Call("=", types.BoolType, id, lit(25))), 30},
		{"no filter", nil, 30},
	} {
		if got := count(c.f); got != c.want {
			t.Errorf("%s: %d rows read, want %d", c.what, got, c.want)
		}
	}
}

// foldLog folds table id's log into segments.
func foldLog(t *testing.T, s *Store, id string) {
	t.Helper()
	ts, err := s.table(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.fold(s); err != nil {
		t.Fatal(err)
	}
}
