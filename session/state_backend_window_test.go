package session_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/vector"
	"github.com/hummer-db/hummer/session"
)

// TestStateBackendWindows: windowed GROUP BYs over the bounded Nexmark bids
// (a source watermark 4 seconds behind), a tumbling window per auction and a
// hopping one per bidder, and a window join of the bids with themselves per
// tumbling window and auction, under SET state_backend = 'disk' on TaskManagers
// whose --state-memory is the smallest a slot gets (1 MiB, a 256 KiB cache,
// which a window of thousands of groups outgrows), give the rows they give
// with 'memory' (whose window aggregation TestWindowFormsVsPostgres holds
// against PostgreSQL 15), and the tumbling windows' counts add up to the
// bids counted without windows. EXPLAIN says the final phase (the join) is on disk.
func TestStateBackendWindows(t *testing.T) {
	s := openStateEngine(t)
	mustRun(t, s, `CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, url TEXT, dateTime TIMESTAMP, extra TEXT,
		WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND)
		ENGINE=nexmark CONNECTION='nexmark://bid?events=100000&rate=0&event_rate=2000'`)
	queries := []string{
		`SELECT auction, window_start, window_end, count(*), sum(price), max(price), min(channel)
			FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
			GROUP BY auction, window_start, window_end`,
		`SELECT bidder, window_end, count(*), avg(price)
			FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
			GROUP BY bidder, window_start, window_end`,
		`SELECT a.auction, a.bidder, a.window_end, a.price, b.bidder, b.price
			FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND)) a
			JOIN TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND)) b
			ON a.auction = b.auction AND a.dateTime = b.dateTime AND a.window_end = b.window_end`,
	}
	got := sameOnBackends(t, s, queries, []string{"window_agg final", "window_agg final", "window_join"})
	total := 0
	for _, r := range got[0] {
		n, err := strconv.Atoi(strings.Split(r, "|")[3])
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if bids := mustRun(t, s, "SELECT count(*) FROM bid"); strconv.Itoa(total) != bids {
		t.Errorf("the windows count %d bids, the table has %s", total, bids)
	}
}

// TestStateBackendStreams: over Nexmark bids planned as a stream
// (continuous=true; the source still ends, and so do the jobs), an interval
// join of each bid with the bids of its auction up to 2 seconds after it,
// session windows per bidder (Nexmark q11's, as the SESSION table
// function), and each auction's first bid (deduplication at the watermark),
// each INSERTed into a memory table, under SET state_backend =
// 'disk' with 1 MiB of --state-memory give the rows they give with 'memory'
// (the interval join's are held against a Go reference by
// TestIntervalJoinRandom, the sessions' by TestSessionAggDiskLarge and
// cmd/hummer's Nexmark q11 against PostgreSQL 15, the first bids' by
// TestTopNFirstRandom). EXPLAIN says each is on disk.
func TestStateBackendStreams(t *testing.T) {
	if raceDetector {
		t.Skip("millions of joined rows take over ten minutes under the race detector; the operators' random tests run the same code under it")
	}
	s := openStateEngine(t)
	mustRun(t, s, `CREATE TABLE bids (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP,
		WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND)
		ENGINE=nexmark CONNECTION='nexmark://bid?events=40000&rate=0&event_rate=2000&continuous=true'`)
	// One task a stage: an auction's first bid among bids of the same time
	// is the first to arrive, which two source tasks leave to chance.
	mustRun(t, s, "SET parallelism = 1")
	// min is the fewest rows out a test of the backend wants: the sessions'
	// state is the bids of open sessions, more than their rows out.
	queries := []struct {
		cols, query, onDisk string
		min                 int
	}{
		{"a BIGINT, ab BIGINT, at TIMESTAMP, ap BIGINT, bb BIGINT, bt TIMESTAMP, bp BIGINT",
			`SELECT a.auction, a.bidder, a.dateTime, a.price, b.bidder, b.dateTime, b.price
			FROM bids a JOIN bids b
			ON a.auction = b.auction AND a.dateTime BETWEEN b.dateTime - INTERVAL '2' SECOND AND b.dateTime`, "interval_join", 1000},
		{"bidder BIGINT, n BIGINT, total BIGINT, s TIMESTAMP, e TIMESTAMP",
			`SELECT bidder, count(*), sum(price), window_start, window_end
			FROM TABLE(SESSION(TABLE bids PARTITION BY bidder, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
			GROUP BY bidder, window_start, window_end`, "session_agg", 500},
		{"auction BIGINT, bidder BIGINT, price BIGINT, t TIMESTAMP",
			`SELECT auction, bidder, price, dateTime FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY dateTime) AS rn FROM bids) f
			WHERE rn = 1`, "(first rows, at the watermark)", 1000},
	}
	for i, q := range queries {
		var rows [2][]string
		for b, backend := range []string{"memory", "disk"} {
			mustRun(t, s, "SET state_backend = '"+backend+"'")
			if plan := mustRun(t, s, "EXPLAIN "+q.query); backend == "disk" && (!strings.Contains(plan, q.onDisk) || !strings.Contains(plan, "state_backend=disk")) {
				t.Errorf("EXPLAIN of query %d with state_backend = 'disk':\n%s", i, plan)
			}
			table := fmt.Sprintf("out_%d_%s", i, backend)
			mustRun(t, s, fmt.Sprintf("CREATE TABLE %s (%s) ENGINE=memory CONNECTION='memory://%s'", table, q.cols, table))
			mustRun(t, s, "INSERT INTO "+table+" "+q.query)
			waitJobsDone(t, s)
			rows[b] = strings.Split(mustRun(t, s, "SELECT * FROM "+table), "\n")
			slices.Sort(rows[b])
		}
		if len(rows[0]) < q.min {
			t.Errorf("query %d: %d rows, too few to outgrow the cache", i, len(rows[0]))
		}
		if !slices.Equal(rows[1], rows[0]) {
			t.Errorf("query %d: %d rows on disk, %d in memory; they differ", i, len(rows[1]), len(rows[0]))
		}
	}
}

// waitJobsDone waits until no job SHOW PROCESSLIST lists is running, and
// fails the test if one failed.
func waitJobsDone(t *testing.T, s *session.Session) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		list := mustRun(t, s, "SHOW PROCESSLIST")
		if strings.Contains(list, "'failed'") {
			t.Fatalf("a job failed:\n%s", list)
		}
		if !strings.Contains(list, "'running'") && !strings.Contains(list, "'created'") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs still running after 5 minutes:\n%s", list)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// openStateEngine opens an engine of two slots on TaskManagers whose
// --state-memory is the smallest a slot gets (1 MiB: a 256 KiB cache in front
// of each disk-backed operator's DB), and returns a session of it.
func openStateEngine(t *testing.T) *session.Session {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	reg := exec.NewRegistry()
	operators.Register(reg)
	tables := connectors.Register(reg)
	e, err := session.Open(session.Config{DataDir: t.TempDir(), Registry: reg, Validate: connectors.Validate,
		Unbounded: connectors.Unbounded, EstimateRows: connectors.EstimateRows, EstimateDistinct: connectors.EstimateDistinct,
		Upsert: connectors.Upsert, Retracts: connectors.Retracts, SourceWatermarks: connectors.SourceWatermarks,
		Slots: 2, Alloc: mem, OnClose: tables.Close, StateMemory: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		mem.AssertSize(t, 0)
	})
	return e.NewSession()
}

// sameOnBackends runs each query under state_backend 'memory' and 'disk' and
// fails the test unless they give the same rows (sorted, returned per
// query), at least 1000 of them, and EXPLAIN on disk names onDisk[i] with
// state_backend=disk.
func sameOnBackends(t *testing.T, s *session.Session, queries, onDisk []string) [][]string {
	t.Helper()
	sorted := func(out string) []string {
		rows := strings.Split(out, "\n")
		slices.Sort(rows)
		return rows
	}
	var rows [][]string
	for i, q := range queries {
		mustRun(t, s, "SET state_backend = 'memory'")
		want := sorted(mustRun(t, s, q))
		mustRun(t, s, "SET state_backend = 'disk'")
		if plan := mustRun(t, s, "EXPLAIN "+q); !strings.Contains(plan, onDisk[i]) || !strings.Contains(plan, "state_backend=disk") {
			t.Errorf("EXPLAIN of query %d with state_backend = 'disk':\n%s", i, plan)
		}
		got := sorted(mustRun(t, s, q))
		if len(want) < 1000 {
			t.Errorf("query %d: %d rows, too few to outgrow the cache", i, len(want))
		}
		if !slices.Equal(got, want) {
			t.Errorf("query %d: %d rows on disk, %d in memory; they differ", i, len(got), len(want))
		}
		rows = append(rows, got)
	}
	return rows
}
