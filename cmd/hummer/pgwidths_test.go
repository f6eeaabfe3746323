package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// widthsSetup is the DDL given to Hummer here and to PostgreSQL 15, whose
// answers the tests below hold: columns declared with PostgreSQL's narrower
// integer, float and character types.
const widthsSetup = `CREATE TABLE w (a INT NOT NULL, b SMALLINT, c REAL, d VARCHAR(5), e CHAR(3), f INTEGER DEFAULT 7, g CHARACTER VARYING(20), h FLOAT, i INT4, j FLOAT4);
INSERT INTO w (a, b, c, d, e, g, h, i, j) VALUES (2147483647, -32768, 0.1, 'abcde', 'ab', 'xyz', 0.1, -2147483648, 1234567);`

// widthsServer starts a server holding widthsSetup's table and returns its
// address and a connection to it, closed when t ends.
func widthsServer(t *testing.T, ctx context.Context) (string, *pgx.Conn) {
	t.Helper()
	srv := startTestServer(t)
	conn := connectPgx(t, ctx, srv)
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, stmt := range strings.Split(widthsSetup, ";\n") {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return srv, conn
}

// columnOIDs runs query in mode and returns the type OIDs its columns are
// described with.
func columnOIDs(t *testing.T, ctx context.Context, conn *pgx.Conn, mode pgx.QueryExecMode, query string) []uint32 {
	t.Helper()
	rows, err := conn.Query(ctx, query, mode)
	if err != nil {
		t.Fatalf("%v %s: %v", mode, query, err)
	}
	defer rows.Close()
	var oids []uint32
	for _, fd := range rows.FieldDescriptions() {
		oids = append(oids, fd.DataTypeOID)
	}
	return oids
}

// TestPgDeclaredWidths: columns declared INT, SMALLINT, REAL, VARCHAR(n)
// and CHAR(n) are described to clients with PostgreSQL's type OIDs and
// typmods and sent in their text and binary forms, as PostgreSQL 15 sends
// them for the same table (the want values were read from it with
// psql and pgx).
func TestPgDeclaredWidths(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, conn := widthsServer(t, ctx)
	// PostgreSQL 15's RowDescription for SELECT * FROM w: type OID, typlen
	// and typmod of each column.
	type desc struct {
		oid  uint32
		size int16
		mod  int32
	}
	wantDesc := []desc{{23, 4, -1}, {21, 2, -1}, {700, 4, -1}, {1043, -1, 9}, {1042, -1, 7},
		{23, 4, -1}, {1043, -1, 24}, {701, 8, -1}, {23, 4, -1}, {700, 4, -1}}
	// The row's text as PostgreSQL prints it: real in float4's shortest
	// digits, character(3) padded with blanks.
	wantText := []string{"2147483647", "-32768", "0.1", "abcde", "ab ", "7", "xyz", "0.1", "-2147483648", "1.234567e+06"}
	for _, mode := range allModes {
		rows, err := conn.Query(ctx, "SELECT * FROM w", mode)
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		fds := rows.FieldDescriptions()
		for i, fd := range fds {
			if got := (desc{fd.DataTypeOID, fd.DataTypeSize, fd.TypeModifier}); got != wantDesc[i] {
				t.Errorf("%v: column %s described as %+v, want %+v", mode, fd.Name, got, wantDesc[i])
			}
		}
		if !rows.Next() {
			t.Fatalf("%v: no row: %v", mode, rows.Err())
		}
		raw := rows.RawValues()
		for i, fd := range fds {
			if fd.Format == pgtype.TextFormatCode {
				if string(raw[i]) != wantText[i] {
					t.Errorf("%v: column %s is %q, want %q", mode, fd.Name, raw[i], wantText[i])
				}
				continue
			}
			// Binary: decoded by the described type, as PostgreSQL's text of
			// the value decodes (a binary int2 or float4 of the wrong width
			// fails here).
			var got, want any
			if err := conn.TypeMap().Scan(fd.DataTypeOID, fd.Format, raw[i], &got); err != nil {
				t.Errorf("%v: column %s (%x): %v", mode, fd.Name, raw[i], err)
				continue
			}
			if err := conn.TypeMap().Scan(fd.DataTypeOID, pgtype.TextFormatCode, []byte(wantText[i]), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%v: column %s is %v (%T) in binary, want %v (%T)", mode, fd.Name, got, got, want, want)
			}
		}
		rows.Close()
	}

	// The system catalog's oid, int2 and float4 columns, as PostgreSQL
	// describes pg_class's.
	const pgClass = "SELECT oid, relnatts, reltuples FROM pg_class WHERE relname = 'w'"
	oids := columnOIDs(t, ctx, conn, pgx.QueryExecModeCacheStatement, pgClass)
	var relnatts int16
	var reltuples float32
	var relid uint32
	err := conn.QueryRow(ctx, pgClass).Scan(&relid, &relnatts, &reltuples)
	if !reflect.DeepEqual(oids, []uint32{26, 21, 700}) || relnatts != 10 || err != nil {
		t.Errorf("pg_class: types %v, relnatts %d, %v; want [26 21 700], 10", oids, relnatts, err)
	}

	// OID, VARCHAR without a length and FLOAT, which MySQL's grammar reads
	// otherwise or not at all: PostgreSQL's oid, character varying and
	// double precision; an oid takes a negative integer as 2^32 less it.
	if _, err := conn.Exec(ctx, "CREATE TABLE o (a OID, b VARCHAR, c CHARACTER VARYING, f FLOAT)"); err != nil {
		t.Fatal(err)
	}
	if want, oids := []uint32{26, 1043, 1043, 701}, columnOIDs(t, ctx, conn, pgx.QueryExecModeCacheStatement, "SELECT * FROM o"); !reflect.DeepEqual(oids, want) {
		t.Errorf("o: types %v, want %v", oids, want)
	}
	var wrapped uint32
	if err := conn.QueryRow(ctx, "SELECT (-1)::oid").Scan(&wrapped); err != nil || wrapped != 4294967295 {
		t.Errorf("(-1)::oid: %d, %v; want 4294967295", wrapped, err)
	}
	var pe *pgconn.PgError
	if _, err := conn.Exec(ctx, "SELECT (-2147483649)::oid"); !errors.As(err, &pe) || pe.Code != "22003" || pe.Message != "OID out of range" {
		t.Errorf("(-2147483649)::oid: %v, want 22003 OID out of range", err)
	}

	// A CSV file table's columns are read as the column's input function
	// reads them: a character(3) without its blanks, a varchar(5) no
	// longer than 5 (a bad row, as a bad number is).
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ok.csv"), []byte("1,ab   ,abcde\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "toolong.csv"), []byte("1,ab,abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ok", "toolong"} {
		ddl := fmt.Sprintf("CREATE TABLE %s (a INT, e CHAR(3), d VARCHAR(5)) ENGINE=file CONNECTION='file://%s/%s.csv?format=csv'", name, dir, name)
		if _, err := conn.Exec(ctx, ddl); err != nil {
			t.Fatal(err)
		}
	}
	var bar, csvPadded string
	if err := conn.QueryRow(ctx, "SELECT e || '|', e FROM ok").Scan(&bar, &csvPadded); err != nil || bar != "ab|" || csvPadded != "ab " {
		t.Errorf("CSV character(3): %q %q, %v; want ab| and 'ab '", bar, csvPadded, err)
	}
	if _, err := conn.Exec(ctx, "SELECT * FROM toolong"); err == nil || !strings.Contains(err.Error(), "value too long for type character varying(5)") {
		t.Errorf("CSV varchar(5) too long: %v", err)
	}

	// Parameters take the declared types, as PostgreSQL infers them (its
	// ParameterDescription for the same statement: a character(n)'s is
	// bpchar, a character varying(n)'s text), and bind in binary.
	params := "SELECT a FROM w WHERE a = $1 AND e = $2 AND d = $3 AND b = $4 AND c = $5 AND f + $6 > 0 AND c < $7"
	sd, err := conn.PgConn().Prepare(ctx, "", params, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint32{23, 1042, 25, 21, 700, 23, 700}; !reflect.DeepEqual(sd.ParamOIDs, want) {
		t.Errorf("parameter types %v, want %v", sd.ParamOIDs, want)
	}
	var a1 int32
	err = conn.QueryRow(ctx, params, pgx.QueryExecModeExec, int32(2147483647), "ab   ", "abcde", int16(-32768), float32(0.1), int32(1), float32(1)).Scan(&a1)
	if err != nil || a1 != 2147483647 {
		t.Errorf("binary parameters: %d, %v; want 2147483647", a1, err)
	}

	// Typed values in binary: pgx's int16, int32, float32 and string.
	var (
		a, i int32
		b    int16
		c, j float32
		e    string
	)
	err = conn.QueryRow(ctx, "SELECT a, b, c, e, i, j FROM w", pgx.QueryExecModeExec).Scan(&a, &b, &c, &e, &i, &j)
	if err != nil || a != 2147483647 || b != -32768 || c != 0.1 || e != "ab " || i != -2147483648 || j != 1234567 {
		t.Errorf("binary: %v %v %v %q %v %v, %v", a, b, c, e, i, j, err)
	}

	// Out of range and too long, as PostgreSQL refuses them (its SQLSTATE
	// and message for each statement; an error while a query runs names
	// the failing step in CONTEXT); an explicit cast to varchar(n) cuts,
	// and blanks past n go.
	for _, c := range []struct{ sql, code, msg string }{
		{"INSERT INTO w (a) VALUES (2147483648)", "22003", "integer out of range"},
		{"INSERT INTO w (a, b) VALUES (1, 32768)", "22003", "smallint out of range"},
		{"INSERT INTO w (a, d) VALUES (1, 'abcdef')", "22001", "value too long for type character varying(5)"},
		{"INSERT INTO w (a, e) VALUES (1, 'abcd')", "22001", "value too long for type character(3)"},
		{"INSERT INTO w (a, c) VALUES (1, 1e300::float8)", "22003", "value out of range: overflow"},
		{"SELECT 3000000000::int", "22003", "integer out of range"},
		{"SELECT CAST(-40000 AS SMALLINT)", "22003", "smallint out of range"},
		{"SELECT CAST('99999' AS int2)", "22003", `value "99999" is out of range for type smallint`},
		{"SELECT '3000000000'::int", "22003", `value "3000000000" is out of range for type integer`},
		{"INSERT INTO w (a, b) SELECT a, a FROM w", "22003", "smallint out of range"},
	} {
		_, err := conn.Exec(ctx, c.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code || pe.Message != c.msg {
			t.Errorf("%s: %v, want %s %s", c.sql, err, c.code, c.msg)
		}
	}
	// COPY's text checks each value as the column's input function does.
	for _, c := range []struct{ data, cols, code, msg string }{
		{"1\n3000000000\n", "a", "22003", `value "3000000000" is out of range for type integer`},
		{"1\tabcdefg\n", "a, d", "22001", "value too long for type character varying(5)"},
		{"1\t1e39\n", "a, c", "22003", `"1e39" is out of range for type real`},
	} {
		_, err := conn.PgConn().CopyFrom(ctx, strings.NewReader(c.data), "COPY w ("+c.cols+") FROM STDIN")
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code || pe.Message != c.msg {
			t.Errorf("COPY %q: %v, want %s %s", c.data, err, c.code, c.msg)
		}
	}
	var cut, trimmed, padded string
	err = conn.QueryRow(ctx, "SELECT 'abcdef'::varchar(3), CAST('ab   ' AS VARCHAR(2)), CAST('ab' AS CHAR(3)) || '|'").Scan(&cut, &trimmed, &padded)
	if err != nil || cut != "abc" || trimmed != "ab" || padded != "ab|" {
		t.Errorf("casts: %q %q %q, %v; want abc ab ab|", cut, trimmed, padded, err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO w (a, d, e) VALUES (1, 'abcde   ', 'x  ')"); err != nil {
		t.Errorf("blanks past the length: %v", err)
	}
	var d, e2 string
	var n int64
	err = conn.QueryRow(ctx, "SELECT d, e, length(e) FROM w WHERE a = 1 AND e = 'x'").Scan(&d, &e2, &n)
	if err != nil || d != "abcde" || e2 != "x  " || n != 1 {
		t.Errorf("stored: %q %q %d, %v; want abcde, 'x  ', 1", d, e2, n, err)
	}

	// The catalog, as PostgreSQL's for the same table.
	got := psql(t, srv, `SELECT attname, atttypid, atttypmod, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'w'::regclass AND attnum > 0 ORDER BY attnum;
SELECT column_name, data_type, character_maximum_length, character_octet_length, numeric_precision, udt_name FROM information_schema.columns WHERE table_name = 'w' ORDER BY ordinal_position;`)
	want := `a|23|-1|integer
b|21|-1|smallint
c|700|-1|real
d|1043|9|character varying(5)
e|1042|7|character(3)
f|23|-1|integer
g|1043|24|character varying(20)
h|701|-1|double precision
i|23|-1|integer
j|700|-1|real
a|integer|||32|int4
b|smallint|||16|int2
c|real|||24|float4
d|character varying|5|20||varchar
e|character|3|12||bpchar
f|integer|||32|int4
g|character varying|20|80||varchar
h|double precision|||53|float8
i|integer|||32|int4
j|real|||24|float4
`
	if got != want {
		t.Errorf("catalog:\n%s\nwant (PostgreSQL's):\n%s", got, want)
	}
}

// psqlDescribeWidthsWant is what psql 15 printed for \d w and \d+ w against
// PostgreSQL 15 given widthsSetup's CREATE TABLE.
var psqlDescribeWidthsWant = map[string]string{
	`\d w`: `                        Table "public.w"
 Column |         Type          | Collation | Nullable | Default 
--------+-----------------------+-----------+----------+---------
 a      | integer               |           | not null | 
 b      | smallint              |           |          | 
 c      | real                  |           |          | 
 d      | character varying(5)  |           |          | 
 e      | character(3)          |           |          | 
 f      | integer               |           |          | 7
 g      | character varying(20) |           |          | 
 h      | double precision      |           |          | 
 i      | integer               |           |          | 
 j      | real                  |           |          | 
`,
	`\d+ w`: `                                                   Table "public.w"
 Column |         Type          | Collation | Nullable | Default | Storage  | Compression | Stats target | Description 
--------+-----------------------+-----------+----------+---------+----------+-------------+--------------+-------------
 a      | integer               |           | not null |         | plain    |             |              | 
 b      | smallint              |           |          |         | plain    |             |              | 
 c      | real                  |           |          |         | plain    |             |              | 
 d      | character varying(5)  |           |          |         | extended |             |              | 
 e      | character(3)          |           |          |         | extended |             |              | 
 f      | integer               |           |          | 7       | plain    |             |              | 
 g      | character varying(20) |           |          |         | extended |             |              | 
 h      | double precision      |           |          |         | plain    |             |              | 
 i      | integer               |           |          |         | plain    |             |              | 
 j      | real                  |           |          |         | plain    |             |              | 
Access method: heap
`,
}

// TestPsqlDescribeWidths compares what psql's \d prints for a table of
// declared widths and lengths with what it printed against PostgreSQL 15.
func TestPsqlDescribeWidths(t *testing.T) {
	addr := startTestServer(t)
	psql(t, addr, strings.SplitN(widthsSetup, "\n", 2)[0])
	host, port, _ := net.SplitHostPort(addr)
	for cmd, want := range psqlDescribeWidthsWant {
		out, err := exec.Command("psql", "-X", "-h", host, "-p", port, "-U", "hummer", "-d", "hummer", "-c", cmd).CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", cmd, err, out)
			continue
		}
		if got := strings.TrimRight(string(out), "\n") + "\n"; got != want {
			t.Errorf("%s printed:\n%s\nPostgreSQL's psql printed:\n%s", cmd, got, want)
		}
	}
}

// TestPgArithmeticWidths: arithmetic over integer, smallint and real columns
// is typed as PostgreSQL 15 types it (psql's \gdesc there for the same
// expressions over widthsSetup's w), has its values, and fails past the
// type's range as PostgreSQL's operators do (their messages; the failing
// step in CONTEXT).
func TestPgArithmeticWidths(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, conn := widthsServer(t, ctx)
	// PostgreSQL: integer (an integer and a constant; a smallint and an
	// integer), bigint-free throughout; real over two reals, double
	// precision over a real and a numeric constant, a double or an
	// integer; and the values of w's row.
	query := "SELECT f + 1, b / (b + 32769), b * 2, i + 2147483647, c + j, c + 1.5, c * h, -f, f - b, f % 4, f * 3, f + c, a - 1, c * c, j * j FROM w"
	wantOIDs := []uint32{23, 23, 23, 23, 700, 701, 701, 23, 23, 23, 23, 701, 23, 700, 700}
	wantText := []string{"8", "-32768", "-65536", "-1", "1.2345671e+06", "1.6000000014901161", "0.010000000149011612", "-7", "32775", "3", "21", "7.100000001490116", "2147483646", "0.010000001", "1.5241557e+12"}
	for _, mode := range allModes {
		if oids := columnOIDs(t, ctx, conn, mode, query); !reflect.DeepEqual(oids, wantOIDs) {
			t.Errorf("%v: types %v, want %v", mode, oids, wantOIDs)
		}
	}
	// Constants: an integer constant is an integer where it fits, and so
	// is arithmetic over such constants, which fails past the integer's
	// range (PostgreSQL: integer, integer, bigint, integer, integer,
	// integer, bigint; 22003 "integer out of range").
	if oids := columnOIDs(t, ctx, conn, pgx.QueryExecModeCacheStatement, "SELECT 1, 1 + 1, 2147483648, 7 / 2, -1, -2147483648, -2147483649"); !reflect.DeepEqual(oids, []uint32{23, 23, 20, 23, 23, 23, 20}) {
		t.Errorf("constants: types %v, want [23 23 20 23 23 23 20]", oids)
	}
	var pgErr *pgconn.PgError
	if _, err := conn.Exec(ctx, "SELECT 2147483647 + 1"); !errors.As(err, &pgErr) || pgErr.Code != "22003" || pgErr.Message != "integer out of range" {
		t.Errorf("SELECT 2147483647 + 1: %v, want 22003 integer out of range", err)
	}
	// Aggregates: sum of integers is a bigint, min and max keep the type
	// (PostgreSQL: bigint, bigint, integer, smallint, real; a window's sum
	// of bigints numeric, of integers bigint).
	var sum int64
	err := conn.QueryRow(ctx, "SELECT sum(a) + sum(a), sum(a), sum(b), min(a), max(b), max(c) FROM w").Scan(&sum, nil, nil, nil, nil, nil)
	if err != nil || sum != 4294967294 {
		t.Errorf("sum(a) + sum(a): %d, %v; want 4294967294", sum, err)
	}
	oids := columnOIDs(t, ctx, conn, pgx.QueryExecModeCacheStatement, "SELECT sum(a), sum(b), min(a), max(b), max(c), sum(sum(a)) OVER (), sum(min(a)) OVER () FROM w")
	if want := []uint32{20, 20, 23, 21, 700, 1700, 20}; !reflect.DeepEqual(oids, want) {
		t.Errorf("aggregates: types %v, want %v", oids, want)
	}
	// CASE, COALESCE, GREATEST, LEAST: an integer constant is an integer
	// beside an integer or smallint, a smallint and an integer are integer
	// (PostgreSQL: all integer but the constant too large for one).
	oids = columnOIDs(t, ctx, conn, pgx.QueryExecModeCacheStatement, "SELECT coalesce(f, 0), CASE WHEN f > 0 THEN f ELSE 1 END, greatest(f, 1), coalesce(b, 1), least(b, 2), coalesce(f, 3000000000), coalesce(b, f) FROM w")
	if want := []uint32{23, 23, 23, 23, 23, 20, 23}; !reflect.DeepEqual(oids, want) {
		t.Errorf("conditionals: types %v, want %v", oids, want)
	}
	// UNION, likewise (PostgreSQL: integer, integer, bigint).
	for q, want := range map[string]uint32{"SELECT a FROM w UNION ALL SELECT 1": 23,
		"SELECT 1 UNION SELECT b FROM w": 23, "SELECT 3000000000 UNION SELECT a FROM w": 20} {
		if got := columnOIDs(t, ctx, conn, pgx.QueryExecModeCacheStatement, q); !reflect.DeepEqual(got, []uint32{want}) {
			t.Errorf("%s: types %v, want [%d]", q, got, want)
		}
	}
	// Character types of different lengths: the first side's type without
	// a length (PostgreSQL: \d of views over these gives character
	// varying(5), character varying, bpchar, character varying). A view may
	// be over a set operation.
	for q, want := range map[string][2]int64{"SELECT d FROM w UNION SELECT d FROM w": {1043, 9},
		"SELECT d FROM w UNION SELECT g FROM w": {1043, -1}, "SELECT e FROM w UNION SELECT d FROM w": {1042, -1},
		"SELECT d FROM w UNION ALL SELECT e FROM w": {1043, -1}} {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		rows.Close()
		fd := rows.FieldDescriptions()[0]
		if got := [2]int64{int64(fd.DataTypeOID), int64(fd.TypeModifier)}; got != want {
			t.Errorf("%s: type %d typmod %d, want %v", q, got[0], got[1], want)
		}
	}
	if _, err := conn.Exec(ctx, "CREATE VIEW wu (s) AS SELECT d FROM w UNION ALL SELECT g FROM w EXCEPT SELECT 'nothing'"); err != nil {
		t.Fatalf("a view over a set operation: %v", err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM wu WHERE s IN ('abcde', 'xyz')").Scan(&n); err != nil || n != 2 {
		t.Errorf("the view over a set operation: %d rows of 2, %v", n, err)
	}

	rows, err := conn.Query(ctx, query, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		for i, raw := range rows.RawValues() {
			if string(raw) != wantText[i] {
				t.Errorf("column %d: %s, want %s", i+1, raw, wantText[i])
			}
		}
	}
	rows.Close()
	for _, c := range []struct{ sql, msg string }{
		{"SELECT a + 1 FROM w", "integer out of range"},
		{"SELECT a * 2 FROM w", "integer out of range"},
		{"SELECT b - b + b - 1::int2 FROM w", "smallint out of range"},
		{"SELECT -b FROM w", "smallint out of range"},
		{"SELECT j * j * j * j * j * j * j FROM w", "value out of range: overflow"},
		{"SELECT i - 1 FROM w", "integer out of range"},
	} {
		_, err := conn.Exec(ctx, c.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22003" || pe.Message != c.msg || pe.Where == "" {
			t.Errorf("%s: %v, want 22003 %s", c.sql, err, c.msg)
		}
	}
}
