package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// Streaming Top-N end to end: views of Top-N queries over a stored table
// follow its INSERTs, UPDATEs and DELETEs (changes that retract rows, so the
// topn operators keep every row and replace a deleted top row with the
// next), and after each of a random sequence of statements every view comes
// to equal the same query run in batch over the table (the reference: the
// window operator numbering every row, then the filter). Each view's order
// is total, or its columns are those ties cannot change, so the two answers
// are comparable exactly.
func TestTopNViewFollowsTable(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	views := map[string]string{
		// Top 3 per group, the row number selected (retract mode).
		"top3": "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC, k) AS rn FROM f) t WHERE rn <= 3",
		// Deduplication keeping the greatest v per group; ties on v give
		// the same (g, v).
		"last": "SELECT g, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC) AS rn FROM f) t WHERE rn = 1",
		// Ranks 2 and 3 of the whole table, and a condition after the ranking.
		"mid": "SELECT k, v, rn FROM (SELECT k, v, ROW_NUMBER() OVER (ORDER BY v, k) AS rn FROM f) t WHERE rn BETWEEN 2 AND 3 AND k > 2",
	}
	for _, q := range []string{
		"CREATE TABLE f (k BIGINT PRIMARY KEY, g BIGINT, v BIGINT)",
		"INSERT INTO f VALUES (1, 1, 10), (2, 1, 20), (3, 1, 30), (4, 2, 5), (5, 2, 7), (6, 3, NULL)",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for name, q := range views {
		if _, err := conn.Exec(ctx, "CREATE VIEW "+name+" AS "+q); err != nil {
			t.Fatalf("CREATE VIEW %s: %v", name, err)
		}
	}
	rowsOf := func(q string) string {
		t.Helper()
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var out []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(vals...))
		}
		if rows.Err() != nil {
			t.Fatalf("%s: %v", q, rows.Err())
		}
		return strings.Join(out, "; ")
	}
	converge := func(after string) {
		t.Helper()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		deadline := time.Now().Add(30 * time.Second)
		for name, q := range views {
			for {
				want := rowsOf("SELECT * FROM (" + q + ") AS b ORDER BY 1, 2")
				got := rowsOf("SELECT * FROM " + name + " ORDER BY 1, 2")
				if got == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after %s: view %s has %q, its query over the table %q", after, name, got, want)
				}
				<-tick.C
			}
		}
	}
	converge("CREATE VIEW")
	rnd := rand.New(rand.NewPCG(1, 2))
	next := 100
	for i := range 40 {
		var q string
		switch rnd.IntN(5) {
		case 0, 1:
			q = fmt.Sprintf("INSERT INTO f VALUES (%d, %d, %d), (%d, %d, %d)", next, rnd.IntN(4), rnd.IntN(30), next+1, rnd.IntN(4), rnd.IntN(30))
			next += 2
		case 2:
			q = fmt.Sprintf("UPDATE f SET v = v + %d WHERE k %% 5 = %d", rnd.IntN(10)-5, rnd.IntN(5))
		case 3:
			// The greatest v of a group: a top row retracted.
			q = fmt.Sprintf("DELETE FROM f WHERE v = (SELECT max(v) FROM f WHERE g = %d)", rnd.IntN(4))
		default:
			q = fmt.Sprintf("DELETE FROM f WHERE k %% 7 = %d", rnd.IntN(7))
		}
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if i%4 == 3 {
			converge(q)
		}
	}
	converge("the statements")
}
