package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestOverAggOverKafka runs OVER aggregations over a Kafka stream with a
// watermark 2 seconds behind: a SUM over each key's row and the two before
// it, a COUNT and a MAX over each key's rows of the 5 seconds up to it. A
// view of them runs through over_agg, and once the last row takes the
// watermark past the others it holds every other row with its aggregates,
// worked out here from the rows produced. The rows come a second out of
// order at times, within the watermark's delay, so none is late.
func TestOverAggOverKafka(t *testing.T) {
	for _, par := range []string{"1", "auto"} {
		t.Run("parallelism "+par, func(t *testing.T) { overAggOverKafka(t, par) })
	}
}

type overKafkaRow struct {
	k          string
	price, sec int
}

func overAggOverKafka(t *testing.T, parallelism string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rng := rand.New(rand.NewPCG(6, 25))
	var rows []overKafkaRow
	for i := range 120 {
		rows = append(rows, overKafkaRow{k: string(rune('a' + rng.IntN(3))), price: rng.IntN(100), sec: i / 2})
	}
	for i := 0; i+2 < len(rows); i += 3 + rng.IntN(3) { // a second out of order
		rows[i], rows[i+2] = rows[i+2], rows[i]
	}
	// Two rows of one key at one time would make a ROWS frame's sum depend
	// on their order: keep each key's first row of a time.
	seen := map[string]bool{}
	var kept []string
	var want []overKafkaRow
	for _, r := range rows {
		if id := fmt.Sprint(r.k, r.sec); !seen[id] {
			seen[id] = true
			kept = append(kept, fmt.Sprintf("%s,%d,2024-01-01 %s", r.k, r.price, clock(r.sec)))
			want = append(want, r)
		}
	}
	// The last row, far ahead, takes the watermark past every other one.
	kept = append(kept, "z,0,2024-01-01 "+clock(3000))
	broker, _ := txKafka(t, ctx, kept...)
	conn := connectPgx(t, ctx, startTestServer(t))
	defer conn.Close(context.Background())
	exec := func(q string) {
		t.Helper()
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("SET parallelism = " + parallelism)
	exec(fmt.Sprintf("CREATE TABLE bids (k TEXT, price BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) ENGINE=kafka CONNECTION='kafka://%s/events?format=csv'", broker))
	q := `SELECT k, price, ts,
		SUM(price) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s,
		COUNT(*) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND CURRENT ROW) AS c,
		MAX(price) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND CURRENT ROW) AS m
		FROM bids`
	plan, err := conn.Query(ctx, "EXPLAIN "+q)
	if err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(scanLines(t, plan), "\n"); !strings.Contains(p, "over_agg") {
		t.Fatalf("no over_agg in the plan:\n%s", p)
	}
	exec("CREATE VIEW over_v AS " + q)
	defer conn.Exec(context.Background(), "DROP VIEW over_v")

	var expect []string
	for _, r := range want {
		var same []overKafkaRow
		for _, o := range want {
			if o.k == r.k && o.sec <= r.sec {
				same = append(same, o)
			}
		}
		slices.SortFunc(same, func(a, b overKafkaRow) int { return a.sec - b.sec })
		s := 0
		for _, o := range same[max(0, len(same)-3):] {
			s += o.price
		}
		c, m := 0, 0
		for _, o := range same {
			if o.sec >= r.sec-5 {
				c++
				m = max(m, o.price)
			}
		}
		expect = append(expect, fmt.Sprintf("%s %d %s %d %d %d", r.k, r.price, clock(r.sec), s, c, m))
	}
	slices.Sort(expect)
	wantText := strings.Join(expect, " | ")
	var got string
	t.Logf("want %d rows: %s", len(expect), wantText)
	waitUntil(t, "the view to hold every row but the last", nil, func() bool {
		rows, err := conn.Query(ctx, "SELECT k, price, to_char(ts, 'HH24:MI:SS'), CAST(s AS BIGINT), c, m FROM over_v")
		if err != nil {
			return false // the view has not caught up yet
		}
		l := scanLines(t, rows)
		slices.Sort(l)
		if g := strings.Join(l, " | "); g != got {
			got = g
			t.Logf("%d rows: %s", len(l), got)
		}
		return got == wantText
	})
}

// clock is sec seconds after midnight as HH:MM:SS.
func clock(sec int) string {
	return fmt.Sprintf("%02d:%02d:%02d", sec/3600, sec/60%60, sec%60)
}
