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

// TestIntervalJoinOverKafka joins a Kafka stream with a watermark 2 seconds
// behind with itself on its key and on a's time within the 3 seconds up to
// b's: the view of the pairs, through interval_join, comes to hold every
// pair the nested loops here find; and a count per 10-second window of a's
// time over the pairs, downstream of the join, gets every pair in its
// window once the join's watermark, which the task gives it per input and
// which it holds back by the bounds' reach, passes the window. (That the
// hold-back keeps pairs from being late is TestIntervalJoinRandom's: here
// few pairs would be.)
func TestIntervalJoinOverKafka(t *testing.T) {
	for _, par := range []string{"1", "auto"} {
		t.Run("parallelism "+par, func(t *testing.T) { intervalJoinOverKafka(t, par) })
	}
}

func intervalJoinOverKafka(t *testing.T, parallelism string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rng := rand.New(rand.NewPCG(25, 1))
	var rows []overKafkaRow
	for i := range 80 {
		rows = append(rows, overKafkaRow{k: string(rune('a' + rng.IntN(3))), price: i, sec: i / 2})
	}
	for i := 0; i+2 < len(rows); i += 3 + rng.IntN(3) { // a second out of order
		rows[i], rows[i+2] = rows[i+2], rows[i]
	}
	var lines []string
	for _, r := range rows {
		lines = append(lines, fmt.Sprintf("%s,%d,2024-01-01 %s", r.k, r.price, clock(r.sec)))
	}
	// The last row, far ahead, takes the watermarks past every window.
	lines = append(lines, "z,-1,2024-01-01 "+clock(3000))
	broker, _ := txKafka(t, ctx, lines...)
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
	pairs := `SELECT a.k, a.price AS ap, a.ts AS ats, b.price AS bp FROM bids a JOIN bids b
		ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '3' SECOND AND b.ts`
	counts := `SELECT TUMBLE_START(ats, INTERVAL '10' SECOND) AS w, count(*) AS n FROM (` + pairs + `) p GROUP BY TUMBLE(ats, INTERVAL '10' SECOND)`
	// A LEFT interval join: b 1 or 2 seconds before a; a row of a without
	// one goes out NULL-padded once b's watermark passes a's time less 1 s
	// (not the last row, which it never passes).
	outer := `SELECT a.k, a.price AS ap, b.price AS bp FROM bids a LEFT JOIN bids b
		ON a.k = b.k AND a.ts BETWEEN b.ts + INTERVAL '1' SECOND AND b.ts + INTERVAL '2' SECOND`
	// Nexmark q7's shape: each bid at its 10-second window's highest
	// price, its time within the 10 seconds up to the window's end: the
	// window's rows keep the watermark, and the join is an interval join.
	q7 := `SELECT B.k, B.price FROM bids B JOIN (SELECT MAX(price) AS maxprice, TUMBLE_END(ts, INTERVAL '10' SECOND) AS dt
		FROM bids GROUP BY TUMBLE(ts, INTERVAL '10' SECOND)) B1 ON B.price = B1.maxprice
		WHERE B.ts BETWEEN B1.dt - INTERVAL '10' SECOND AND B1.dt`
	exec("CREATE VIEW ij_q7 AS " + q7)
	for _, q := range []string{pairs, counts, outer, q7} {
		plan, err := conn.Query(ctx, "EXPLAIN "+q)
		if err != nil {
			t.Fatal(err)
		}
		if p := strings.Join(scanLines(t, plan), "\n"); !strings.Contains(p, "interval_join") {
			t.Fatalf("no interval_join in the plan:\n%s", p)
		}
	}
	exec("CREATE VIEW ij_outer AS " + outer)
	exec("CREATE VIEW ij_pairs AS " + pairs)
	exec("CREATE VIEW ij_counts AS " + counts)

	var want []string
	perWindow := map[int]int{}
	for _, a := range rows {
		for _, b := range rows {
			if a.k == b.k && a.sec >= b.sec-3 && a.sec <= b.sec {
				want = append(want, fmt.Sprintf("%s %d %d", a.k, a.price, b.price))
				perWindow[a.sec/10*10]++
			}
		}
	}
	want = append(want, "z -1 -1")
	slices.Sort(want)
	var wantOuter []string
	for _, a := range rows {
		n := len(wantOuter)
		for _, b := range rows {
			if a.k == b.k && a.sec >= b.sec+1 && a.sec <= b.sec+2 {
				wantOuter = append(wantOuter, fmt.Sprintf("%s %d %d", a.k, a.price, b.price))
			}
		}
		if len(wantOuter) == n {
			wantOuter = append(wantOuter, fmt.Sprintf("%s %d <nil>", a.k, a.price))
		}
	}
	slices.Sort(wantOuter)
	var wantCounts []string
	for _, w := range slices.Sorted(func(yield func(int) bool) {
		for w := range perWindow {
			if !yield(w) {
				return
			}
		}
	}) {
		wantCounts = append(wantCounts, fmt.Sprintf("%s %d", clock(w), perWindow[w]))
	}
	best := map[int]overKafkaRow{} // by window start; every price differs
	for _, r := range rows {
		if b, ok := best[r.sec/10*10]; !ok || r.price > b.price {
			best[r.sec/10*10] = r
		}
	}
	var wantQ7 []string
	for _, b := range best {
		wantQ7 = append(wantQ7, fmt.Sprintf("%s %d", b.k, b.price))
	}
	slices.Sort(wantQ7)
	for _, v := range []struct{ q, want string }{
		{"SELECT k, price FROM ij_q7", strings.Join(wantQ7, " | ")},
		{"SELECT k, ap, bp FROM ij_pairs", strings.Join(want, " | ")},
		{"SELECT k, ap, bp FROM ij_outer", strings.Join(wantOuter, " | ")},
		{"SELECT to_char(w, 'HH24:MI:SS'), n FROM ij_counts ORDER BY 1", strings.Join(wantCounts, " | ")},
	} {
		var got string
		waitUntil(t, fmt.Sprintf("%s to give %s", v.q, v.want), nil, func() bool {
			rows, err := conn.Query(ctx, v.q)
			if err != nil {
				if e := err.Error(); e != got {
					got = e
					t.Logf("%s: %s", v.q, e)
				}
				return false // the view has not caught up yet
			}
			l := scanLines(t, rows)
			if err := rows.Err(); err != nil {
				l = []string{err.Error()}
			}
			if !strings.Contains(v.q, "ORDER BY") {
				slices.Sort(l)
			}
			if g := strings.Join(l, " | "); g != got {
				got = g
				t.Logf("%s: %s", v.q, got)
			}
			return got == v.want
		})
	}
}
