package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// TestPgxParams: parameters through pgx's default mode (prepared statements,
// binary parameters and results for the types the server describes) and
// through raw Parse/Bind with declared types in binary, checked against what
// PostgreSQL 15 answers to the same messages.
func TestPgxParams(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, "postgres://hummer@"+addr+"/hummer?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE TABLE pt (id BIGINT, d DATE, ts TIMESTAMP, s TEXT, n DECIMAL(10,2), f DOUBLE PRECISION, b BOOLEAN)"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		var n pgtype.Numeric
		if err := n.Scan(strconv.Itoa(i) + ".50"); err != nil {
			t.Fatal(err)
		}
		_, err := conn.Exec(ctx, "INSERT INTO pt VALUES ($1, $2, $3, $4, $5, $6, $7)", int64(i),
			time.Date(2024, 1, i, 0, 0, 0, 0, time.UTC), time.Date(2024, 1, i, 10, 30, 0, 250000000, time.UTC),
			"s", n, float64(i)+0.25, i%2 == 0)
		if err != nil {
			t.Fatal(err)
		}
	}
	ids := func(query string, args ...any) string {
		t.Helper()
		rows, err := conn.Query(ctx, query, args...)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		var s []string
		for _, v := range got {
			s = append(s, string(rune('0'+v)))
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		query string
		args  []any
		want  string
	}{
		{"SELECT id FROM pt ORDER BY id LIMIT $1 OFFSET $2", []any{2, 1}, "2,3"},
		{"SELECT id FROM pt ORDER BY id LIMIT $1 OFFSET $2", []any{nil, 3}, "4"},
		{"SELECT id FROM pt ORDER BY id OFFSET $1 ROWS FETCH FIRST $2 ROWS ONLY", []any{1, 1}, "2"},
		{"SELECT id FROM pt ORDER BY id OFFSET $1", []any{2}, "3,4"},
		{"SELECT id FROM pt WHERE d = $1", []any{time.Date(2024, 1, 3, 0, 0, 0, 0, time.UTC)}, "3"},
		{"SELECT id FROM pt WHERE ts > $1 ORDER BY id", []any{time.Date(2024, 1, 3, 10, 30, 0, 0, time.UTC)}, "3,4"},
		{"SELECT id FROM pt WHERE n > $1 AND f < $2 AND b = $3 ORDER BY id", []any{1.5, 4.5, true}, "2,4"},
	} {
		if got := ids(c.query, c.args...); got != c.want {
			t.Errorf("%s %v: %s, want %s", c.query, c.args, got, c.want)
		}
	}
	var pe *pgconn.PgError
	if _, err := conn.Exec(ctx, "SELECT id FROM pt LIMIT $1", -1); !errors.As(err, &pe) || pe.Code != "2201W" {
		t.Errorf("negative LIMIT: %v, want 2201W", err)
	}

	// Declared types, binary parameters and results: SELECT $1 answers the
	// declared type's value. PostgreSQL answers the declared type's OID; the
	// engine, which has one integer, one float and one text type, its own.
	m := pgtype.NewMap()
	day := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	ts := time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)
	pc := conn.PgConn()
	for _, c := range []struct {
		oid, want uint32 // declared, and the result column's OID
		value     any
	}{
		{21, 20, int16(-3)}, // PostgreSQL: 21
		{23, 20, int32(70000)},
		{20, 20, int64(1) << 40},
		{700, 701, float32(1.5)}, // PostgreSQL: 700
		{701, 701, 2.25},
		{16, 16, true},
		{25, 25, "héllo"},
		{1043, 25, "v"}, // PostgreSQL: 1043
		{1082, 1082, day},
		{1114, 1114, ts},
		{1184, 1184, ts},
		{17, 17, []byte{0, 1, 0xff}},
	} {
		data, err := m.Encode(c.oid, pgtype.BinaryFormatCode, c.value, nil)
		if err != nil {
			t.Fatal(err)
		}
		res := pc.ExecParams(ctx, "SELECT $1", [][]byte{data}, []uint32{c.oid}, []int16{1}, []int16{1}).Read()
		if res.Err != nil || len(res.Rows) != 1 || len(res.FieldDescriptions) != 1 {
			t.Errorf("OID %d: %v %v", c.oid, res.Err, res.Rows)
			continue
		}
		if got := res.FieldDescriptions[0].DataTypeOID; got != c.want {
			t.Errorf("OID %d: result OID %d, want %d", c.oid, got, c.want)
		}
		var got any
		if err := m.Scan(c.want, pgtype.BinaryFormatCode, res.Rows[0][0], &got); err != nil {
			t.Errorf("OID %d: scanning %x: %v", c.oid, res.Rows[0][0], err)
			continue
		}
		if !sameParam(got, c.value) {
			t.Errorf("OID %d: %v (%T), want %v", c.oid, got, got, c.value)
		}
	}
	// Without parameters (the simple protocol) a $1 is 42P02, as in PostgreSQL.
	_, err = pc.Exec(ctx, "SELECT id FROM pt LIMIT $1").ReadAll()
	if !errors.As(err, &pe) || pe.Code != "42P02" {
		t.Errorf("simple protocol $1: %v, want 42P02", err)
	}
}

// sameParam compares a value read back with the one sent, as numbers for the
// integer and float types whose width the engine does not keep.
func sameParam(got, want any) bool {
	num := func(v any) (float64, bool) {
		switch v := v.(type) {
		case int16:
			return float64(v), true
		case int32:
			return float64(v), true
		case int64:
			return float64(v), true
		case float32:
			return float64(v), true
		case float64:
			return v, true
		}
		return 0, false
	}
	if g, ok := num(got); ok {
		w, ok := num(want)
		return ok && g == w
	}
	if g, ok := got.(time.Time); ok {
		w, ok := want.(time.Time)
		return ok && g.Equal(w)
	}
	if g, ok := got.([]byte); ok {
		w, ok := want.([]byte)
		return ok && string(g) == string(w)
	}
	return got == want
}

// clientScript runs a client's script from testdata/clients against a fresh
// server and returns its output, or skips the test when the client is not
// installed.
func clientScript(t *testing.T, check []string, cmd func(addr string) *exec.Cmd) string {
	t.Helper()
	if err := exec.Command(check[0], check[1:]...).Run(); err != nil {
		t.Skipf("%s: %v (install the client to run this test)", strings.Join(check, " "), err)
	}
	addr := startTestServer(t)
	c := cmd(addr)
	c.Dir = "testdata/clients"
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", c.Args, err, out)
	}
	return string(out)
}

// TestPsycopgParams: psycopg 3 (server-side parameters, text and binary) and
// psycopg2 (interpolated literals) with parameters of every type. Each line
// is what the script prints against PostgreSQL 15.
func TestPsycopgParams(t *testing.T) {
	py := "/usr/bin/python3"
	out := clientScript(t, []string{py, "-c", "import psycopg, psycopg2"}, func(addr string) *exec.Cmd {
		host, port, _ := strings.Cut(addr, ":")
		return exec.Command(py, "params_psycopg.py", "host="+host+" port="+port+" user=hummer dbname=hummer")
	})
	want := `row 5: (5, datetime.date(2024, 1, 5), datetime.datetime(2024, 1, 5, 10, 30, 0, 250000), 's5', Decimal('5.50'), 5.25, False)
row 2 binary=False: (2, datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2, 10, 30, 0, 250000), 's2', Decimal('2.50'), 2.25, True)
row 2 binary=True: (2, datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2, 10, 30, 0, 250000), 's2', Decimal('2.50'), 2.25, True)
limit offset: [(2,), (3,)]
limit: [(1,)]
date =: [(3,)]
date between binary: [(2,), (3,)]
timestamp >: [(4,), (5,)]
timestamptz <: [(1,)]
numeric float bool: [(2,), (4,)]
select params: (42, 1.5, True, datetime.date(2024, 1, 2), 'x')
param + 1: (42,)
bytea: (b'ab\x00c',)
psycopg2 date timestamp: (datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2, 3, 4, 5, 6))
psycopg2 date =: [(4,)]
psycopg2 limit offset: [(4,), (5,)]
psycopg2 numeric bool float: (Decimal('12.34'), True, Decimal('1.5'))
`
	if out != want {
		t.Errorf("psycopg output:\n%s\nwant:\n%s", out, want)
	}
}

// TestJDBCTimeZone: pgjdbc in a JVM of zone Europe/Paris, which it sends as
// TimeZone at start-up: timestamptz results, setTimestamp, an
// OffsetDateTime and zone-less text parameters, AT TIME ZONE. want is what
// the same program printed against PostgreSQL 15.
func TestJDBCTimeZone(t *testing.T) {
	jar := "/usr/share/java/postgresql.jar"
	if _, err := os.Stat(jar); err != nil {
		t.Skipf("%s: %v (install libpostgresql-jdbc-java to run this test)", jar, err)
	}
	out := clientScript(t, []string{"java", "-version"}, func(addr string) *exec.Cmd {
		return exec.Command("java", "-Duser.timezone=Europe/Paris", "-cp", jar, "TimeZoneJdbc.java", "jdbc:postgresql://"+addr+"/hummer", "hummer")
	})
	want := `zone Europe/Paris
2024-07-01T10:00:00Z 2024-07-01 14:00:00+02 2024-07-01T10:00Z
2024-01-01T12:00:00Z 2024-07-01 10:00:00 2024-03-31 03:30:00+02
`
	if out != want {
		t.Errorf("TimeZoneJdbc.java printed:\n%s\nwant (PostgreSQL's):\n%s", out, want)
	}
}

// TestJDBCParams: pgjdbc's PreparedStatement with LIMIT ? OFFSET ? (past
// prepareThreshold too, server-prepared and binary), dates, timestamps,
// decimals and booleans. Each line is what it prints against PostgreSQL 15
// but setInt's SELECT ?, which PostgreSQL answers as int4 (Integer) and the
// engine, whose one integer type is bigint, as int8 (Long).
func TestJDBCParams(t *testing.T) {
	jar := "/usr/share/java/postgresql.jar"
	if _, err := os.Stat(jar); err != nil {
		t.Skipf("%s: %v (install libpostgresql-jdbc-java to run this test)", jar, err)
	}
	out := clientScript(t, []string{"java", "-version"}, func(addr string) *exec.Cmd {
		return exec.Command("java", "-cp", jar, filepath.Join("Params.java"), "jdbc:postgresql://"+addr+"/hummer", "hummer")
	})
	want := `limit offset run 1: 2 (Long int8); 3 (Long int8);
limit offset run 2: 3 (Long int8); 4 (Long int8);
limit offset run 3: 1 (Long int8); 2 (Long int8);
limit offset run 4: 2 (Long int8); 3 (Long int8);
limit offset run 5: 3 (Long int8); 4 (Long int8);
limit offset run 6: 1 (Long int8); 2 (Long int8);
row 2: 2 (Long int8) 2024-01-02 (Date date) 2024-01-02 10:30:00.25 (Timestamp timestamp) s2 (String text) 2.50 (BigDecimal numeric) 2.25 (Double float8) true (Boolean bool);
timestamp >=: 3 (Long int8); 4 (Long int8);
select setInt: 42 (Long int8);
select setLong setDouble setBoolean: 42 (Long int8) 1.5 (Double float8) true (Boolean bool);
setInt + 1: 42 (Long int8);
`
	if out != want {
		t.Errorf("JDBC output:\n%s\nwant:\n%s", out, want)
	}
}
