package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/session"
)

// paramsTable makes the table t (id, d, ts, s, n, f, b) with rows id 1..4 for
// the parameter tests.
func paramsTable(t *testing.T, s *session.Session) {
	t.Helper()
	csv := filepath.Join(t.TempDir(), "t.csv")
	var rows strings.Builder
	for i := 1; i <= 4; i++ {
		fmt.Fprintf(&rows, "%d,2024-01-0%d,2024-01-0%d 10:00:00,s%d,%d.50,%d.25,%t\n", i, i, i, i, i, i, i%2 == 0)
	}
	if err := os.WriteFile(csv, []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, s, "CREATE TABLE t (id BIGINT, d DATE, ts TIMESTAMP, s TEXT, n DECIMAL(10,2), f DOUBLE, b BOOLEAN) ENGINE=file CONNECTION='file://"+csv+"?format=csv'")
}

// TestPrepareParamTypes: the parameter and result types Prepare infers are
// PostgreSQL 15's (found with Parse/Describe against it), in the engine's
// types: PostgreSQL's integer is the engine's bigint.
func TestPrepareParamTypes(t *testing.T) {
	s := openEngine(t)
	paramsTable(t, s)
	ctx := context.Background()
	N := types.NullType
	for _, c := range []struct {
		query    string
		declared []types.Type
		params   string // the types of $1..$n
		schema   string // the result columns' types
	}{
		// PostgreSQL: [25] -> text.
		{"SELECT $1", nil, "text", "text"},
		// [23] -> integer.
		{"SELECT $1 + 1", nil, "integer", "integer"},
		// Declared int4 (JDBC's setInt): [23] -> int4.
		{"SELECT $1", []types.Type{types.Int64Type}, "bigint", "bigint"},
		// Declared date (psycopg's date): [1082] -> date.
		{"SELECT $1", []types.Type{types.DateType}, "date", "date"},
		// Declared float8 beats the integer the context would give: [701] -> float8.
		{"SELECT $1 + 1", []types.Type{types.Float64Type}, "double", "double"},
		// The null type is "not declared": inferred.
		{"SELECT id FROM t WHERE d = $1 AND s = $2", []types.Type{N}, "date,text", "bigint"},
		{"SELECT id FROM t WHERE ts = $1", nil, "timestamp", "bigint"},
		{"SELECT id FROM t WHERE n = $1", nil, "decimal(10,2)", "bigint"},
		{"SELECT id FROM t WHERE b = $1", nil, "boolean", "bigint"},
		// [20 20] for LIMIT $1 OFFSET $2 and for FETCH.
		{"SELECT id FROM t ORDER BY id LIMIT $1 OFFSET $2", nil, "bigint,bigint", "bigint"},
		{"SELECT id FROM t OFFSET $2 ROWS FETCH FIRST $1 ROWS ONLY", nil, "bigint,bigint", "bigint"},
		// [20 1082 1114 25 1700 701 16].
		{"INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7)", nil, "bigint,date,timestamp,text,decimal(10,2),double,boolean", ""},
		// [25 23] -> int4, text.
		{"SELECT $2::int, $1", nil, "text,integer", "integer,text"},
		// More types declared than used: all are parameters.
		{"SELECT 1", []types.Type{types.Int64Type, types.StringType}, "bigint,text", "integer"},
	} {
		p, err := s.Prepare(ctx, c.query, c.declared)
		if err != nil {
			t.Errorf("%s: %v", c.query, err)
			continue
		}
		var params, schema []string
		for _, ty := range p.Params {
			params = append(params, ty.String())
		}
		for _, f := range p.Schema {
			schema = append(schema, f.Type.String())
		}
		if got := strings.Join(params, ","); got != c.params {
			t.Errorf("%s: params %s, want %s", c.query, got, c.params)
		}
		if got := strings.Join(schema, ","); got != c.schema {
			t.Errorf("%s: schema %s, want %s", c.query, got, c.schema)
		}
	}
}

// TestPrepareDeclaredValues: values of declared parameters, text (parsed by the
// declared type's input rules) or typed (binary), as PostgreSQL returns them
// (a date is held as its midnight, which the column's type tells apart on the
// wire).
func TestPrepareDeclaredValues(t *testing.T) {
	s := openEngine(t)
	ctx := context.Background()
	for _, c := range []struct {
		query    string
		declared types.Type
		param    types.Value
		want     string
	}{
		{"SELECT $1", types.Int64Type, types.StringValue("42"), "42"},
		{"SELECT $1 + 1", types.Float64Type, types.StringValue("1.5"), "2.5"},
		{"SELECT $1", types.BoolType, types.StringValue("t"), "TRUE"},
		{"SELECT $1", types.DateType, types.StringValue("2024-01-02"), "TIMESTAMP '2024-01-02 00:00:00'"},
		{"SELECT $1", types.DateType, types.DateValue(1704153600_000_000), "TIMESTAMP '2024-01-02 00:00:00'"},
		{"SELECT $1", types.TimestampType, types.StringValue("2024-01-02 03:04:05.5"), "TIMESTAMP '2024-01-02 03:04:05.5'"},
		{"SELECT $1 IS NULL", types.Int64Type, types.NullValue(types.NullType), "TRUE"},
	} {
		p, err := s.Prepare(ctx, c.query, []types.Type{c.declared})
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		rows, err := collect(t, p, c.param)
		if err != nil || len(rows) != 1 || rows[0][0] != c.want {
			t.Errorf("%s with %v: %v %v, want %s", c.query, c.param, rows, err, c.want)
		}
	}
}

// sqlState is the SQLSTATE an error carries (its SQLState method).
func sqlState(err error) string {
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		return st.SQLState()
	}
	return ""
}

// TestPrepareLimitParams: LIMIT and OFFSET from parameters, with PostgreSQL's
// answers: a NULL count is no limit, a NULL offset none, a negative one an
// error (2201W, 2201X); without parameters (the simple protocol) $1 is 42P02.
func TestPrepareLimitParams(t *testing.T) {
	s := openEngine(t)
	paramsTable(t, s)
	ctx := context.Background()
	ids := func(rows [][]string) string {
		var out []string
		for _, r := range rows {
			out = append(out, r[0])
		}
		return strings.Join(out, ",")
	}
	null := types.NullValue(types.NullType)
	for _, c := range []struct {
		query     string
		params    []types.Value
		want, err string
	}{
		{"SELECT id FROM t ORDER BY id LIMIT $1 OFFSET $2", []types.Value{types.IntValue(2), types.IntValue(1)}, "2,3", ""},
		{"SELECT id FROM t ORDER BY id LIMIT $1 OFFSET $2", []types.Value{types.StringValue("1"), types.StringValue("3")}, "4", ""},
		{"SELECT id FROM t ORDER BY id LIMIT $1 OFFSET $2", []types.Value{null, null}, "1,2,3,4", ""},
		{"SELECT id FROM t ORDER BY id LIMIT $1 OFFSET $2", []types.Value{types.IntValue(-1), types.IntValue(0)}, "", "2201W"},
		{"SELECT id FROM t ORDER BY id LIMIT $1 OFFSET $2", []types.Value{types.IntValue(1), types.IntValue(-1)}, "", "2201X"},
		{"SELECT id FROM t ORDER BY id LIMIT $1 OFFSET $2", []types.Value{types.StringValue("x"), types.IntValue(0)}, "", "22P02"},
		// The same prepared statement runs again with other values (Run binds afresh).
		{"SELECT id FROM t ORDER BY id OFFSET $1 ROWS FETCH NEXT $2 ROWS ONLY", []types.Value{types.IntValue(1), types.IntValue(1)}, "2", ""},
		{"SELECT id FROM t WHERE id > $2 ORDER BY id LIMIT $1", []types.Value{types.IntValue(1), types.IntValue(2)}, "3", ""},
		{"SELECT id FROM t ORDER BY id LIMIT ALL OFFSET $1", []types.Value{types.IntValue(3)}, "4", ""},
		{"SELECT id FROM (SELECT id FROM t ORDER BY id LIMIT $1) AS x ORDER BY id DESC LIMIT 1", []types.Value{types.IntValue(2)}, "2", ""},
	} {
		p, err := s.Prepare(ctx, c.query, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		rows, err := collect(t, p, c.params...)
		if c.err != "" {
			if sqlState(err) != c.err && !(c.err == "22P02" && err != nil) {
				t.Errorf("%s %v: %v, want SQLSTATE %s", c.query, c.params, err, c.err)
			}
			continue
		}
		if err != nil || ids(rows) != c.want {
			t.Errorf("%s %v: %v %v, want %s", c.query, c.params, ids(rows), err, c.want)
		}
	}
	for _, q := range []string{"SELECT id FROM t LIMIT $1", "SELECT $1", "SELECT id FROM t WHERE id = $2"} {
		if _, err := run(s, q); sqlState(err) != "42P02" {
			t.Errorf("%s without parameters: %v, want 42P02", q, err)
		}
	}
	if got := mustRun(t, s, "SELECT id FROM t ORDER BY id OFFSET 2"); got != "3\n4" {
		t.Errorf("OFFSET alone: %q", got)
	}
}
