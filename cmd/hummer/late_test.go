package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestLateRowsTable: with SET late_rows_table, the rows a window drops as
// late go to that table as well as being counted, and SQL reads them there.
// The stream is TestWindowsOutOfOrder's: rows come out of order, the
// watermark is 2 seconds behind the largest time seen, and each step is
// produced after the view showed the windows the step before closed, so the
// watermark each row meets is known. By hand (Flink's rule: a window closes
// when the watermark reaches its last microsecond): a's 9 comes when the
// watermark is 10 s, after [0,10) closed; a's 19 when it is 23 s, after
// [10,20) closed. Those two, and only they, are late; the windows are the
// same as without the table.
func TestLateRowsTable(t *testing.T) {
	for _, par := range []string{"1", "auto"} {
		t.Run("parallelism "+par, func(t *testing.T) { lateRowsTable(t, par) })
	}
}

func lateRowsTable(t *testing.T, parallelism string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	at := func(k string, sec int) string { return fmt.Sprintf("%s,2024-01-01 00:00:%02d", k, sec) }
	broker, produce := txKafka(t, ctx, at("a", 0), at("b", 3), at("a", 8), at("a", 7), at("a", 12))
	addr := startTestServer(t)
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	exec := func(q string) {
		t.Helper()
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("SET parallelism = " + parallelism)
	exec("SET checkpoint_interval = '200ms'")
	exec(fmt.Sprintf("CREATE TABLE clicks (k TEXT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) ENGINE=kafka CONNECTION='kafka://%s/events?format=csv'", broker))
	exec("CREATE TABLE late_clicks (late_watermark TIMESTAMP, k TEXT, ts TIMESTAMP, late_operator TEXT)")
	exec("SET late_rows_table = 'late_clicks'")
	exec(`CREATE VIEW w AS SELECT k, window_start, window_end, count(*) AS n
		FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end`)
	// An OVER aggregation, its own job over the same stream: a row at or
	// behind the watermark is late for it, so the same two are.
	exec(`CREATE VIEW o AS SELECT k, ts, count(*) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS c FROM clicks`)
	query := func(q, want string) {
		t.Helper()
		var got string
		waitUntil(t, q+" to give "+want, nil, func() bool {
			rows, err := conn.Query(ctx, q)
			if err != nil {
				return false // the view has not caught up yet
			}
			got = strings.Join(scanLines(t, rows), " | ")
			return got == want
		})
	}
	windows := func(want string) {
		t.Helper()
		query("SELECT k, to_char(window_start, 'MI:SS'), to_char(window_end, 'MI:SS'), n FROM w ORDER BY 2, 1", want)
	}
	// The OVER view's rows come out when the watermark passes them: it too
	// has seen each step's watermark before the next step.
	over := func(n string) { t.Helper(); query("SELECT count(*) FROM o", n) }
	windows("a 00:00 00:10 3 | b 00:00 00:10 1")
	over("4")
	produce(at("a", 9), at("b", 11), at("c", 25))
	windows("a 00:00 00:10 3 | b 00:00 00:10 1 | a 00:10 00:20 1 | b 00:10 00:20 1")
	over("6")
	produce(at("a", 19), at("d", 29), "d,2024-01-01 00:00:40")
	windows("a 00:00 00:10 3 | b 00:00 00:10 1 | a 00:10 00:20 1 | b 00:10 00:20 1 | c 00:20 00:30 1 | d 00:20 00:30 1")
	over("8")

	// The late rows, committed with the job's checkpoints: each once.
	query(`SELECT k, to_char(ts, 'MI:SS'), to_char(late_watermark, 'MI:SS'), split_part(late_operator, ' ', 1) FROM late_clicks ORDER BY ts, 4`,
		"a 00:09 00:10 over_agg | a 00:09 00:10 window_agg | a 00:19 00:23 over_agg | a 00:19 00:23 window_agg")
	query("SELECT count(*) FROM late_clicks", "4")
	var late int64
	rows, err := conn.Query(ctx, "SHOW PROCESSLIST")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range rows.FieldDescriptions() {
			if f.Name == "late_rows" {
				late += vals[i].(int64)
			}
		}
	}
	if late != 4 {
		t.Errorf("late_rows %d, want 4 (a's 9 and 19, in each job)", late)
	}

	// EXPLAIN shows where the late rows go.
	rows, err = conn.Query(ctx, `EXPLAIN SELECT k, count(*) FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end`)
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(scanLines(t, rows), "\n")
	if !strings.Contains(plan, "late rows: sink [hummer] late_clicks") || !strings.Contains(plan, "(late rows)") {
		t.Errorf("EXPLAIN shows no late-rows sink:\n%s", plan)
	}

	// Targets the late rows cannot go to are refused when a windowed job
	// starts; a job without a window does not care.
	exec("CREATE TABLE bad_name (k TEXT, zz TEXT)")
	exec("CREATE TABLE bad_type (k BIGINT)")
	exec("CREATE TABLE bad_meta (k TEXT, late_watermark BIGINT)")
	window := `SELECT k, count(*) FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end`
	for _, c := range []struct{ table, code, msg string }{
		{"nope", "42P01", `late_rows_table "nope" does not exist`},
		{"w", "42809", `late_rows_table "w" is not a table that rows can be written to`},
		{"bad_name", "42703", "late_rows_table bad_name has column zz, which is not a column of the rows window_agg reads (k, window_start, window_end), nor late_watermark or late_operator"},
		{"bad_type", "42804", "late_rows_table bad_type has column k of type bigint, but the late rows' k is text"},
		{"bad_meta", "42804", "late_rows_table bad_meta has column late_watermark of type bigint: it takes the watermark, a timestamp"},
	} {
		exec(fmt.Sprintf("SET late_rows_table = '%s'", c.table))
		_, err := conn.Exec(ctx, "CREATE VIEW bad AS "+window)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code || !strings.Contains(pe.Message, c.msg) {
			t.Errorf("late_rows_table %s: got %v, want %s %q", c.table, err, c.code, c.msg)
		}
		query("SELECT 1", "1")
	}
	// A window over a window: only the first reads rows that can be late,
	// so the table's columns need not be the second's.
	exec("SET late_rows_table = 'late_clicks'")
	explain := func(q string) string {
		t.Helper()
		rows, err := conn.Query(ctx, "EXPLAIN "+q)
		if err != nil {
			t.Fatalf("EXPLAIN %s: %v", q, err)
		}
		return strings.Join(scanLines(t, rows), "\n")
	}
	nested := `SELECT window_start, window_end, sum(n) FROM (SELECT k, window_start, window_end, count(*) AS n
		FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end) AS c
		GROUP BY window_start, window_end`
	if plan := explain(nested); !strings.Contains(plan, "late rows: sink") {
		t.Errorf("EXPLAIN of nested windows shows no late-rows sink:\n%s", plan)
	}
	// Group windows read the table's columns too.
	for _, q := range []string{
		"SELECT k, TUMBLE_START(ts, INTERVAL '10' SECOND), count(*) FROM clicks GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND)",
		"SELECT k, SESSION_START(ts, INTERVAL '5' SECOND), count(*) FROM clicks GROUP BY k, SESSION(ts, INTERVAL '5' SECOND)",
	} {
		if plan := explain(q); !strings.Contains(plan, "late rows: sink") {
			t.Errorf("EXPLAIN %s shows no late-rows sink:\n%s", q, plan)
		}
	}
	exec("RESET late_rows_table")
	if plan := explain(window); strings.Contains(plan, "late rows") {
		t.Errorf("after RESET late_rows_table, EXPLAIN still shows late rows:\n%s", plan)
	}
	exec(fmt.Sprintf("CREATE TABLE sink_clicks (k TEXT, n BIGINT) ENGINE=kafka CONNECTION='kafka://%s/out?format=csv'", broker))
	exec("SET late_rows_table = 'sink_clicks'")
	_, err = conn.Exec(ctx, "INSERT INTO sink_clicks "+window)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "0A000" {
		t.Errorf("late rows into the job's own sink: got %v, want 0A000", err)
	}
}

// TestReadmeLateRowsExample runs the README's late-rows example as written:
// its statements through psql, whose output must be the README's. Its rows
// are worked by hand there (the watermark after each INSERT's batch).
func TestReadmeLateRowsExample(t *testing.T) {
	block := readmeBlock(t, "SET late_rows_table = 'late_clicks'")
	var stmts, want, cur []string
	for _, line := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		if s, ok := cutPrompt(line); ok {
			cur = append(cur, s)
			if strings.HasSuffix(s, ";") {
				stmts = append(stmts, strings.Join(cur, "\n"))
				cur = nil
			}
			continue
		}
		want = append(want, line)
	}
	if len(stmts) < 5 {
		t.Fatalf("the README's late-rows example has statements %q", stmts)
	}
	addr := startTestServer(t)
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, "psql", "-X", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", port, "-U", "hummer", "-d", "hummer", "-f", "-")
	cmd.Stdin = strings.NewReader(strings.Join(stmts, "\n"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	if got := strings.TrimRight(string(out), "\n"); got != strings.Join(want, "\n") {
		t.Errorf("psql printed:\n%s\nthe README shows:\n%s", got, strings.Join(want, "\n"))
	}
}

// TestLateRowsFromTwoWindows: a query of two windowed aggregations (joined
// on their windows) sends the late rows of both to the one late-rows table,
// each with its operator. The input is the README example's, a batch query
// over a stored table: each INSERT is read as one batch, after which the
// watermark is its largest time less 2 s; by hand, 9 s is late at 10 s and
// 19 s at 23 s, for each aggregation.
func TestLateRowsFromTwoWindows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, startTestServer(t))
	defer conn.Close(context.Background())
	for _, q := range []string{
		"SET parallelism = 1",
		"CREATE TABLE clicks (k TEXT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)",
		"INSERT INTO clicks VALUES ('a', '2024-01-01 00:00:01'), ('b', '2024-01-01 00:00:03'), ('a', '2024-01-01 00:00:12')",
		"INSERT INTO clicks VALUES ('a', '2024-01-01 00:00:09'), ('b', '2024-01-01 00:00:11'), ('c', '2024-01-01 00:00:25')",
		"INSERT INTO clicks VALUES ('a', '2024-01-01 00:00:19'), ('c', '2024-01-01 00:00:27')",
		"CREATE TABLE late_clicks (ts TIMESTAMP, late_operator TEXT, late_watermark TIMESTAMP)",
		"SET late_rows_table = 'late_clicks'",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rows, err := conn.Query(ctx, `SELECT to_char(a.window_start, 'MI:SS'), a.n, b.m FROM
		(SELECT window_start, window_end, count(*) AS n FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end) a
		JOIN (SELECT window_start, window_end, max(k) AS m FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end) b
		ON a.window_start = b.window_start AND a.window_end = b.window_end ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(scanLines(t, rows), " | "), "00:00 2 b | 00:10 2 b | 00:20 2 c"; got != want {
		t.Errorf("windows %q, want %q", got, want)
	}
	rows, err = conn.Query(ctx, `SELECT to_char(ts, 'MI:SS'), to_char(late_watermark, 'MI:SS'), late_operator FROM late_clicks ORDER BY 1, 3`)
	if err != nil {
		t.Fatal(err)
	}
	count := "window_agg complete group=[window_start, window_end] aggs=[count(*)] end=window_end"
	top := "window_agg complete group=[window_start, window_end] aggs=[max(k)] end=window_end"
	want := "00:09 00:10 " + count + " | 00:09 00:10 " + top + " | 00:19 00:23 " + count + " | 00:19 00:23 " + top
	if got := strings.Join(scanLines(t, rows), " | "); got != want {
		t.Errorf("late rows\n%s\nwant\n%s", got, want)
	}
}

// TestLateRowsToKafka: the late-rows table can be any table a sink writes:
// here a Kafka topic, which the late rows reach through the Kafka sink's
// transactions, once each, as a read_committed consumer sees them. Input
// and late rows as in TestLateRowsTable.
func TestLateRowsToKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events", "late"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	addr := broker.ListenAddrs()[0]
	tr := &kafka.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "events", BatchTimeout: time.Millisecond, Transport: tr}
	t.Cleanup(func() { w.Close() })
	produce := func(secs ...int) {
		t.Helper()
		var msgs []kafka.Message
		for i := 0; i < len(secs); i += 2 {
			msgs = append(msgs, kafka.Message{Value: fmt.Appendf(nil, "%c,2024-01-01 00:00:%02d", 'a'+secs[i], secs[i+1])})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	conn := connectPgx(t, ctx, startTestServer(t))
	defer conn.Close(context.Background())
	for _, q := range []string{
		"SET checkpoint_interval = '200ms'",
		fmt.Sprintf("CREATE TABLE clicks (k TEXT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) ENGINE=kafka CONNECTION='kafka://%s/events?format=csv'", addr),
		fmt.Sprintf("CREATE TABLE late_out (k TEXT, ts TIMESTAMP, late_watermark TIMESTAMP) ENGINE=kafka CONNECTION='kafka://%s/late?format=csv'", addr),
		"SET late_rows_table = 'late_out'",
		`CREATE VIEW w AS SELECT k, window_start, count(*) AS n
			FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	windows := func(want string) {
		t.Helper()
		waitUntil(t, "the view to show "+want, nil, func() bool {
			rows, err := conn.Query(ctx, "SELECT k, to_char(window_start, 'MI:SS'), n FROM w ORDER BY 2, 1")
			return err == nil && strings.Join(scanLines(t, rows), " | ") == want
		})
	}
	const a, b, c, d = 0, 1, 2, 3
	produce(a, 0, b, 3, a, 8, a, 7, a, 12)
	windows("a 00:00 3 | b 00:00 1")
	produce(a, 9, b, 11, c, 25)
	windows("a 00:00 3 | b 00:00 1 | a 00:10 1 | b 00:10 1")
	produce(a, 19, d, 29, d, 40)
	windows("a 00:00 3 | b 00:00 1 | a 00:10 1 | b 00:10 1 | c 00:20 1 | d 00:20 1")

	r := newCommittedReader(t, addr, "late")
	defer r.close()
	var got []string
	waitUntil(t, "the two late rows in the topic", nil, func() bool {
		for _, rec := range r.poll(t, ctx) {
			got = append(got, string(rec.Value))
		}
		return len(got) >= 2
	})
	// The CSV sink writes timestamps as PostgreSQL's COPY ... CSV does (and
	// Flink's csv format).
	want := []string{"a,2024-01-01 00:00:09,2024-01-01 00:00:10", "a,2024-01-01 00:00:19,2024-01-01 00:00:23"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the late topic holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
