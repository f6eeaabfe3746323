package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// The table of the COPY TO tests, and what PostgreSQL 15 sends for it, made
// there as
//
//	create table cw (a bigint, b text, c float8, d bool, e numeric(10,2), f timestamp, g date);
//	insert into cw values
//	 (1, 'plain', 1.5, true, 12.50, '2024-01-02 03:04:05.123', '2024-01-02'),
//	 (-2, E'tab\there\nnl\\back\rcr\x01ctl\bbs\ffeed\vvt', -0.25, false, -0.01, '1999-12-31 23:59:59', '1970-01-01'),
//	 (9000000000, 'has,comma "q" ''s', 1e300, null, 0, null, null),
//	 (null, '\N', 'NaN', null, null, null, '2000-02-29'),
//	 (0, '', 'Infinity', true, 99999999.99, '0001-01-01 00:00:00', null),
//	 (7, ' lead trail ', 1e-5, false, 1, '2024-06-30 12:00:00.000001', '0001-01-01'),
//	 (8, '\.', -1e-300, true, -123456.78, null, null),
//	 (9, 'ünïcødé|;x', 123456789012345, false, 0.5, null, null);
const (
	copyTableDDL = "(a bigint, b text, c double precision, d boolean, e numeric(10,2), f timestamp, g date)"
	// copyQuery's rows are ordered, so that its output is PostgreSQL's byte
	// for byte.
	copyQuery = "SELECT * FROM cw WHERE a IS NOT NULL ORDER BY a"
	// pgText is `COPY cw TO STDOUT`.
	pgText = "1\tplain\t1.5\tt\t12.50\t2024-01-02 03:04:05.123\t2024-01-02\n" +
		"-2\ttab\\there\\nnl\\\\back\\rcr\x01ctl\\bbs\\ffeedvvt\t-0.25\tf\t-0.01\t1999-12-31 23:59:59\t1970-01-01\n" +
		"9000000000\thas,comma \"q\" 's\t1e+300\t\\N\t0.00\t\\N\t\\N\n" +
		"\\N\t\\\\N\tNaN\t\\N\t\\N\t\\N\t2000-02-29\n" +
		"0\t\tInfinity\tt\t99999999.99\t0001-01-01 00:00:00\t\\N\n" +
		"7\t lead trail \t1e-05\tf\t1.00\t2024-06-30 12:00:00.000001\t0001-01-01\n" +
		"8\t\\\\.\t-1e-300\tt\t-123456.78\t\\N\t\\N\n" +
		"9\tünïcødé|;x\t123456789012345\tf\t0.50\t\\N\t\\N\n"
	// pgCSV is `COPY (copyQuery) TO STDOUT WITH (FORMAT csv, HEADER)`.
	pgCSV = "a,b,c,d,e,f,g\n" +
		"-2,\"tab\there\nnl\\back\rcr\x01ctl\bbs\ffeedvvt\",-0.25,f,-0.01,1999-12-31 23:59:59,1970-01-01\n" +
		"0,\"\",Infinity,t,99999999.99,0001-01-01 00:00:00,\n" +
		"1,plain,1.5,t,12.50,2024-01-02 03:04:05.123,2024-01-02\n" +
		"7, lead trail ,1e-05,f,1.00,2024-06-30 12:00:00.000001,0001-01-01\n" +
		"8,\\.,-1e-300,t,-123456.78,,\n" +
		"9,ünïcødé|;x,123456789012345,f,0.50,,\n" +
		"9000000000,\"has,comma \"\"q\"\" 's\",1e+300,,0.00,,\n"
	// pgBinary is `COPY (copyQuery) TO STDOUT WITH (FORMAT binary)`.
	pgBinary = "PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\a\x00\x00\x00\b\xff\xff\xff\xff\xff\xff\xff\xfe\x00\x00\x00\"tab\there\nnl\\back\rcr\x01ctl\bbs\ffeedvvt\x00\x00\x00\b\xbf\xd0\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\n\x00\x01\xff\xff@\x00\x00\x02\x00d\x00\x00\x00\b\xff\xff\xff\xff\xff\xf0\xbd\xc0\x00\x00\x00\x04\xff\xff\xd53" +
		"\x00\a\x00\x00\x00\b\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\b\x7f\xf0\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x01\x00\x00\x00\x0e\x00\x03\x00\x01\x00\x00\x00\x02'\x0f'\x0f&\xac\x00\x00\x00\b\xff\x1f\xe2\xffŜ`\x00\xff\xff\xff\xff" +
		"\x00\a\x00\x00\x00\b\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x05plain\x00\x00\x00\b?\xf8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x01\x00\x00\x00\f\x00\x02\x00\x00\x00\x00\x00\x02\x00\f\x13\x88\x00\x00\x00\b\x00\x02\xb0\xec\x85\x17Ӹ\x00\x00\x00\x04\x00\x00\"?" +
		"\x00\a\x00\x00\x00\b\x00\x00\x00\x00\x00\x00\x00\a\x00\x00\x00\f lead trail \x00\x00\x00\b>\xe4\xf8\xb5\x88\xe3h\xf1\x00\x00\x00\x01\x00\x00\x00\x00\n\x00\x01\x00\x00\x00\x00\x00\x02\x00\x01\x00\x00\x00\b\x00\x02\xbf\x18\xfd\x1b\xd0\x01\x00\x00\x00\x04\xff\xf4\xdb\xf9" +
		"\x00\a\x00\x00\x00\b\x00\x00\x00\x00\x00\x00\x00\b\x00\x00\x00\x02\\.\x00\x00\x00\b\x81\xa5n\x1f\xc2\xf8\xf3Y\x00\x00\x00\x01\x01\x00\x00\x00\x0e\x00\x03\x00\x01@\x00\x00\x02\x00\f\r\x80\x1ex\xff\xff\xff\xff\xff\xff\xff\xff" +
		"\x00\a\x00\x00\x00\b\x00\x00\x00\x00\x00\x00\x00\t\x00\x00\x00\x0eünïcødé|;x\x00\x00\x00\bB\xdc\x12!\x83w\xde@\x00\x00\x00\x01\x00\x00\x00\x00\n\x00\x01\xff\xff\x00\x00\x00\x02\x13\x88\xff\xff\xff\xff\xff\xff\xff\xff" +
		"\x00\a\x00\x00\x00\b\x00\x00\x00\x02\x18q\x1a\x00\x00\x00\x00\x10has,comma \"q\" 's\x00\x00\x00\b~7\xe4<\x88\x00u\x9c\xff\xff\xff\xff\x00\x00\x00\b\x00\x00\x00\x00\x00\x00\x00\x02\xff\xff\xff\xff\xff\xff\xff\xff" +
		"\xff\xff"
)

// sortedLines is text's lines in order, for a table's COPY, whose rows come
// in no set order.
func sortedLines(text string) []string {
	lines := strings.SplitAfter(text, "\n")
	slices.Sort(lines)
	return lines
}

// TestCopyTo runs COPY ... TO STDOUT over a stored table with real psql's
// \copy (which sends COPY ... TO STDOUT and writes the file itself) and pgx,
// and checks the bytes against PostgreSQL's, then reads each format back with
// \copy ... from.
func TestCopyTo(t *testing.T) {
	addr := startHummer(t)
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	if err := os.WriteFile(file("pg.txt"), []byte(pgText), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(file(name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	out := psql(t, addr, fmt.Sprintf(`CREATE TABLE cw %[1]s;
CREATE TABLE from_binary %[1]s;
CREATE TABLE from_csv %[1]s;
\copy cw from '%[2]s'
\copy cw to '%[3]s'
\copy (%[4]s) to '%[5]s' with csv header
\copy (%[4]s) to '%[6]s' with (format binary)
\copy cw to '%[7]s' with binary
\copy from_binary from '%[7]s' with binary
\copy from_binary to '%[8]s'
\copy cw to '%[9]s' with (format csv, header true, force_quote *)
\copy from_csv from '%[9]s' with (format csv, header)
\copy from_csv to '%[10]s'
`, copyTableDDL, file("pg.txt"), file("text"), copyQuery, file("csv"), file("binary"),
		file("all.bin"), file("from_binary"), file("all.csv"), file("from_csv")))
	if strings.Contains(out, "ERROR") {
		t.Fatalf("psql:\n%s", out)
	}
	if got := read("text"); !slices.Equal(sortedLines(got), sortedLines(pgText)) {
		t.Errorf("\\copy cw to file:\n%q\nwant PostgreSQL's (in any order)\n%q", got, pgText)
	}
	if got := read("csv"); got != pgCSV {
		t.Errorf("\\copy (query) to file with csv header:\n%q\nwant PostgreSQL's\n%q", got, pgCSV)
	}
	if got := read("binary"); got != pgBinary {
		t.Errorf("\\copy (query) to file with (format binary):\n%q\nwant PostgreSQL's\n%q", got, pgBinary)
	}
	for _, name := range []string{"from_binary", "from_csv"} {
		if got := read(name); !slices.Equal(sortedLines(got), sortedLines(pgText)) {
			t.Errorf("%s, copied in and out again:\n%q\nwant\n%q", name, got, pgText)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	var buf bytes.Buffer
	tag, err := conn.PgConn().CopyTo(ctx, &buf, "COPY ("+copyQuery+") TO STDOUT WITH (FORMAT csv, HEADER)")
	if err != nil || buf.String() != pgCSV || tag.String() != "COPY 7" {
		t.Errorf("pgx CopyTo csv header: %q, %q, %v; want PostgreSQL's %q, COPY 7", buf.String(), tag, err, pgCSV)
	}
	// The SQLSTATEs PostgreSQL 15 reports for these.
	for _, bad := range []struct{ stmt, code, msg string }{
		{"COPY cw TO '/tmp/cw'", "0A000", "COPY to a file is not supported"},
		{"COPY cw TO STDOUT (FORMAT xml)", "22023", `COPY format "xml" not recognized`},
		{"COPY cw (zz) TO STDOUT", "42703", `column "zz" of relation "cw" does not exist`},
		{"COPY cw (a) TO STDOUT (FORMAT csv, FORCE_QUOTE (b))", "42P10", `FORCE_QUOTE column "b" not referenced by COPY`},
		{"COPY cw TO STDOUT (HEADER match)", "0A000", `cannot use "match" with HEADER in COPY TO`},
		{"COPY nosuch TO STDOUT", "42P01", `relation "nosuch" does not exist`},
		{"COPY cw TO STDOUT (bogus)", "42601", `option "bogus" not recognized`},
	} {
		_, err := conn.PgConn().CopyTo(ctx, &buf, bad.stmt)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != bad.code || pe.Message != bad.msg && !strings.HasPrefix(pe.Message, bad.msg+":") {
			t.Errorf("%s: %v, want %s %s", bad.stmt, err, bad.code, bad.msg)
		}
	}
}

// TestCopyToStream runs COPY over a Kafka table, a stream that never ends:
// its rows are changes, each with its kind in the op column, and the COPY
// runs until statement_timeout or a cancel stops it with 57014, as
// PostgreSQL reports either.
func TestCopyToStream(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "copy_lines"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(broker.ListenAddrs()[0]), Topic: "copy_lines", BatchTimeout: time.Millisecond, Transport: tr}
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("one, two")}, kafka.Message{Value: []byte("three")}); err != nil {
		t.Fatal(err)
	}
	w.Close()

	addr := startHummer(t)
	admin := connectPgx(t, ctx, addr)
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE TABLE copy_lines (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/copy_lines'", broker.ListenAddrs()[0])); err != nil {
		t.Fatal(err)
	}
	// noCopyJob waits until no job of stmt runs.
	noCopyJob := func(t *testing.T, stmt string) {
		t.Helper()
		waitFor(t, ctx, "the COPY's job to stop", func() bool {
			rows, err := admin.Query(ctx, "SHOW PROCESSLIST")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var statement, state string
				if err := rows.Scan(nil, &statement, &state, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil); err != nil {
					t.Fatal(err)
				}
				if statement == stmt && state == "running" {
					return false
				}
			}
			return rows.Err() == nil
		})
	}

	t.Run("statement_timeout", func(t *testing.T) {
		conn := connectPgx(t, ctx, addr)
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "SET statement_timeout = '500ms'"); err != nil {
			t.Fatal(err)
		}
		const stmt = "COPY (SELECT line FROM copy_lines) TO STDOUT WITH (FORMAT csv, HEADER)"
		var buf bytes.Buffer
		_, err := conn.PgConn().CopyTo(ctx, &buf, stmt) // ends at the timeout, or with ctx
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" || pe.Message != "canceling statement due to statement timeout" {
			t.Fatalf("COPY over a stream with statement_timeout: %v, want 57014 canceling statement due to statement timeout", err)
		}
		lines := strings.SplitAfter(buf.String(), "\n")
		if lines[0] != "op,line\n" {
			t.Errorf("header %q, want op,line", lines[0])
		}
		for _, l := range lines[1:] { // whichever rows came before the timeout
			if l != "" && l != "insert,\"one, two\"\n" && l != "insert,three\n" {
				t.Errorf("COPY line %q", l)
			}
		}
		var n int64
		if err := conn.QueryRow(ctx, "SELECT 40 + 2").Scan(&n); err != nil || n != 42 {
			t.Errorf("after the timeout, SELECT 40 + 2 = %d, %v", n, err)
		}
		noCopyJob(t, stmt)
	})

	t.Run("psql statement_timeout", func(t *testing.T) {
		out, _ := psqlErr(addr, "SET statement_timeout = '500ms';\nCOPY (SELECT line FROM copy_lines) TO STDOUT;\nSELECT 'after';\n")
		if !strings.Contains(out, "ERROR:  canceling statement due to statement timeout") || !strings.Contains(out, "after") {
			t.Errorf("psql:\n%s", out)
		}
	})

	// A CancelRequest (pgx sends one for a cancelled context when configured
	// to) stops a binary COPY once its first row came: the op column first,
	// as text.
	t.Run("cancel", func(t *testing.T) {
		cfg := pgxConfig(t, addr)
		cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 30 * time.Second}
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		const stmt = "COPY (SELECT line FROM copy_lines) TO STDOUT (FORMAT binary)"
		copyCtx, stopCopy := context.WithCancel(ctx)
		defer stopCopy()
		var first []byte
		_, err = conn.PgConn().CopyTo(copyCtx, writerFunc(func(p []byte) (int, error) {
			if first == nil {
				first = append([]byte(nil), p...)
				stopCopy()
			}
			return len(p), nil
		}), stmt)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" || pe.Message != "canceling statement due to user request" {
			t.Fatalf("cancelled COPY: %v, want 57014 canceling statement due to user request", err)
		}
		// The signature, flags and extension, then two fields: "insert" and
		// the line.
		want := "PGCOPY\n\xff\r\n\x00" + "\x00\x00\x00\x00\x00\x00\x00\x00" + "\x00\x02" + "\x00\x00\x00\x06insert\x00\x00\x00"
		if !strings.HasPrefix(string(first), want) {
			t.Errorf("first binary COPY data %q, want it to start %q", first, want)
		}
		noCopyJob(t, stmt)
	})
}

// TestCopyTimeZone: COPY FROM STDIN reads timestamptz text without a zone in
// the session's TimeZone and with one (+00) as that instant, and COPY TO
// writes timestamptz in the session's zone; the rows are what PostgreSQL 15
// printed for the same script.
func TestCopyTimeZone(t *testing.T) {
	addr := startHummer(t)
	out := psql(t, addr, `CREATE TABLE tz1 (id bigint, ts timestamptz);
SET TIME ZONE 'Europe/Paris';
COPY tz1 FROM STDIN;
3	2024-07-01 12:00
4	2024-07-01 12:00+00
\.
COPY tz1 FROM STDIN WITH (FORMAT csv);
5,2024-01-15 08:30:00.5 America/New_York
\.
COPY (SELECT id, ts FROM tz1 ORDER BY id) TO STDOUT WITH (FORMAT csv);
`)
	want := "3,2024-07-01 12:00:00+02\n4,2024-07-01 14:00:00+02\n5,2024-01-15 14:30:00.5+01\n"
	if out != want {
		t.Errorf("psql printed:\n%s\nwant (PostgreSQL's):\n%s", out, want)
	}
}
