package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// windowForms are window aggregations the Nexmark suite does not run, over
// the bids of nexmarkDDL: a CUMULATE window table function and a group
// window GROUP BY HOP(...) with HOP_START and HOP_END. BID stands for the
// table they read.
var windowForms = map[string]string{
	"cumulate": `SELECT channel, window_start, window_end, count(*) AS bids, sum(price) AS total, min(price) AS low
		FROM TABLE(CUMULATE(TABLE BID, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
		GROUP BY channel, window_start, window_end`,
	"hop": `SELECT channel, HOP_START(dateTime, INTERVAL '2' SECOND, INTERVAL '10' SECOND) AS ws,
		HOP_END(dateTime, INTERVAL '2' SECOND, INTERVAL '10' SECOND) AS we, count(*) AS bids, max(price) AS high
		FROM BID GROUP BY HOP(dateTime, INTERVAL '2' SECOND, INTERVAL '10' SECOND), channel`,
}

// windowFormsPG are windowForms in PostgreSQL's SQL: a cumulating window is
// the 10-second tumbling window holding the row (date_bin) with each of its
// ends 2, 4, ... 10 seconds in that come after the row; a hopping window is
// one of the five 10-second windows starting every 2 seconds that hold the
// row, by epoch arithmetic as nexmarkPG's q5.
var windowFormsPG = map[string]string{
	"cumulate": `SELECT channel, ws, ws + k * interval '2 second', count(*), sum(price), min(price)
		FROM (SELECT *, date_bin('10 seconds', datetime, timestamp '1970-01-01') AS ws FROM bid) b,
		     generate_series(floor(extract(epoch FROM datetime - ws) / 2)::int + 1, 5) AS k
		GROUP BY 1, 2, 3`,
	"hop": `SELECT channel, timestamp '1970-01-01' + k * interval '2 second', timestamp '1970-01-01' + k * interval '2 second' + interval '10 second',
		count(*), max(price)
		FROM bid, generate_series(floor(extract(epoch FROM datetime) / 2)::bigint - 4, floor(extract(epoch FROM datetime) / 2)::bigint) AS k
		GROUP BY 1, 2, 3`,
}

// TestWindowFormsVsPostgres runs windowForms over the bounded Nexmark bids
// (200,000 events; a watermark 4 seconds behind, from the source), over a
// stored copy of them declared with the same watermark, and over a stored
// copy without one, in batch and as a view (which over a table without a
// watermark emits updates): each must be PostgreSQL's answer, the number of
// rows and the MD5 of their text, sorted, in testdata/nexmark/FORM.pg. With
// HUMMER_NEXMARK_PG set to a PostgreSQL connection string, the test loads
// the events there, asks PostgreSQL 15, and writes those files again.
func TestWindowFormsVsPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn := nexmarkConn(t, ctx)
	defer conn.Close(context.Background())
	if dsn := os.Getenv("HUMMER_NEXMARK_PG"); dsn != "" {
		pg, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer pg.Close(context.Background())
		loadNexmark(t, ctx, conn, pg)
		for form, sel := range windowFormsPG {
			want := sortedRows(t, ctx, pg, sel)
			if err := os.WriteFile(filepath.Join("testdata/nexmark", form+".pg"), []byte(digest(want)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range []string{
		`CREATE TABLE bid_wm (auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, url TEXT, dateTime TIMESTAMP, extra TEXT,
			WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND)`,
		// One writer, so that the stored rows keep the generator's order
		// of time: rows of two writers would follow each other whole, and
		// a scan of the second's would be late for the watermark.
		"SET parallelism = 1",
		"INSERT INTO bid_wm SELECT * FROM bid",
		"RESET parallelism",
		"CREATE TABLE bid_plain AS SELECT * FROM bid",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, form := range []string{"cumulate", "hop"} {
		want, err := os.ReadFile(filepath.Join("testdata/nexmark", form+".pg"))
		if err != nil {
			t.Fatalf("%v (set HUMMER_NEXMARK_PG to make it with PostgreSQL)", err)
		}
		check := func(t *testing.T, q string) {
			t.Helper()
			if d := digest(sortedRows(t, ctx, conn, q)); d != string(want) {
				t.Errorf("Hummer's rows: %s\nPostgreSQL's: %s", strings.TrimSpace(d), strings.TrimSpace(string(want)))
			}
		}
		sel := func(table string) string { return strings.Replace(windowForms[form], "BID", table, 1) }
		for _, table := range []string{"bid", "bid_wm", "bid_plain"} {
			t.Run(form+"/"+table, func(t *testing.T) { check(t, sel(table)) })
		}
		t.Run(form+"/view", func(t *testing.T) {
			if _, err := conn.Exec(ctx, "CREATE VIEW v_"+form+" AS "+sel("bid_plain")); err != nil {
				t.Fatal(err)
			}
			// Its job would go on checkpointing while the others run.
			defer conn.Exec(context.Background(), "DROP VIEW v_"+form)
			check(t, "SELECT * FROM v_"+form)
		})
	}
}
