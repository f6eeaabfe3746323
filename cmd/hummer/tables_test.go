package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Many sessions write one stored table at once, with single-row INSERTs
// (prepared, through pgx's extended protocol), multi-row INSERTs and UPDATEs
// of their own rows: every write is there afterwards, none twice.
func TestStoredTableConcurrentWriters(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	setup := connectPgx(t, ctx, addr)
	defer setup.Close(context.Background())
	if _, err := setup.Exec(ctx, "CREATE TABLE w (id BIGINT PRIMARY KEY, writer BIGINT NOT NULL, n BIGINT)"); err != nil {
		t.Fatal(err)
	}
	const writers, rows = 8, 20
	cfg := pgxConfig(t, addr)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(context.Background())
			for i := 0; i < rows; i++ {
				id := int64(w*1000 + i)
				if _, err := conn.Exec(ctx, "INSERT INTO w VALUES ($1, $2, $3)", id, w, 0); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
			}
			batch := fmt.Sprintf("INSERT INTO w VALUES (%d, %d, 0), (%d, %d, 0)", w*1000+500, w, w*1000+501, w)
			if _, err := conn.Exec(ctx, batch); err != nil {
				errs <- fmt.Errorf("writer %d: %w", w, err)
				return
			}
			for i := 0; i < 3; i++ {
				tag, err := conn.Exec(ctx, "UPDATE w SET n = n + 1 WHERE writer = $1", w)
				if err != nil || tag.RowsAffected() != rows+2 {
					errs <- fmt.Errorf("writer %d: UPDATE %v: %v", w, tag, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var count, sum, distinct int64
	err := setup.QueryRow(ctx, "SELECT count(*), sum(n), count(DISTINCT id) FROM w").Scan(&count, &sum, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(writers * (rows + 2)); count != want || distinct != want || sum != 3*want {
		t.Errorf("count %d, distinct ids %d, sum(n) %d; want %d, %d, %d", count, distinct, sum, want, want, 3*want)
	}
}

// Statements whose INSERT returned are in the table after kill -9 of the
// server, and a statement is there whole or not at all: each INSERT writes a
// batch of rows with the same b, so a count per b other than the batch size
// would be half a statement. Meanwhile four sessions insert single rows,
// which commit to the write-ahead log in groups and are folded into segments
// as it grows: every one acknowledged is there after the restart. And an
// updater moves statements' rows on by UPDATEs, each of which is there
// whole (every row of a statement at the same generation) if acknowledged,
// and whole or not at all if not.
func TestStoredTableSurvivesKill(t *testing.T) {
	bin := buildHummer(t)
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	srv := startKillable(t, bin, "serve", "--pg-addr", addr, "--data-dir", data)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	connect := func() *pgx.Conn { return connectWhenUp(t, ctx, srv, addr) }
	conn := connect()
	if _, err := conn.Exec(ctx, "CREATE TABLE k (b BIGINT, i BIGINT, PRIMARY KEY (b, i))"); err != nil {
		t.Fatal(err)
	}
	const size = 50
	insert := func(c *pgx.Conn, b int) error {
		q := "INSERT INTO k SELECT " + fmt.Sprint(b) + ", n FROM (VALUES (0)"
		for i := 1; i < size; i++ {
			q += fmt.Sprintf(", (%d)", i)
		}
		_, err := c.Exec(ctx, q+") AS v (n)")
		return err
	}
	acked := 0
	for b := 0; b < 10; b++ {
		if err := insert(conn, b); err != nil {
			t.Fatal(err)
		}
		acked++
	}
	// A writer is inserting when the server is killed.
	done := make(chan int)
	cfg := pgxConfig(t, addr)
	go func() {
		c, err := pgx.ConnectConfig(ctx, cfg)
		n := 0
		for b := 100; err == nil; b++ {
			if err = insert(c, b); err == nil {
				n++
			}
		}
		if c != nil {
			c.Close(context.Background())
		}
		done <- n
	}()
	// An updater moves the rows of statements 0..9 on by a generation, a
	// statement at a time: UPDATE k SET i = i + 1000 WHERE b = x.
	updates := make(chan map[int64]int64, 1)
	go func() {
		c, err := pgx.ConnectConfig(ctx, cfg)
		acked := map[int64]int64{}
		for n := int64(0); err == nil; n++ {
			if _, err = c.Exec(ctx, fmt.Sprintf("UPDATE k SET i = i + 1000 WHERE b = %d", n%10)); err == nil {
				acked[n%10]++
			}
		}
		if c != nil {
			c.Close(context.Background())
		}
		updates <- acked
	}()
	if _, err := conn.Exec(ctx, "CREATE TABLE one (id BIGINT PRIMARY KEY, w BIGINT)"); err != nil {
		t.Fatal(err)
	}
	const singles = 4
	ackedOne := make(chan []int64, singles)
	for w := 0; w < singles; w++ {
		go func() {
			c, err := pgx.ConnectConfig(ctx, cfg)
			var acked []int64
			for i := int64(0); err == nil; i++ {
				id := int64(w)<<32 | i
				if _, err = c.Exec(ctx, fmt.Sprintf("INSERT INTO one VALUES (%d, %d)", id, w)); err == nil {
					acked = append(acked, id)
				}
			}
			if c != nil {
				c.Close(context.Background())
			}
			ackedOne <- acked
		}()
	}
	waitUntil(t, "a concurrent insert", srv.exited, func() bool {
		var n int64
		conn.QueryRow(ctx, "SELECT count(*) FROM k WHERE b >= 100").Scan(&n)
		return n > 0
	})
	// More single-row statements than a log holds before it is folded.
	waitUntilLong(t, "3000 single-row inserts", 3*time.Minute, srv.exited, func() bool {
		var n int64
		conn.QueryRow(ctx, "SELECT count(*) FROM one").Scan(&n)
		return n >= 3000
	})
	srv.kill(t)
	concurrent := <-done
	updated := <-updates
	if len(updated) == 0 {
		t.Errorf("no UPDATE was acknowledged before the kill")
	}
	var acked1 []int64
	for w := 0; w < singles; w++ {
		acked1 = append(acked1, <-ackedOne...)
	}
	conn.Close(context.Background())
	srv.start(t)
	conn = connect()
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SELECT b, count(*), min(i / 1000), max(i / 1000) FROM k GROUP BY b")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int64{}
	for rows.Next() {
		var b, n, lo, hi int64
		if err := rows.Scan(&b, &n, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		seen[b] = n
		if lo != hi {
			t.Errorf("an UPDATE of statement %d's rows half applied: generations %d to %d", b, lo, hi)
		}
		if b < 10 && (lo < updated[b] || lo > updated[b]+1) {
			t.Errorf("statement %d's rows are at generation %d after %d acknowledged UPDATEs", b, lo, updated[b])
		}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for b := 0; b < acked; b++ {
		if seen[int64(b)] != size {
			t.Errorf("acknowledged statement %d: %d rows after kill -9, want %d", b, seen[int64(b)], size)
		}
	}
	late := 0
	for b, n := range seen {
		if n != size {
			t.Errorf("statement %d half applied: %d of %d rows", b, n, size)
		}
		if b >= 100 {
			late++
		}
	}
	if late < concurrent {
		t.Errorf("%d of the concurrent writer's acknowledged statements survived, want at least %d", late, concurrent)
	}
	if segs, _ := filepath.Glob(filepath.Join(data, "tables", "one-*", "s-*.arrow")); len(segs) == 0 {
		t.Errorf("the single-row inserts' log was never folded into a segment")
	}
	got1 := map[int64]bool{}
	rows, err = conn.Query(ctx, "SELECT id FROM one")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got1[id] = true
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	lost := 0
	for _, id := range acked1 {
		if !got1[id] {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged single-row inserts lost after kill -9", lost, len(acked1))
	}
	// Each session had at most one statement in flight when the server died.
	if len(got1) > len(acked1)+singles {
		t.Errorf("%d single rows after kill -9, from %d acknowledged statements", len(got1), len(acked1))
	}
	// The table takes writes again, and its keys were read back.
	if err := insert(conn, 100); err == nil {
		t.Errorf("a duplicate of statement 100 was accepted after the restart")
	}
	if err := insert(conn, 1000); err != nil {
		t.Fatal(err)
	}
}

// COPY FROM STDIN through the real psql (\copy, text and csv) and pgx's
// pgconn.CopyFrom: the rows arrive as PostgreSQL reads the same data (the
// expected rows are read off the data by hand), and a bad record fails the
// COPY with its line number, keeping none of its rows.
func TestCopyFromStdin(t *testing.T) {
	addr := startTestServer(t)
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "f.csv")
	txtPath := filepath.Join(dir, "f.txt")
	badPath := filepath.Join(dir, "bad.csv")
	os.WriteFile(csvPath, []byte("id,name,price\n1,apple,0.5\n2,\"pe\"\"ar\",\n3,\"multi\nline\",2\r\n"), 0o644)
	os.WriteFile(txtPath, []byte("10\tx\t1.5\n11\t\\N\t\\N\n12\ta\\tb\t3\n"), 0o644)
	os.WriteFile(badPath, []byte("30,ok,1\n31,ok,1\n32,bad,one\n"), 0o644)
	out := psql(t, addr, fmt.Sprintf(`CREATE TABLE f (id BIGINT PRIMARY KEY, name TEXT, price DECIMAL(6,2) DEFAULT 7);
\copy f from '%s' with (format csv, header)
\copy f from '%s'
\copy f (id) from stdin
20
\.
\copy f from '%s' with csv
SELECT id, coalesce(name, '<null>'), coalesce(price::text, '<null>') FROM f ORDER BY id;
`, csvPath, txtPath, badPath))
	want := []string{
		"1|apple|0.50", "2|pe\"ar|<null>", "3|multi\nline|2.00",
		"10|x|1.50", "11|<null>|<null>", "12|a\tb|3.00", "20|<null>|7.00",
	}
	if !strings.Contains(out, strings.Join(want, "\n")) {
		t.Errorf("psql printed:\n%s\nwant the rows:\n%s", out, strings.Join(want, "\n"))
	}
	// PostgreSQL 15 on the same file: ERROR:  invalid input syntax for type
	// numeric: "one" / CONTEXT:  COPY f, line 3, column price: "one".
	if !strings.Contains(out, `invalid input syntax for type numeric: "one"`) || !strings.Contains(out, `CONTEXT:  COPY f, line 3, column price: "one"`) {
		t.Errorf("the bad file's error does not name its line and column:\n%s", out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	tag, err := conn.PgConn().CopyFrom(ctx, strings.NewReader("40;x\n41;y\n"), "COPY f (id, name) FROM STDIN WITH (FORMAT csv, DELIMITER ';')")
	if err != nil || tag.RowsAffected() != 2 {
		t.Fatalf("pgconn CopyFrom: %v %v", tag, err)
	}
	if _, err := conn.PgConn().CopyFrom(ctx, strings.NewReader("50;x\n40;dup\n"), "COPY f (id, name) FROM STDIN WITH (FORMAT csv, DELIMITER ';')"); err == nil || !strings.Contains(err.Error(), "23505") {
		t.Errorf("a duplicate key in a COPY: %v", err)
	}
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM f").Scan(&n); err != nil || n != 9 {
		t.Errorf("count after the COPYs: %d %v, want 9", n, err)
	}
	// pgx's CopyFrom: binary COPY, every type of the table (the values, as
	// pgx encodes them, read back as text).
	if _, err := conn.Exec(ctx, "CREATE TABLE b (id BIGINT, name TEXT, price DECIMAL(8,3), day DATE, at TIMESTAMP, ok BOOLEAN, x DOUBLE PRECISION)"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC)
	day := time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC)
	src := [][]any{
		{int64(1), "one", "12.345", day, at, true, 1.5},
		{int64(2), nil, nil, nil, nil, nil, nil},
		{int64(-3), "tab\there", "-0.001", day.AddDate(0, 0, 1), at.Add(-time.Hour * 24 * 365 * 40), false, -2.25},
	}
	copied, err := conn.CopyFrom(ctx, pgx.Identifier{"b"}, []string{"id", "name", "price", "day", "at", "ok", "x"}, pgx.CopyFromRows(src))
	if err != nil || copied != 3 {
		t.Fatalf("pgx CopyFrom: %d %v", copied, err)
	}
	got := psql(t, addr, "SELECT id, name, price, day, at, ok, x FROM b ORDER BY id")
	wantBin := "-3|tab\there|-0.001|2000-01-01|1984-03-10 13:14:15.123456|f|-2.25\n1|one|12.345|1999-12-31|2024-02-29 13:14:15.123456|t|1.5\n2||||||"
	if strings.TrimSpace(got) != wantBin {
		t.Errorf("after pgx CopyFrom:\n%s\nwant\n%s", got, wantBin)
	}

	for _, bad := range []struct{ sql, code string }{
		{"COPY nope FROM STDIN", "42P01"},
		{"COPY f (id, nope) FROM STDIN", "42703"},
		{"COPY f FROM STDIN WITH (FORMAT binary, HEADER)", "0A000"}, // PostgreSQL 15: 0A000
		{"COPY f FROM STDIN WITH (COLOUR red)", "42601"},
	} {
		_, err := conn.PgConn().CopyFrom(ctx, strings.NewReader(""), bad.sql)
		if err == nil || !strings.Contains(err.Error(), bad.code) {
			t.Errorf("%s: %v, want %s", bad.sql, err, bad.code)
		}
	}
}

// A view over a stored table follows its INSERTs, UPDATEs and DELETEs: after
// each of a random sequence of statements from several sessions, the view
// comes to equal the same query run in batch (the reference: the batch
// query's own answer over the same table).
func TestViewFollowsTable(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	for _, q := range []string{
		"CREATE TABLE f (k BIGINT PRIMARY KEY, g BIGINT, v BIGINT)",
		"INSERT INTO f VALUES (1, 1, 10), (2, 2, 20), (3, 1, 30)",
		"CREATE VIEW fv AS SELECT g, count(*) AS n, sum(v) AS s FROM f GROUP BY g",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
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
		deadline := time.Now().Add(30 * time.Second)
		for {
			want := rowsOf("SELECT g, count(*), sum(v) FROM f GROUP BY g ORDER BY g")
			got := rowsOf("SELECT g, n, s FROM fv ORDER BY g")
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %s: the view has %q, the query over the table %q", after, got, want)
			}
			time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
		}
	}
	converge("CREATE VIEW")
	const sessions, statements = 4, 15
	cfg := pgxConfig(t, addr)
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for w := 0; w < sessions; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := pgx.ConnectConfig(ctx, cfg.Copy())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close(context.Background())
			rnd := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; i < statements; i++ {
				var q string
				switch rnd.IntN(4) {
				case 0, 1:
					k := 100 + w*1000 + i
					q = fmt.Sprintf("INSERT INTO f VALUES (%d, %d, %d), (%d, %d, %d)", k, rnd.IntN(5), rnd.IntN(100), k+500, rnd.IntN(5), rnd.IntN(100))
				case 2:
					q = fmt.Sprintf("UPDATE f SET v = v + %d, g = (g + 1) %% 5 WHERE k %% 7 = %d", rnd.IntN(10), rnd.IntN(7))
				default:
					q = fmt.Sprintf("DELETE FROM f WHERE k %% 11 = %d", rnd.IntN(11))
				}
				if _, err := c.Exec(ctx, q); err != nil {
					errs <- fmt.Errorf("%s: %w", q, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	converge("the concurrent statements")
	// Statement by statement, from one session.
	for _, q := range []string{
		"INSERT INTO f VALUES (9001, 3, 1)",
		"UPDATE f SET g = 4 WHERE g = 3",
		"DELETE FROM f WHERE g = 4",
		"TRUNCATE f",
		"INSERT INTO f VALUES (1, 1, 1)",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		converge(q)
	}
}

// Continuous jobs from Kafka into stored tables, one with a PRIMARY KEY (word
// counts, upserted by word) and one without (every line appended), with
// `hummer serve` killed with -9 while lines arrive: after the restart the
// tables hold each word's count (a hand count of the lines produced) and
// every line exactly once, as batch queries over them read them.
func TestKafkaIntoStoredTable(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "words"))
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
	connect := func() *pgx.Conn { return connectWhenUp(t, ctx, srv, addr) }
	conn := connect()
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE feed (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/words?group=counter'", kaddr),
		"CREATE TABLE counts (word TEXT, n BIGINT, PRIMARY KEY (word))",
		"INSERT INTO counts SELECT word, count(*) FROM (SELECT unnest(string_split(line, ' ')) AS word FROM feed) AS t GROUP BY word",
		// The same lines, appended to a table without a key: a line
		// committed twice, or lost, changes its count.
		fmt.Sprintf("CREATE TABLE feed2 (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/words?group=copier'", kaddr),
		"CREATE TABLE seen (line TEXT)",
		"INSERT INTO seen SELECT line FROM feed2",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	want := map[string]int64{}
	produced := 0
	produce := func(from, to int) {
		t.Helper()
		w := &kafka.Writer{Addr: kafka.TCP(kaddr), Topic: "words", Balancer: &kafka.RoundRobin{}, BatchTimeout: time.Millisecond}
		defer w.Close()
		var msgs []kafka.Message
		for i := from; i < to; i++ {
			line := fmt.Sprintf("w%d w%d common", i%7, i%3)
			for _, word := range strings.Fields(line) {
				want[word]++
			}
			produced++
			msgs = append(msgs, kafka.Message{Value: []byte(line)})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	matches := func(c *pgx.Conn) bool {
		var lines int64
		if err := c.QueryRow(ctx, "SELECT count(*) FROM seen").Scan(&lines); err != nil || lines != int64(produced) {
			return false
		}
		rows, err := c.Query(ctx, "SELECT word, n FROM counts")
		if err != nil {
			return false
		}
		got := map[string]int64{}
		for rows.Next() {
			var w string
			var n int64
			if rows.Scan(&w, &n) == nil {
				got[w] = n
			}
		}
		if rows.Err() != nil || len(got) != len(want) {
			return false
		}
		for w, n := range want {
			if got[w] != n {
				return false
			}
		}
		return true
	}
	produce(0, 300)
	waitUntil(t, "the first lines' counts in the table", srv.exited, func() bool { return matches(conn) })
	produce(300, 2000)
	srv.kill(t)
	conn.Close(context.Background())
	produce(2000, 2500)
	srv.start(t)
	conn = connect()
	defer conn.Close(context.Background())
	deadline := time.Now().Add(60 * time.Second)
	for !matches(conn) {
		if time.Now().After(deadline) {
			rows, _ := conn.Query(ctx, "SELECT word, n FROM counts ORDER BY word")
			var got []string
			for rows.Next() {
				var w string
				var n int64
				rows.Scan(&w, &n)
				got = append(got, fmt.Sprintf("%s=%d", w, n))
			}
			var lines int64
			conn.QueryRow(ctx, "SELECT count(*) FROM seen").Scan(&lines)
			t.Fatalf("after the kill: counts has %v, want %v; seen has %d lines, want %d", got, want, lines, produced)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
	}
}

// connectWhenUp connects to srv's PostgreSQL port at addr once it accepts
// connections (after a start or a restart).
func connectWhenUp(t *testing.T, ctx context.Context, srv *killable, addr string) *pgx.Conn {
	t.Helper()
	waitUntil(t, "PostgreSQL port", srv.exited, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return connectPgx(t, ctx, addr)
}

// A view over a stored table resumes after kill -9 of the server from its
// checkpointed position in the table's changes, not from a new snapshot: the
// resumed job says which checkpoint it restored, and the view takes the
// statement that returned just before the kill (whose changes outlived it)
// and those after, equal to the batch query.
func TestViewResumesAfterRestart(t *testing.T) {
	bin := buildHummer(t)
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	srv := startKillable(t, bin, "serve", "--pg-addr", addr, "--data-dir", data, "--checkpoint-interval", "100ms")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := connectWhenUp(t, ctx, srv, addr)
	for _, q := range []string{
		"CREATE TABLE kv (k BIGINT PRIMARY KEY, g BIGINT, v BIGINT)",
		"INSERT INTO kv VALUES (1, 1, 10), (2, 1, 20), (3, 2, 30)",
		"CREATE VIEW sums AS SELECT g, count(*) AS n, sum(v) AS s FROM kv GROUP BY g",
		"INSERT INTO kv VALUES (4, 2, 40)",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	const view = "SELECT g, n, s FROM sums ORDER BY g"
	const batch = "SELECT g, count(*), sum(v) FROM kv GROUP BY g ORDER BY g"
	// Rows by hand: g 1: keys 1, 2 (10 + 20); g 2: keys 3, 4 (30 + 40). After
	// the kill: key 5 in g 1, key 1 at 100, key 4 gone: g 1: 100 + 20 + 5; g 2: 30.
	same := func(c *pgx.Conn, want string) {
		t.Helper()
		waitUntil(t, "the view to equal "+want, srv.exited, func() bool {
			return rowsText(ctx, c, view) == want && rowsText(ctx, c, batch) == want
		})
	}
	same(conn, "1 2 30\n2 2 70")
	// A checkpoint completes after the view caught up, so that the job has
	// one to resume from.
	first := latestCheckpoint(ctx, conn)
	waitUntil(t, "a checkpoint of the view", srv.exited, func() bool { return latestCheckpoint(ctx, conn) > first })
	// A statement the view may not have checkpointed yet: its changes must
	// outlive the kill.
	if _, err := conn.Exec(ctx, "INSERT INTO kv VALUES (5, 1, 5)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	srv.kill(t)
	srv.start(t)
	conn = connectWhenUp(t, ctx, srv, addr)
	if _, err := conn.Exec(ctx, "UPDATE kv SET v = 100 WHERE k = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "DELETE FROM kv WHERE k = 4"); err != nil {
		t.Fatal(err)
	}
	same(conn, "1 3 125\n2 1 30")
	if !resumedFromCheckpoint(srv.logs.String()) {
		t.Errorf("the view's job did not resume from a checkpoint:\n%s", srv.logs.String())
	}
	conn.Close(context.Background())
}

// rowsText returns q's rows, columns separated by spaces, rows by newlines;
// "" on an error.
func rowsText(ctx context.Context, c *pgx.Conn, q string) string {
	rows, err := c.Query(ctx, q)
	if err != nil {
		return ""
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var cells []string
		for _, v := range rows.RawValues() {
			cells = append(cells, string(v))
		}
		lines = append(lines, strings.Join(cells, " "))
	}
	if rows.Err() != nil {
		return ""
	}
	return strings.Join(lines, "\n")
}

// latestCheckpoint returns the newest checkpoint SHOW PROCESSLIST lists of
// any job.
func latestCheckpoint(ctx context.Context, c *pgx.Conn) int64 {
	rows, err := c.Query(ctx, "SHOW PROCESSLIST")
	if err != nil {
		return 0
	}
	defer rows.Close()
	var last int64
	for rows.Next() {
		for i, v := range rows.RawValues() {
			if string(rows.FieldDescriptions()[i].Name) == "checkpoint" {
				n, _ := strconv.ParseInt(string(v), 10, 64)
				last = max(last, n)
			}
		}
	}
	return last
}

// resumedFromCheckpoint says a server's log has a job resumed from a
// checkpoint (not from none).
func resumedFromCheckpoint(log string) bool {
	return regexp.MustCompile(`job resumed.* checkpoint=[1-9]`).MatchString(log)
}
