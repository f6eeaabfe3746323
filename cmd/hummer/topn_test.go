package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Streaming Top-N end to end: views of Top-N queries over a stored table
// follow its INSERTs, UPDATEs and DELETEs (changes that retract rows, so the
// topn operators keep every row and replace a deleted top row with the
// next), and after each of a random sequence of statements every view comes
// to equal the same query run in batch over the table (the reference: the
// window operator numbering every row, then the filter). Each view's order
// is total, or its columns are those ties cannot change, so the two answers
// are comparable exactly. It runs on both state backends: with SET
// state_backend = 'disk' the topn operators keep their partitions in pebble
// (exec/operators/topn_disk.go).
func TestTopNViewFollowsTable(t *testing.T) {
	for _, backend := range []string{"memory", "disk"} {
		t.Run(backend, func(t *testing.T) { topNViewFollowsTable(t, backend) })
	}
}

func topNViewFollowsTable(t *testing.T, backend string) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SET state_backend = '"+backend+"'"); err != nil {
		t.Fatal(err)
	}
	views := map[string]string{
		// Top 3 per group, the row number selected (retract mode).
		"top3": "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC, k) AS rn FROM f) t WHERE rn <= 3",
		// Deduplication keeping the greatest v per group; ties on v give
		// the same (g, v).
		"last": "SELECT g, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC) AS rn FROM f) t WHERE rn = 1",
		// A condition on the row number besides the bound, which the
		// result does not select.
		"skip2": "SELECT k, g FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC, k) AS rn FROM f) t WHERE rn <= 3 AND rn <> 2",
		// RANK(): ties share a rank, all of them in the top.
		"ranked": "SELECT k, g, v, r FROM (SELECT *, RANK() OVER (PARTITION BY g ORDER BY v DESC) AS r FROM f) t WHERE r <= 2",
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

// TestTopNOverKafka: Top-N over an append-only Kafka topic, kept in views: a
// Top-2 per key, which changes as better rows arrive (retracting the rows
// they push out and renumbering the others), and a Top-2 per tumbling window
// of the window table function, whose rows come out once, when the
// watermark (2 s behind the largest time seen) closes the window; a row of a
// closed window is late and dropped there, but not from the per-key Top-2;
// and the first row of each key by time, which goes out once the watermark
// passes it (append-only), later and late rows ignored; and the two keys
// with the most rows, a Top-N over a GROUP BY's updates; and the two best
// prices of the whole stream, by ORDER BY ... LIMIT.
// The rows are produced in steps, each after the views showed the step
// before; the expected rows are worked by hand.
func TestTopNOverKafka(t *testing.T) {
	for _, par := range []string{"1", "auto"} {
		t.Run("parallelism "+par, func(t *testing.T) { topNOverKafka(t, par) })
	}
}

func topNOverKafka(t *testing.T, parallelism string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	at := func(k string, price, sec int) string {
		return fmt.Sprintf("%s,%d,2024-01-01 00:00:%02d", k, price, sec)
	}
	// Step 1: the watermark reaches 10 s (12 - 2), closing [0,10).
	broker, produce := txKafka(t, ctx, at("a", 10, 1), at("b", 5, 2), at("a", 30, 3), at("a", 20, 4), at("b", 7, 8), at("a", 25, 12))
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
	top2 := `SELECT * FROM (SELECT k, price, ts, ROW_NUMBER() OVER (PARTITION BY k ORDER BY price DESC) AS rn FROM bids) t WHERE rn <= 2`
	wtop := `SELECT * FROM (SELECT k, price, window_start, window_end, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rn
		FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))) t WHERE rn <= 2`
	firsts := `SELECT k, price, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM bids) t WHERE rn = 1`
	best2 := `SELECT k, price FROM bids ORDER BY price DESC LIMIT 2`
	hot := `SELECT k, n FROM (SELECT k, n, ROW_NUMBER() OVER (ORDER BY n DESC, k) AS rn FROM (SELECT k, count(*) AS n FROM bids GROUP BY k) a) t WHERE rn <= 2`
	for q, op := range map[string]string{top2: "topn partition=[k]", wtop: "window_topn partition=[window_start, window_end]",
		firsts: "(first rows, at the watermark)", hot: "(keeps every row: its input retracts)", best2: "topn partition=[] order=price desc rows 1 to 2"} {
		var plan strings.Builder
		rows, err := conn.Query(ctx, "EXPLAIN "+q)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range scanLines(t, rows) {
			plan.WriteString(l + "\n")
		}
		if !strings.Contains(plan.String(), op) {
			t.Errorf("the plan of %s has no %s:\n%s", q, op, plan.String())
		}
	}
	exec("CREATE VIEW top2 AS " + top2)
	exec("CREATE VIEW wtop AS " + wtop)
	exec("CREATE VIEW firsts AS " + firsts)
	exec("CREATE VIEW hot AS " + hot)
	exec("CREATE VIEW best2 AS " + best2)
	views := func(top, wtop, firsts, hot, best2 string) {
		t.Helper()
		for _, v := range []struct{ q, want string }{
			{"SELECT k, price, to_char(ts, 'SS'), rn FROM top2 ORDER BY 1, 4", top},
			{"SELECT to_char(window_start, 'SS'), to_char(window_end, 'SS'), rn, k, price FROM wtop ORDER BY 1, 3", wtop},
			{"SELECT k, price, to_char(ts, 'SS') FROM firsts ORDER BY 1", firsts},
			{"SELECT k, n FROM hot ORDER BY 2 DESC, 1", hot},
			{"SELECT k, price FROM best2 ORDER BY 2 DESC", best2},
		} {
			var got string
			waitUntil(t, fmt.Sprintf("%s to give %s", v.q, v.want), nil, func() bool {
				rows, err := conn.Query(ctx, v.q)
				if err != nil {
					return false // the view has not caught up yet
				}
				got = strings.Join(scanLines(t, rows), " | ")
				return got == v.want
			})
		}
	}
	// The first rows of a and b are behind the watermark: out.
	views("a 30 03 1 | a 25 12 2 | b 7 08 1 | b 5 02 2", "00 10 1 a 30 | 00 10 2 a 20", "a 10 01 | b 5 02", "a 4 | b 2", "a 30 | a 25")
	// Step 2: b's 40 and a's 35 take the tops; c's row of 5 s is late for
	// [0,10) and for the first rows, but tops its own key; d's 25 s takes
	// the watermark to 23, closing [10,20); d's first row waits for it.
	produce(at("b", 40, 13), at("a", 35, 15), at("c", 1, 5), at("d", 2, 25))
	views("a 35 15 1 | a 30 03 2 | b 40 13 1 | b 7 08 2 | c 1 05 1 | d 2 25 1",
		"00 10 1 a 30 | 00 10 2 a 20 | 10 20 1 b 40 | 10 20 2 a 35", "a 10 01 | b 5 02", "a 5 | b 3", "b 40 | a 35")
	// Step 3: e's 40 s takes the watermark to 38: d's first row, and
	// [20,30) with d's row alone.
	produce(at("e", 3, 40))
	views("a 35 15 1 | a 30 03 2 | b 40 13 1 | b 7 08 2 | c 1 05 1 | d 2 25 1 | e 3 40 1",
		"00 10 1 a 30 | 00 10 2 a 20 | 10 20 1 b 40 | 10 20 2 a 35 | 20 30 1 d 2", "a 10 01 | b 5 02 | d 2 25", "a 5 | b 3", "b 40 | a 35")
}

// TestTopNRestart: a continuous Top-3 per key from Kafka into a table Hummer
// stores, keyed by (k, rn), with `hummer serve` killed with -9 while bids
// arrive: after the restart the job resumes from its last checkpoint (the
// topn's rows with it) and the table holds each key's three best prices,
// worked out here from the bids produced. Ties between equal prices make
// the row numbers of equal rows arbitrary, but not the (k, rn, price) rows.
func TestTopNRestart(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "bids"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	kaddr := broker.ListenAddrs()[0]
	bin := buildHummer(t)
	addr := freeAddr(t)
	srv := startKillable(t, bin, "serve", "--pg-addr", addr, "--data-dir", filepath.Join(t.TempDir(), "data"), "--checkpoint-interval", "200ms")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := connectWhenUp(t, ctx, srv, addr)
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE feed (k TEXT, price BIGINT) ENGINE=kafka CONNECTION='kafka://%s/bids?format=csv&group=topn'", kaddr),
		"CREATE TABLE best (k TEXT, rn BIGINT, price BIGINT, PRIMARY KEY (k, rn))",
		"INSERT INTO best SELECT k, rn, price FROM (SELECT k, price, ROW_NUMBER() OVER (PARTITION BY k ORDER BY price DESC) AS rn FROM feed) t WHERE rn <= 3",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	prices := map[string][]int{}
	rnd := rand.New(rand.NewPCG(3, 4))
	produce := func(n int) {
		t.Helper()
		w := &kafka.Writer{Addr: kafka.TCP(kaddr), Topic: "bids", Balancer: &kafka.RoundRobin{}, BatchTimeout: time.Millisecond}
		defer w.Close()
		var msgs []kafka.Message
		for range n {
			k, p := fmt.Sprintf("k%d", rnd.IntN(20)), rnd.IntN(1000)
			prices[k] = append(prices[k], p)
			msgs = append(msgs, kafka.Message{Value: []byte(fmt.Sprintf("%s,%d", k, p))})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	want := func() map[string]int {
		m := map[string]int{}
		for k, ps := range prices {
			ps = slices.Clone(ps)
			slices.SortFunc(ps, func(a, b int) int { return b - a })
			for i, p := range ps[:min(3, len(ps))] {
				m[fmt.Sprintf("%s %d", k, i+1)] = p
			}
		}
		return m
	}
	table := func(c *pgx.Conn) map[string]int {
		rows, err := c.Query(ctx, "SELECT k, rn, price FROM best")
		if err != nil {
			return nil
		}
		got := map[string]int{}
		for rows.Next() {
			var k string
			var rn, p int64
			if rows.Scan(&k, &rn, &p) == nil {
				got[fmt.Sprintf("%s %d", k, rn)] = int(p)
			}
		}
		if rows.Err() != nil {
			return nil
		}
		return got
	}
	produce(200)
	waitUntil(t, "the first bids' tops in the table", srv.exited, func() bool { return maps.Equal(table(conn), want()) })
	produce(3000)
	srv.kill(t)
	conn.Close(context.Background())
	produce(500)
	srv.start(t)
	conn = connectWhenUp(t, ctx, srv, addr)
	defer conn.Close(context.Background())
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(60 * time.Second)
	for !maps.Equal(table(conn), want()) {
		if time.Now().After(deadline) {
			t.Fatalf("after the kill: best has %v, want %v", table(conn), want())
		}
		<-tick.C
	}
}
