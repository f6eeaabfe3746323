package sql

import (
	"errors"
	"strings"
	"testing"
)

func init() {
	dialectCases = append(dialectCases, []struct{ rewrite, in, out string }{
		{"WATERMARK FOR", "CREATE TABLE bid (a INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '4' SECOND) ENGINE=kafka",
			"CREATE TABLE bid (a INT, ts TIMESTAMP, CONSTRAINT `$watermark for ts` CHECK (ts - INTERVAL '4' SECOND)) ENGINE=kafka"},
		{"WATERMARK FOR", "create table b (WATERMARK for \"Ts\" as f(\"Ts\", 1), \"Ts\" timestamp)",
			"create table b (CONSTRAINT `$watermark for Ts` CHECK (f(\"Ts\", 1)), \"Ts\" timestamp)"},
		{"WATERMARK FOR", "SELECT watermark FROM t WHERE watermark > 1", "SELECT watermark FROM t WHERE watermark > 1"},
		{"WATERMARK FOR", "CREATE TABLE t (watermark TIMESTAMP, x INT)", "CREATE TABLE t (watermark TIMESTAMP, x INT)"},
	}...)
}

// TestWatermarkClause: the binder makes the clause the table's watermark,
// and refuses one over a column that is missing or not a timestamp, pointing
// at the column in the user's text.
func TestWatermarkClause(t *testing.T) {
	bind := func(q string) (*Table, error) {
		stmts, err := Parse(q)
		if err != nil {
			return nil, err
		}
		st, err := Bind(stmts[0], newTestCatalog(t), q)
		if err != nil {
			return nil, err
		}
		return st.(*CreateTable).Table, nil
	}
	tab, err := bind("CREATE TABLE bid (price BIGINT, date_time TIMESTAMP, WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND) ENGINE=kafka CONNECTION='kafka://k/t'")
	if err != nil {
		t.Fatal(err)
	}
	if w := tab.Watermark; w == nil || w.Column != "date_time" || w.Delay != 4e6 {
		t.Fatalf("watermark %+v, want date_time, 4 s behind", w)
	}
	// A timestamptz column's watermark is as plain.
	tab, err = bind("CREATE TABLE bz (date_time timestamptz, WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND) ENGINE=kafka CONNECTION='kafka://k/t'")
	if err != nil {
		t.Fatal(err)
	}
	if w := tab.Watermark; w == nil || w.Delay != 4e6 {
		t.Fatalf("timestamptz watermark %+v, want 4 s behind", w)
	}
	tab, err = bind("CREATE TABLE b (ts TIMESTAMP, WATERMARK FOR ts AS ts) ENGINE=kafka CONNECTION='kafka://k/t'")
	if err != nil || tab.Watermark == nil || tab.Watermark.Delay != 0 {
		t.Fatalf("WATERMARK FOR ts AS ts: %+v, %v", tab, err)
	}
	for _, c := range []struct{ q, at, msg string }{
		{"CREATE TABLE b (ts TIMESTAMP, WATERMARK FOR nope AS ts) ENGINE=kafka", "nope", `column "nope" of the watermark does not exist`},
		{"CREATE TABLE b (n BIGINT, ts TIMESTAMP, WATERMARK FOR n AS ts) ENGINE=kafka", "n AS", `column "n" is of type bigint`},
		{"CREATE TABLE b (n BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS n + 1) ENGINE=kafka", "", "must be a timestamp"},
		{"CREATE TABLE b (ts TIMESTAMP, WATERMARK FOR ts AS ts, WATERMARK FOR ts AS ts) ENGINE=kafka", "", "multiple watermarks"},
		{"CREATE TABLE b (ts TIMESTAMP, CHECK (ts > 1)) ENGINE=kafka", "", "constraints other than PRIMARY KEY"},
	} {
		_, err := bind(c.q)
		var se *Error
		if !errors.As(err, &se) || !strings.Contains(se.Msg, c.msg) {
			t.Errorf("%s: %v, want %q", c.q, err, c.msg)
			continue
		}
		if c.at != "" && se.Pos != strings.Index(c.q, c.at)+1 {
			t.Errorf("%s: error at %d, want %d (%q)", c.q, se.Pos, strings.Index(c.q, c.at)+1, c.at)
		}
	}
}
