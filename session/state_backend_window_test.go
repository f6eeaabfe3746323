package session_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

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
	onDisk := []string{"window_agg final", "window_agg final", "window_join"}
	sorted := func(out string) []string {
		rows := strings.Split(out, "\n")
		slices.Sort(rows)
		return rows
	}
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
		if i == 0 {
			total := 0
			for _, r := range got {
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
