package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Transaction blocks and cursors as PostgreSQL clients use them. The
// expected answers are PostgreSQL 15's to the same statements (found with
// psql and these clients against it), but where Hummer commits writes as
// they run (session/tx.go).

// TestTransactionProtocol: ReadyForQuery's status in the simple and the
// extended protocol, and a portal read a few rows at a time across Syncs in
// a block, as JDBC reads with a fetch size. The messages are PostgreSQL's
// for the same sequence (over generate_series(1, 5)).
func TestTransactionProtocol(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE TABLE g5 (g BIGINT); INSERT INTO g5 VALUES (1), (2), (3), (4), (5)"); err != nil {
		t.Fatal(err)
	}

	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Minute))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "hummer"}})
	fe.Flush()
	// receive returns the messages up to ReadyForQuery, then its status.
	receive := func() string {
		t.Helper()
		var names []string
		for {
			msg, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			switch m := msg.(type) {
			case *pgproto3.ReadyForQuery:
				return strings.Join(names, " ") + " | " + string(m.TxStatus)
			case *pgproto3.ErrorResponse:
				names = append(names, "Error:"+m.Code)
			case *pgproto3.NoticeResponse:
				names = append(names, m.Severity+":"+m.Code)
			case *pgproto3.CommandComplete:
				names = append(names, "Complete:"+string(m.CommandTag))
			case *pgproto3.ParameterStatus, *pgproto3.BackendKeyData, *pgproto3.AuthenticationOk:
			default:
				names = append(names, strings.TrimPrefix(fmt.Sprintf("%T", msg), "*pgproto3."))
			}
		}
	}
	if got := receive(); got != " | I" {
		t.Fatalf("startup: %s", got)
	}
	for _, step := range []struct {
		msgs []pgproto3.FrontendMessage
		want string
	}{
		{[]pgproto3.FrontendMessage{&pgproto3.Query{String: "BEGIN"}}, "Complete:BEGIN | T"},
		{[]pgproto3.FrontendMessage{&pgproto3.Parse{Name: "s", Query: "SELECT g FROM g5 ORDER BY g"},
			&pgproto3.Bind{DestinationPortal: "C_1", PreparedStatement: "s"}, &pgproto3.Describe{ObjectType: 'P', Name: "C_1"},
			&pgproto3.Execute{Portal: "C_1", MaxRows: 2}, &pgproto3.Sync{}},
			"ParseComplete BindComplete RowDescription DataRow DataRow PortalSuspended | T"},
		{[]pgproto3.FrontendMessage{&pgproto3.Execute{Portal: "C_1", MaxRows: 2}, &pgproto3.Sync{}}, "DataRow DataRow PortalSuspended | T"},
		{[]pgproto3.FrontendMessage{&pgproto3.Execute{Portal: "C_1", MaxRows: 2}, &pgproto3.Sync{}}, "DataRow Complete:SELECT 1 | T"},
		{[]pgproto3.FrontendMessage{&pgproto3.Execute{Portal: "C_1", MaxRows: 2}, &pgproto3.Sync{}}, "Complete:SELECT 0 | T"},
		{[]pgproto3.FrontendMessage{&pgproto3.Bind{DestinationPortal: "C_2", PreparedStatement: "s"},
			&pgproto3.Execute{Portal: "C_2", MaxRows: 1}, &pgproto3.Sync{}}, "BindComplete DataRow PortalSuspended | T"},
		// An error in a block before Sync fails the block; a portal of it
		// may not go on, nor a new statement be prepared.
		{[]pgproto3.FrontendMessage{&pgproto3.Parse{Query: "SELECT 1/(g - 1) FROM g5"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{}},
			"ParseComplete BindComplete Error:22012 | E"},
		{[]pgproto3.FrontendMessage{&pgproto3.Execute{Portal: "C_2", MaxRows: 1}, &pgproto3.Sync{}}, "Error:25P02 | E"},
		{[]pgproto3.FrontendMessage{&pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Sync{}}, "Error:25P02 | E"},
		{[]pgproto3.FrontendMessage{&pgproto3.Parse{Query: "ROLLBACK"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{}},
			"ParseComplete BindComplete Complete:ROLLBACK | I"},
		// The block's end closed its portals.
		{[]pgproto3.FrontendMessage{&pgproto3.Execute{Portal: "C_2", MaxRows: 1}, &pgproto3.Sync{}}, "Error:34000 | I"},
		{[]pgproto3.FrontendMessage{&pgproto3.Parse{Query: "BEGIN"}, &pgproto3.Bind{}, &pgproto3.Execute{},
			&pgproto3.Parse{Query: "SELECT nosuch FROM nowhere"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{}},
			"ParseComplete BindComplete Complete:BEGIN Error:42P01 | E"},
		{[]pgproto3.FrontendMessage{&pgproto3.Query{String: "COMMIT"}}, "Complete:ROLLBACK | I"},
		{[]pgproto3.FrontendMessage{&pgproto3.Query{String: "BEGIN; SELECT 1; COMMIT; SELECT 2"}},
			"Complete:BEGIN RowDescription DataRow Complete:SELECT 1 Complete:COMMIT RowDescription DataRow Complete:SELECT 1 | I"},
		{[]pgproto3.FrontendMessage{&pgproto3.Query{String: "BEGIN; SELECT 1/0; COMMIT; SELECT 2"}}, "Complete:BEGIN Error:22012 | E"},
		{[]pgproto3.FrontendMessage{&pgproto3.Query{String: "ROLLBACK"}}, "Complete:ROLLBACK | I"},
		{[]pgproto3.FrontendMessage{&pgproto3.Parse{Name: "b", Query: "BEGIN"}, &pgproto3.Bind{PreparedStatement: "b"}, &pgproto3.Execute{},
			&pgproto3.Bind{PreparedStatement: "b"}, &pgproto3.Execute{}, &pgproto3.Sync{}},
			"ParseComplete BindComplete Complete:BEGIN BindComplete WARNING:25001 Complete:BEGIN | T"},
		{[]pgproto3.FrontendMessage{&pgproto3.Query{String: "END"}}, "Complete:COMMIT | I"},
		{[]pgproto3.FrontendMessage{&pgproto3.Query{String: "COMMIT"}}, "WARNING:25P01 Complete:COMMIT | I"},
	} {
		for _, m := range step.msgs {
			fe.Send(m)
		}
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		if got := receive(); got != step.want {
			t.Errorf("%T...: got  %s\nwant %s", step.msgs[0], got, step.want)
		}
	}
	fe.Send(&pgproto3.Terminate{})
	fe.Flush()
}

// TestPgxTransactions: pgx's BeginTx, Commit and Rollback, in the extended
// protocol, with the status pgx reads from ReadyForQuery.
func TestPgxTransactions(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, "postgres://hummer@"+addr+"/hummer?sslmode=disable") // the extended protocol
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	status := func(want byte) {
		t.Helper()
		if got := conn.PgConn().TxStatus(); got != want {
			t.Errorf("status %c, want %c", got, want)
		}
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE acct (id BIGINT, n BIGINT)"); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status('T')
	if _, err := tx.Exec(ctx, "INSERT INTO acct VALUES ($1, $2)", 1, 10); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := tx.QueryRow(ctx, "SELECT sum(n) FROM acct WHERE id = $1", 1).Scan(&n); err != nil || n != 10 {
		t.Errorf("sum in the block: %d %v", n, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	status('I')

	// A failed statement fails the block until Rollback.
	tx, err = conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, "SELECT n / (n - 10) FROM acct")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22012" {
		t.Errorf("1/0: %v, want 22012", err)
	}
	status('E')
	_, err = tx.Exec(ctx, "SELECT 1")
	if !errors.As(err, &pe) || pe.Code != "25P02" {
		t.Errorf("in a failed block: %v, want 25P02", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	status('I')

	// READ ONLY refuses writes.
	tx, err = conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, DeferrableMode: pgx.Deferrable, IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, "INSERT INTO acct VALUES (2, 20)")
	if !errors.As(err, &pe) || pe.Code != "25006" || pe.Message != "cannot execute INSERT in a read-only transaction" {
		t.Errorf("INSERT in a READ ONLY block: %v, want 25006", err)
	}
	tx.Rollback(ctx)

	// A write in a rolled-back block stays, and the ROLLBACK warns.
	var notices []*pgconn.Notice
	cfg, err := pgx.ParseConfig("postgres://hummer@" + addr + "/hummer?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n) }
	conn2, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(context.Background())
	tx, err = conn2.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO acct VALUES (3, 30)"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if len(notices) != 1 || notices[0].Severity != "WARNING" || notices[0].Code != "01000" ||
		notices[0].Message != "the writes of this transaction block were already committed" ||
		!strings.Contains(notices[0].Detail, "1 such statement was committed") {
		t.Errorf("ROLLBACK's notices: %+v", notices)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM acct").Scan(&n); err != nil || n != 2 {
		t.Errorf("rows: %d %v, want 2 (the rolled-back block's INSERT committed as it ran)", n, err)
	}

	// A cursor read with prepared FETCHes: their columns are the cursor's.
	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "DECLARE c CURSOR FOR SELECT id, n FROM acct ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int64{1, 3} {
		var id, n int64
		if err := tx.QueryRow(ctx, "FETCH 1 FROM c").Scan(&id, &n); err != nil || id != want || n != 10*want {
			t.Errorf("FETCH: %d %d %v, want %d %d", id, n, err, want, 10*want)
		}
	}
	if tag, err := tx.Exec(ctx, "MOVE ALL IN c"); err != nil || tag.String() != "MOVE 0" {
		t.Errorf("MOVE ALL at the end: %v %v, want MOVE 0", tag, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// txPsql runs the real psql with args in dir and returns its output (stdout
// and stderr) and exit code.
func txPsql(t *testing.T, addr, dir string, args ...string) (string, int) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "psql", append([]string{"-X", "-h", host, "-p", port, "-U", "hummer", "-d", "hummer"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("psql: %v", err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// TestPsqlTransactions: psql -1 -f, which wraps a file in BEGIN ... COMMIT,
// and \set FETCH_COUNT, which reads a query through a cursor.
func TestPsqlTransactions(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatal("psql is not installed (CI installs postgresql-client)")
	}
	addr := startTestServer(t)
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ok.sql", "CREATE TABLE tx_psql (a BIGINT);\nINSERT INTO tx_psql VALUES (1), (2);\nSELECT sum(a) FROM tx_psql;\n")
	write("bad.sql", "INSERT INTO tx_psql VALUES (3);\nSELECT 1/0;\nSELECT 2;\n")
	write("fetch.sql", "\\set FETCH_COUNT 2\nSELECT g FROM g5 ORDER BY g;\nSELECT g FROM g5 WHERE g < 5 ORDER BY g;\n")

	if out, code := txPsql(t, addr, dir, "-q", "-A", "-t", "-1", "-f", "ok.sql"); out != "3\n" || code != 0 {
		t.Errorf("psql -1 -f ok.sql: exit %d\n%s", code, out)
	}
	// As PostgreSQL: the failure, then 25P02 for the rest, exit code 0; the
	// final COMMIT rolls back, and Hummer warns that the INSERT committed.
	committed := "WARNING:  the writes of this transaction block were already committed\n" +
		"DETAIL:  Hummer commits each statement that writes a table or changes the catalog as it runs, in a transaction block too: 1 such statement was committed, and ROLLBACK did not undo them.\n"
	want := "psql:bad.sql:2: ERROR:  division by zero\n" +
		"psql:bad.sql:3: ERROR:  current transaction is aborted, commands ignored until end of transaction block\n" + committed
	if out, code := txPsql(t, addr, dir, "-q", "-A", "-t", "-1", "-f", "bad.sql"); out != want || code != 0 {
		t.Errorf("psql -1 -f bad.sql: exit %d\n%s\nwant exit 0\n%s", code, out, want)
	}
	// With ON_ERROR_STOP psql stops at the error (rolling back) and exits
	// with 3.
	want = "psql:bad.sql:2: ERROR:  division by zero\n" + committed
	if out, code := txPsql(t, addr, dir, "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-1", "-f", "bad.sql"); out != want || code != 3 {
		t.Errorf("psql -v ON_ERROR_STOP=1 -1 -f bad.sql: exit %d\n%s\nwant exit 3\n%s", code, out, want)
	}
	if out, _ := txPsql(t, addr, dir, "-q", "-A", "-t", "-c", "SELECT count(*) FROM tx_psql"); out != "4\n" {
		t.Errorf("rows after the scripts: %s, want 4 (2, and the two failed blocks' INSERTs, committed as they ran)", out)
	}

	txPsql(t, addr, dir, "-q", "-c", "CREATE TABLE g5 (g BIGINT)", "-c", "INSERT INTO g5 VALUES (1), (2), (3), (4), (5)")
	want = "g\n1\n2\n3\n4\n5\n(5 rows)\ng\n1\n2\n3\n4\n(4 rows)\n"
	if out, code := txPsql(t, addr, dir, "-A", "-f", "fetch.sql"); out != want || code != 0 {
		t.Errorf("FETCH_COUNT 2: exit %d\n%s\nwant\n%s", code, out, want)
	}
}

// txKafka starts a Kafka broker with a topic "events" holding lines, and
// returns its address and a function producing more.
func txKafka(t *testing.T, ctx context.Context, lines ...string) (string, func(...string)) {
	t.Helper()
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	addr := broker.ListenAddrs()[0]
	tr := &kafka.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "events", BatchTimeout: time.Millisecond, Transport: tr}
	t.Cleanup(func() { w.Close() })
	produce := func(lines ...string) {
		t.Helper()
		msgs := make([]kafka.Message, len(lines))
		for i, l := range lines {
			msgs[i] = kafka.Message{Value: []byte(l)}
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	produce(lines...)
	return addr, produce
}

// TestCursorOverStream: a cursor over a Kafka table follows the stream: each
// FETCH n waits for a first change, then returns those there are, up to n;
// statement_timeout ends a FETCH that waits too long, failing the block; the
// block's end stops the cursor's job.
func TestCursorOverStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	broker, produce := txKafka(t, ctx, "m0", "m1", "m2", "m3", "m4")
	addr := startTestServer(t)
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	exec := func(q string) {
		t.Helper()
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(fmt.Sprintf("CREATE TABLE events (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/events'", broker))
	exec("BEGIN")
	exec("DECLARE s CURSOR FOR SELECT line FROM events")
	// fetchUntil fetches n at a time until it has want rows, each "op|line".
	fetchUntil := func(n, want int) []string {
		t.Helper()
		var got []string
		for len(got) < want {
			rows, err := conn.Query(ctx, fmt.Sprintf("FETCH %d FROM s", n))
			if err != nil {
				t.Fatal(err)
			}
			batch := 0
			for rows.Next() {
				var op, line string
				if err := rows.Scan(&op, &line); err != nil {
					t.Fatal(err)
				}
				got = append(got, op+"|"+line)
				batch++
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if batch == 0 || batch > n {
				t.Fatalf("FETCH %d returned %d rows, want 1 to %d", n, batch, n)
			}
		}
		return got
	}
	if got, want := strings.Join(fetchUntil(3, 5), " "), "insert|m0 insert|m1 insert|m2 insert|m3 insert|m4"; got != want {
		t.Errorf("the stream's first rows: %s, want %s", got, want)
	}
	// The next FETCH waits for rows produced after it was sent... or before:
	// either way it answers only once one is there.
	produce("m5", "m6")
	if got, want := strings.Join(fetchUntil(2, 2), " "), "insert|m5 insert|m6"; got != want {
		t.Errorf("rows produced later: %s, want %s", got, want)
	}
	exec("SET statement_timeout = '100ms'")
	_, err := conn.Exec(ctx, "FETCH 1 FROM s")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Errorf("FETCH past statement_timeout: %v, want 57014", err)
	}
	if st := conn.PgConn().TxStatus(); st != 'E' {
		t.Errorf("status %c after the timeout, want E", st)
	}
	exec("ROLLBACK")
	exec("SET statement_timeout = 0")
	// The block's end stopped the cursor's job.
	waitUntil(t, "the cursor's job to stop", nil, func() bool {
		rows, err := conn.Query(ctx, "SHOW PROCESSLIST")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			if vals, _ := rows.Values(); strings.Contains(fmt.Sprint(vals...), "DECLARE") {
				return false
			}
		}
		return rows.Err() == nil
	})
}

// txPython runs a Python script with Debian's python3 (its psycopg2 module)
// and returns its standard output, skipping the test without the module.
func txPython(t *testing.T, script string, args ...string) string {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import psycopg2").Run(); err != nil {
		t.Skip("psycopg2 is not installed for /usr/bin/python3 (Debian's python3-psycopg2): skipping the psycopg2 test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", append([]string{"-c", script}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// psycopg2Script uses psycopg2 in its default mode, where every statement
// runs in a block psycopg2 opens with BEGIN: execute, fetchall, commit, a
// failure and rollback, and named cursors (DECLARE ... CURSOR WITHOUT HOLD
// FOR, FETCH FORWARD itersize FROM, CLOSE) over a table and over a stream.
const psycopg2Script = `
import sys, psycopg2, psycopg2.extensions as ext
conn = psycopg2.connect(host=sys.argv[1], port=int(sys.argv[2]), user="hummer", dbname="hummer")
cur = conn.cursor()
cur.execute("SELECT g, g * 10 FROM g5 ORDER BY g")
print("fetchall", cur.fetchall(), conn.get_transaction_status() == ext.TRANSACTION_STATUS_INTRANS)
conn.commit()
print("commit", conn.get_transaction_status() == ext.TRANSACTION_STATUS_IDLE)
try:
    cur.execute("SELECT 1/0")
except psycopg2.Error as e:
    print("error", e.pgcode, conn.get_transaction_status() == ext.TRANSACTION_STATUS_INERROR)
try:
    cur.execute("SELECT 1")
except psycopg2.Error as e:
    print("error", e.pgcode)
conn.rollback()
named = conn.cursor(name="c")
named.itersize = 2
named.execute("SELECT g FROM g5 ORDER BY g")
print("named", [r[0] for r in named])
named.close()
conn.commit()
stream = conn.cursor(name="s")
stream.itersize = 2
stream.execute("SELECT line FROM events")
rows = []
for r in stream:
    rows.append(r)
    if len(rows) == 5:
        break
print("stream", rows)
stream.close()
conn.rollback()
cur.execute("SELECT count(*) FROM g5")
print("after", cur.fetchone()[0])
conn.close()
`

// TestPsycopg2Transactions: psycopg2 in its default mode.
func TestPsycopg2Transactions(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import psycopg2").Run(); err != nil {
		t.Skip("psycopg2 is not installed for /usr/bin/python3 (Debian's python3-psycopg2): skipping the psycopg2 test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	broker, _ := txKafka(t, ctx, "e0", "e1", "e2", "e3", "e4")
	addr := startTestServer(t)
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	for _, q := range []string{
		"CREATE TABLE g5 (g BIGINT)", "INSERT INTO g5 VALUES (1), (2), (3), (4), (5)",
		fmt.Sprintf("CREATE TABLE events (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/events'", broker),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	host, port, _ := net.SplitHostPort(addr)
	want := "fetchall [(1, 10), (2, 20), (3, 30), (4, 40), (5, 50)] True\n" +
		"commit True\n" +
		"error 22012 True\n" +
		"error 25P02\n" +
		"named [1, 2, 3, 4, 5]\n" +
		"stream [('insert', 'e0'), ('insert', 'e1'), ('insert', 'e2'), ('insert', 'e3'), ('insert', 'e4')]\n" +
		"after 5\n"
	if got := txPython(t, psycopg2Script, host, port); got != want {
		t.Errorf("psycopg2:\n%s\nwant\n%s", got, want)
	}
}

// jdbcTest reads a query with setAutoCommit(false) and setFetchSize(2), which
// pgjdbc reads from a portal two rows at a time, then a prepared one, a
// failure and rollback.
const jdbcTest = `
import java.sql.*;
public class TxTest {
    public static void main(String[] args) throws Exception {
        Connection c = DriverManager.getConnection("jdbc:postgresql://" + args[0] + "/hummer", "hummer", "");
        c.setAutoCommit(false);
        Statement st = c.createStatement();
        st.setFetchSize(2);
        ResultSet rs = st.executeQuery("SELECT g FROM g5 ORDER BY g");
        StringBuilder sb = new StringBuilder("fetch");
        while (rs.next()) sb.append(' ').append(rs.getLong(1));
        rs.close();
        System.out.println(sb);
        c.commit();
        PreparedStatement ps = c.prepareStatement("SELECT g FROM g5 WHERE g > ? ORDER BY g");
        ps.setFetchSize(2);
        ps.setLong(1, 1);
        rs = ps.executeQuery();
        sb = new StringBuilder("prepared");
        while (rs.next()) sb.append(' ').append(rs.getLong(1));
        System.out.println(sb);
        c.rollback();
        try { st.executeQuery("SELECT 1/0"); } catch (SQLException e) { System.out.println("error " + e.getSQLState()); }
        try { st.executeQuery("SELECT 1"); } catch (SQLException e) { System.out.println("error " + e.getSQLState()); }
        c.rollback();
        c.setAutoCommit(true);
        rs = st.executeQuery("SELECT count(*) FROM g5");
        rs.next();
        System.out.println("count " + rs.getLong(1));
        c.close();
    }
}
`

// TestJDBCTransactions: pgjdbc with setAutoCommit(false).
func TestJDBCTransactions(t *testing.T) {
	const jar = "/usr/share/java/postgresql.jar"
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("java is not installed: skipping the JDBC test")
	}
	if _, err := os.Stat(jar); err != nil {
		t.Skip("pgjdbc is not installed (Debian's libpostgresql-jdbc-java): skipping the JDBC test")
	}
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE TABLE g5 (g BIGINT); INSERT INTO g5 VALUES (1), (2), (3), (4), (5)"); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "TxTest.java")
	if err := os.WriteFile(src, []byte(jdbcTest), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, java, "-cp", jar, src, addr)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("java: %v\n%s", err, stderr.String())
	}
	want := "fetch 1 2 3 4 5\nprepared 2 3 4 5\nerror 22012\nerror 25P02\ncount 5\n"
	if string(out) != want {
		t.Errorf("JDBC:\n%s\nwant\n%s", out, want)
	}
}
