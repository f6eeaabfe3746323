package main

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNexmarkContinuous is what `make bench-nexmark` runs its queries as: a
// Nexmark table of events=N with continuous=true is planned as a stream (a
// join of two such tables is a stream_join, a GROUP BY's rows change), yet
// its job ends after N events, and a blackhole table with a PRIMARY KEY takes
// the changes. Without a PRIMARY KEY the changing query is refused. Without
// continuous the same tables are bounded: a hash join, and a GROUP BY that
// emits each group's final row once.
func TestNexmarkContinuous(t *testing.T) {
	addr := startHummer(t)
	psql(t, addr, `
		CREATE TABLE bid_s (auction BIGINT, price BIGINT) ENGINE=nexmark CONNECTION='nexmark://bid?events=200000&rate=0&continuous=true';
		CREATE TABLE bid_b (auction BIGINT, price BIGINT) ENGINE=nexmark CONNECTION='nexmark://bid?events=200000&rate=0';
		CREATE TABLE auction_s (id BIGINT, seller BIGINT) ENGINE=nexmark CONNECTION='nexmark://auction?events=200000&rate=0&continuous=true';
		CREATE TABLE auction_b (id BIGINT, seller BIGINT) ENGINE=nexmark CONNECTION='nexmark://auction?events=200000&rate=0';
		CREATE TABLE out_keyed (k BIGINT, n BIGINT, PRIMARY KEY (k)) ENGINE=blackhole;
		CREATE TABLE out_append (k BIGINT, n BIGINT) ENGINE=blackhole;`)
	if out, err := psqlErr(addr, "INSERT INTO out_append SELECT mod(auction, 10), count(*) FROM bid_s GROUP BY mod(auction, 10);"); err == nil && !strings.Contains(out, "append-only") {
		t.Errorf("a changing query into a blackhole without a PRIMARY KEY: %q, want it refused as append-only", out)
	}
	// job runs the INSERT and returns its rows_out once it has finished.
	job := func(insert string) int {
		t.Helper()
		psql(t, addr, insert)
		last := 0 // the newest job: this INSERT's
		for id := range processList(t, addr) {
			if n, err := strconv.Atoi(id); err == nil {
				last = max(last, n)
			}
		}
		id := strconv.Itoa(last)
		var row []string
		waitUntilLong(t, "job "+id+" finished", time.Minute, nil, func() bool {
			row = processList(t, addr)[id]
			if row != nil && (row[2] == "failed" || row[2] == "cancelled") {
				t.Fatalf("job %s %s: %v", id, row[2], row)
			}
			return row != nil && row[2] == "finished"
		})
		n, err := strconv.Atoi(row[5])
		if err != nil {
			t.Fatalf("rows_out %q", row[5])
		}
		return n
	}
	for _, c := range []struct{ tables, want, not string }{{"bid_s JOIN auction_s", "stream_join", "hash_join"}, {"bid_b JOIN auction_b", "hash_join", "stream_join"}} {
		plan := psql(t, addr, "EXPLAIN SELECT seller, price FROM "+c.tables+" ON auction = id;")
		if !strings.Contains(plan, c.want) || strings.Contains(plan, c.not) {
			t.Errorf("%s: want a %s, not a %s:\n%s", c.tables, c.want, c.not, plan)
		}
	}
	if n := job("INSERT INTO out_keyed SELECT mod(auction, 10), count(*) FROM bid_s GROUP BY mod(auction, 10);"); n < 10 {
		t.Errorf("continuous: %d rows out, want at least the 10 groups' rows", n)
	}
	if n := job("INSERT INTO out_keyed SELECT mod(auction, 10), count(*) FROM bid_b GROUP BY mod(auction, 10);"); n != 10 {
		t.Errorf("bounded: %d rows out, want the 10 groups' final rows", n)
	}
}
