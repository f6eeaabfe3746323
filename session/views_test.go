package session_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/vector"
	"github.com/hummer-db/hummer/session"
)

// TestViewOverStoredTablesCaughtUp: a SELECT right after CREATE VIEW over
// tables Hummer stores sees every row committed before it (the view's first
// checkpoint is triggered as its job starts, and the tables' scans let its
// barrier pass only after their snapshot), and later commits reach it. The
// sums are counted here from the rows inserted.
func TestViewOverStoredTablesCaughtUp(t *testing.T) {
	s := openServeEngine(t)
	mustRun(t, s, "CREATE TABLE t (k BIGINT, g BIGINT, v BIGINT)")
	const commits, rows = 20, 500
	var sums, counts [2]int64
	k := 0
	for range commits {
		var vals []string
		for range rows {
			vals = append(vals, fmt.Sprintf("(%d, %d, %d)", k, k%2, k*3))
			sums[k%2] += int64(k * 3)
			counts[k%2]++
			k++
		}
		mustRun(t, s, "INSERT INTO t VALUES "+strings.Join(vals, ", "))
	}
	want := func() string {
		return fmt.Sprintf("0|%d|%d\n1|%d|%d", counts[0], sums[0], counts[1], sums[1])
	}
	const view = "SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g"
	for i := range 3 {
		mustRun(t, s, "CREATE VIEW v AS "+view)
		if got := mustRun(t, s, "SELECT * FROM v ORDER BY g"); got != want() {
			t.Fatalf("SELECT right after CREATE VIEW (%d): %q, want %q", i, got, want())
		}
		mustRun(t, s, "DROP VIEW v")
	}
	mustRun(t, s, "CREATE VIEW v AS "+view)
	mustRun(t, s, fmt.Sprintf("INSERT INTO t VALUES (%d, 1, 7)", k))
	sums[1] += 7
	counts[1]++
	waitRows(t, s, "SELECT * FROM v ORDER BY g", want())
	mustRun(t, s, "DROP VIEW v")
}

// TestViewTakesDeletesRightAfterCreate: the view's scan reads the table's
// 20 commits in two shares, and a DELETE committed right after CREATE VIEW,
// of rows of both shares, reaches the view: it holds each row left once (a
// view of plain rows fails its job on a retraction of a row it does not
// hold). The order of the shares and the changes is held by
// connectors/table's TestFollowSplitsVersionBeforeChanges, which needs no
// race to fail. The rows left are counted here from those inserted.
func TestViewTakesDeletesRightAfterCreate(t *testing.T) {
	s := openServeEngine(t)
	mustRun(t, s, "SET parallelism = 2")
	mustRun(t, s, "CREATE TABLE t (k BIGINT, v BIGINT)")
	const commits, rows = 20, 300
	k := 0
	for range commits {
		var vals []string
		for range rows {
			vals = append(vals, fmt.Sprintf("(%d, %d)", k, k*7))
			k++
		}
		mustRun(t, s, "INSERT INTO t VALUES "+strings.Join(vals, ", "))
	}
	for round := range 3 {
		mustRun(t, s, "CREATE VIEW v AS SELECT k, v FROM t WHERE k % 3 = 0")
		mustRun(t, s, fmt.Sprintf("DELETE FROM t WHERE k %% 4 = %d", round))
		var n, sum int64
		for i := 0; i < k; i++ {
			if i%3 == 0 && i%4 > round {
				n++
				sum += int64(i * 7)
			}
		}
		waitRows(t, s, "SELECT count(*), sum(v) FROM v", fmt.Sprintf("%d|%d", n, sum))
		mustRun(t, s, "DROP VIEW v")
	}
}

// TestViewJobRecorded: a view over stored tables with a data directory is
// in the catalog with its job's record after CREATE VIEW (one save), so the
// view resumes with a reopened engine and goes on following its table; a
// second CREATE VIEW of the name fails and leaves the first view's job
// keeping it; DROP VIEW deletes the job's checkpoints, and after it a
// reopened engine resumes no job.
func TestViewJobRecorded(t *testing.T) {
	dir := t.TempDir()
	closeEngine, s := openServeEngineAt(t, dir)
	mustRun(t, s, "CREATE TABLE t (k BIGINT, v BIGINT)")
	mustRun(t, s, "INSERT INTO t VALUES (1, 10), (2, 20)")
	mustRun(t, s, "CREATE VIEW v AS SELECT count(*) AS n, sum(v) AS s FROM t")
	if _, err := run(s, "CREATE VIEW v AS SELECT k FROM t"); err == nil || !strings.Contains(err.Error(), `relation "v" already exists`) {
		t.Fatalf("a second view v: %v", err)
	}
	mustRun(t, s, "INSERT INTO t VALUES (3, 30)")
	waitRows(t, s, "SELECT * FROM v", "3|60")
	views := func(s *session.Session) int { return strings.Count(mustRun(t, s, "SHOW PROCESSLIST"), "CREATE VIEW v") }
	if n := views(s); n != 1 {
		t.Errorf("%d jobs keep view v, want 1", n)
	}
	closeEngine()

	closeEngine, s = openServeEngineAt(t, dir)
	mustRun(t, s, "INSERT INTO t VALUES (4, 40)")
	waitRows(t, s, "SELECT * FROM v", "4|100")
	if n := views(s); n != 1 {
		t.Errorf("reopened: %d jobs keep view v, want 1", n)
	}
	jobDirs := func() []string {
		ents, err := os.ReadDir(filepath.Join(dir, "checkpoints"))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	if n := len(jobDirs()); n != 1 {
		t.Fatalf("checkpoints of %d jobs (%v), want the view's", n, jobDirs())
	}
	mustRun(t, s, "DROP VIEW v")
	for deadline := time.Now().Add(10 * time.Second); len(jobDirs()) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("checkpoints of jobs %v left after DROP VIEW", jobDirs())
		}
		time.Sleep(10 * time.Millisecond) // the deletion runs after the statement
	}
	closeEngine()

	_, s = openServeEngineAt(t, dir)
	if n := views(s); n != 0 {
		t.Errorf("reopened after DROP VIEW: %d jobs of view v resumed", n)
	}
	if _, err := run(s, "SELECT * FROM v"); err == nil {
		t.Error("the dropped view v is there after a restart")
	}
}

// openServeEngine opens an engine configured as `hummer serve` configures
// it (cmd/hummer's openCluster): tables it stores follow their changes into
// views only with the connectors' Unbounded, Retracts and Upsert.
func openServeEngine(t *testing.T) *session.Session {
	t.Helper()
	_, s := openServeEngineAt(t, t.TempDir())
	return s
}

// openServeEngineAt is openServeEngine over data directory dir; the engine
// closes at the test's end, or before when the test calls close.
func openServeEngineAt(t *testing.T, dir string) (close func(), s *session.Session) {
	t.Helper()
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	reg := exec.NewRegistry()
	operators.Register(reg)
	tables := connectors.Register(reg)
	e, err := session.Open(session.Config{DataDir: dir, Registry: reg, Validate: connectors.Validate,
		Unbounded: connectors.Unbounded, EstimateRows: connectors.EstimateRows, EstimateDistinct: connectors.EstimateDistinct,
		Upsert: connectors.Upsert, Retracts: connectors.Retracts, SourceWatermarks: connectors.SourceWatermarks,
		Slots: 2, Alloc: mem, OnClose: tables.Close})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	close = func() {
		once.Do(func() {
			e.Close()
			mem.AssertSize(t, 0)
		})
	}
	t.Cleanup(close)
	return close, e.NewSession()
}
