package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestOverWindowViewFollowsTable: views of OVER aggregations over a table
// Hummer stores follow its INSERTs, UPDATEs and DELETEs, which retract rows,
// so each runs through an over_window: ROWS frames over a total order, and
// RANGE frames of 10 seconds over a time with ties (peers). After each few
// of a random sequence of statements every view comes to equal the same
// query run in batch over the table (the reference: the window operator
// over every row).
func TestOverWindowViewFollowsTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, startTestServer(t))
	defer conn.Close(context.Background())
	views := map[string]string{
		"rows_v": `SELECT k, g, v, SUM(v) OVER (PARTITION BY g ORDER BY ts, k ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s,
			AVG(v) OVER (PARTITION BY g ORDER BY ts, k ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS a FROM f`,
		"range_v": `SELECT k, g, ts, COUNT(*) OVER (PARTITION BY g ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) AS c,
			MAX(v) OVER (PARTITION BY g ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) AS m FROM f`,
	}
	rnd := rand.New(rand.NewPCG(25, 6))
	row := func(k int) string {
		v := "NULL"
		if rnd.IntN(6) > 0 {
			v = fmt.Sprint(rnd.IntN(50))
		}
		return fmt.Sprintf("(%d, %d, %s, TIMESTAMP '2024-01-01 00:%02d:%02d')", k, rnd.IntN(3), v, rnd.IntN(2), rnd.IntN(60))
	}
	var first []string
	for k := range 20 {
		first = append(first, row(k))
	}
	for _, q := range []string{"CREATE TABLE f (k BIGINT PRIMARY KEY, g BIGINT, v BIGINT, ts TIMESTAMP)", "INSERT INTO f VALUES " + strings.Join(first, ", ")} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for name, q := range views {
		if _, err := conn.Exec(ctx, "CREATE VIEW "+name+" AS "+q); err != nil {
			t.Fatalf("CREATE VIEW %s: %v", name, err)
		}
		defer conn.Exec(context.Background(), "DROP VIEW "+name)
	}
	converge := func(after string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for name, q := range views {
			for {
				want := strings.Join(sortedRows(t, ctx, conn, q), "\n")
				got := strings.Join(sortedRows(t, ctx, conn, "SELECT * FROM "+name), "\n")
				if got == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after %s: view %s has\n%s\nits query over the table\n%s", after, name, got, want)
				}
				time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
			}
		}
	}
	converge("CREATE VIEW")
	next := 100
	for i := range 30 {
		var q string
		switch rnd.IntN(4) {
		case 0, 1:
			q = "INSERT INTO f VALUES " + row(next) + ", " + row(next+1)
			next += 2
		case 2:
			q = fmt.Sprintf("UPDATE f SET v = v + %d, ts = ts + INTERVAL '%d' SECOND WHERE k %% 5 = %d", rnd.IntN(10)-5, rnd.IntN(20)-10, rnd.IntN(5))
		default:
			q = fmt.Sprintf("DELETE FROM f WHERE k %% 7 = %d", rnd.IntN(7))
		}
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if i%3 == 2 {
			converge(q)
		}
	}
	converge("the statements")
}
