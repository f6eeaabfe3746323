package table

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Small INSERTs commit to the log: a scan sees their rows, a version pinned
// before one does not, and a store opened again on the directory (as after a
// kill -9) has every committed row and key, and none of a record a crash
// cut short.
func TestLogCommitAndRecover(t *testing.T) {
	dir := t.TempDir()
	s, _ := openStore(t, dir)
	s.Create("t1")
	if err := insert(t, s, "t1", keyed, "1:a", "2:b"); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Pin("t1")
	defer before.Release()
	if err := insert(t, s, "t1", keyed, "3:c"); err != nil {
		t.Fatal(err)
	}
	for _, f := range files(t, s, "t1") {
		if strings.HasPrefix(f, "s-") {
			t.Errorf("a small insert wrote segment %s", f)
		}
	}
	equal(t, "log rows", scan(t, s, "t1", 2), "1|a", "2|b", "3|c")
	equal(t, "pinned before", scanURL(t, before.URL, 1), "1|a", "2|b")
	if n, _ := s.Rows("t1"); n != 3 {
		t.Errorf("Rows = %d, want 3", n)
	}

	s2, _ := openStore(t, dir)
	equal(t, "after a restart", scan(t, s2, "t1", 1), "1|a", "2|b", "3|c")
	var ce *ConstraintError
	if err := insert(t, s2, "t1", keyed, "3:again"); !errors.As(err, &ce) || ce.Code != "23505" {
		t.Errorf("a logged key inserted again after a restart: %v", err)
	}
	if err := insert(t, s2, "t1", keyed, "4:d"); err != nil {
		t.Fatal(err)
	}
	// A crash in the middle of appending the next record: its first bytes
	// are in the log, the rest is not.
	ts, _ := s2.table("t1")
	log := filepath.Join(ts.dir, ts.current.Log)
	data, _ := os.ReadFile(log)
	if int64(len(data)) <= ts.current.logEnd {
		t.Errorf("the log is %d bytes, its records %d: not zero-filled past them", len(data), ts.current.logEnd)
	}
	whole := data[:ts.current.logEnd]
	rec, _ := encodeLogRecord(ts.current.Version+1, rows(t, "5:e"))
	os.WriteFile(log, append(append([]byte{}, whole...), rec[:len(rec)-3]...), 0o644)
	s3, _ := openStore(t, dir)
	equal(t, "after a torn record", scan(t, s3, "t1", 1), "1|a", "2|b", "3|c", "4|d")
	if st, _ := os.Stat(log); st.Size() != int64(len(whole)) {
		t.Errorf("the log is %d bytes after recovery, want the %d of its whole records", st.Size(), len(whole))
	}
	if err := insert(t, s3, "t1", keyed, "5:e"); err != nil {
		t.Fatal(err)
	}
	s4, _ := openStore(t, dir)
	equal(t, "written after the cut", scan(t, s4, "t1", 1), "1|a", "2|b", "3|c", "4|d", "5|e")
}

// A statement that replaces the table takes the log's rows with it: the
// version it commits starts the log at its end, so that a restart neither
// loses the rows logged after it nor brings back those logged before.
func TestReplaceAfterLog(t *testing.T) {
	dir := t.TempDir()
	s, _ := openStore(t, dir)
	s.Create("t1")
	insert(t, s, "t1", keyed, "1:a")
	insert(t, s, "t1", keyed, "2:b")
	tx, _ := s.Begin("t1", keyed)
	tx.Replace()
	r := rows(t, "2:B")
	if err := tx.Append(r); err != nil {
		t.Fatal(err)
	}
	r.Release()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := insert(t, s, "t1", keyed, "1:again"); err != nil {
		t.Fatalf("the key the replace removed: %v", err)
	}
	equal(t, "after the replace", scan(t, s, "t1", 1), "1|again", "2|B")
	s2, _ := openStore(t, dir)
	equal(t, "after a restart", scan(t, s2, "t1", 1), "1|again", "2|B")
}

// When the log has foldRecords records, the next group's writer folds it
// into a segment in the background; a version pinned before the fold still
// reads the old log, which goes when it is released.
func TestFoldLog(t *testing.T) {
	dir := t.TempDir()
	s, _ := openStore(t, dir)
	s.foldRecords = 8
	s.Create("t1")
	var want []string
	for i := 1; i <= 5; i++ {
		insert(t, s, "t1", keyed, fmt.Sprintf("%d:r", i))
		want = append(want, fmt.Sprintf("%d|r", i))
	}
	first := slices.Clone(want)
	pinned, _ := s.Pin("t1")
	ts, _ := s.table("t1")
	oldLog := ts.current.Log
	for i := 6; i <= 20; i++ {
		insert(t, s, "t1", keyed, fmt.Sprintf("%d:r", i))
		want = append(want, fmt.Sprintf("%d|r", i))
	}
	slices.Sort(want)
	deadline := time.Now().Add(30 * time.Second)
	for {
		fs := files(t, s, "t1")
		if slices.ContainsFunc(fs, func(f string) bool { return strings.HasPrefix(f, "s-") }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fold after %d logged inserts: %v", 20, fs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	equal(t, "after the fold", scan(t, s, "t1", 2), want...)
	equal(t, "pinned before the fold", scanURL(t, pinned.URL, 1), first...)
	foldLog(t, s, "t1") // what is left in the log
	if _, err := os.Stat(filepath.Join(ts.dir, oldLog)); err != nil {
		t.Errorf("the old log went while pinned: %v", err)
	}
	pinned.Release()
	if _, err := os.Stat(filepath.Join(ts.dir, oldLog)); !os.IsNotExist(err) {
		t.Errorf("the old log stays after its last pin: %v", err)
	}
	// The second store opens a quiet directory, as one store per data
	// directory does: no fold of the first one's in flight (a fold that
	// finds the writer lock taken leaves the log as it is, so fold until
	// the log is empty; then a background fold has nothing to do).
	deadline = time.Now().Add(30 * time.Second)
	for {
		ts.writer.Lock()
		ts.waitGroups()
		ts.mu.Lock()
		n := ts.current.logRecords
		ts.mu.Unlock()
		ts.writer.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log still holds %d records", n)
		}
		foldLog(t, s, "t1")
	}
	s2, _ := openStore(t, dir)
	equal(t, "after a restart", scan(t, s2, "t1", 1), want...)
	if n, _ := s2.Rows("t1"); n != 20 {
		t.Errorf("Rows = %d after the restart, want 20", n)
	}
}

// A table written before the log (a version file without one) gets a log
// when loaded, and takes small INSERTs into it.
func TestTableWithoutLog(t *testing.T) {
	dir := t.TempDir()
	s, _ := openStore(t, dir)
	s.Create("t1")
	tdir := filepath.Join(dir, "t1")
	os.Remove(filepath.Join(tdir, logFile(1)))
	os.WriteFile(filepath.Join(tdir, versionFile(2)), []byte(`{"version":2,"segments":[]}`), 0o644)
	s2, _ := openStore(t, dir)
	if err := insert(t, s2, "t1", keyed, "1:a"); err != nil {
		t.Fatal(err)
	}
	s3, _ := openStore(t, dir)
	equal(t, "after a restart", scan(t, s3, "t1", 1), "1|a")
}
