package sql

import (
	"errors"
	"strings"
	"testing"
)

// TestErrors checks the kind, the position and the message of errors on user
// input. at is the text the position must point at (the error's Pos is where
// at starts in the query, the first occurrence after skip bytes); "" means no
// position (Pos 0).
func TestErrors(t *testing.T) {
	cat := newTestCatalog(t)
	cases := []struct {
		query string
		kind  error
		at    string
		skip  int
		msg   string
	}{
		// Syntax errors point at the offending token, in multi-statement and
		// non-ASCII text too (positions count characters, as PostgreSQL's).
		{query: "SELECT * FORM docs", kind: ErrSyntax, at: "FORM", msg: `syntax error at or near "FORM"`},
		{query: "SELECT line FORM docs", kind: ErrSyntax, at: "docs", msg: `syntax error at or near "docs"`}, // FORM reads as an alias
		{query: "SELEC 1", kind: ErrSyntax, at: "SELEC", msg: `syntax error at or near "SELEC"`},
		{query: "SELECT * FROM docs WHERE", kind: ErrSyntax, msg: "syntax error at end of input"},
		{query: "SELECT 1;\nSELECT line FROM docs WHER line = 'é'", kind: ErrSyntax, at: "line = ", msg: `syntax error at or near "line"`},
		{query: "SELECT 'é', (  FROM t", kind: ErrSyntax, at: "FROM", msg: `syntax error at or near "FROM"`},
		{query: "SELECT id FROM orders ORDER BY 2 NULLS FIRST", kind: ErrInvalidColumnReference, at: "2 NULLS", msg: "ORDER BY position 2 is not in select list"},
		{query: "SELECT region FROM customers c GROUP BY region HAVING (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) > 0", kind: ErrGrouping,
			at: "c.id)", msg: `subquery uses ungrouped column "c.id" from outer query`},
		{query: "SELECT * FROM customers c RIGHT JOIN LATERAL (SELECT o.id FROM orders o WHERE o.customer_id = c.id) s ON true", kind: ErrInvalidColumnReference,
			at: "LATERAL", msg: `invalid reference to FROM-clause entry for table "c"`},
		{query: "SELECT sum(v) OVER (ORDER BY id, n RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM events", kind: ErrWindowing,
			at: "sum(v)", msg: "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column"},
		{query: "SELECT sum(v) OVER (ORDER BY ts RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM events", kind: ErrUnsupported,
			at: "sum(v)", msg: "RANGE with offset PRECEDING/FOLLOWING is not supported for column type timestamp and offset type integer"},

		{query: "SELECT * FROM nope", kind: ErrUnknownTable, at: "nope", msg: `relation "nope" does not exist`},
		{query: "SELECT nope FROM nope", kind: ErrUnknownTable, at: "nope", skip: 10},
		{query: "SELECT 'é' AS x, line FROM docs, Nope", kind: ErrUnknownTable, at: "Nope", msg: `relation "nope" does not exist`},
		{query: "SELECT 1; SELECT * FROM docs JOIN nope ON true", kind: ErrUnknownTable, at: "nope"},
		{query: "SELECT x.line FROM docs", kind: ErrUnknownTable, at: "x.line"},

		{query: "SELECT nope FROM docs", kind: ErrUnknownColumn, at: "nope", msg: `column "nope" does not exist`},
		{query: "SELECT line FROM docs WHERE length(linee) > 1", kind: ErrUnknownColumn, at: "linee"},
		{query: "SELECT docs.nope FROM docs", kind: ErrUnknownColumn, at: "docs.nope", msg: "column docs.nope does not exist"},
		{query: "SELECT id FROM orders o JOIN customers c ON o.customer_id = c.id", kind: ErrAmbiguousColumn, at: "id", msg: `column reference "id" is ambiguous`},
		{query: "SELECT 1 FROM orders o JOIN customers c ON id = 1", kind: ErrAmbiguousColumn, at: "id = 1"},

		{query: "SELECT region, name FROM customers GROUP BY region", kind: ErrGrouping, at: "name",
			msg: `column "customers.name" must appear in the GROUP BY clause or be used in an aggregate function`},
		{query: "SELECT c.region, c.name FROM customers c GROUP BY 1", kind: ErrGrouping, at: "c.name",
			msg: `column "c.name" must appear in the GROUP BY clause or be used in an aggregate function`},
		{query: "SELECT count(*) FROM docs WHERE count(*) > 1", kind: ErrGrouping, at: "count(*) >", msg: "aggregate functions are not allowed in WHERE"},

		{query: "SELECT line FROM docs WHERE 1", kind: ErrType, at: "1", msg: "argument of WHERE must be type boolean, not type integer"},
		{query: "SELECT line FROM docs WHERE line", kind: ErrType, at: "line", skip: 10},
		{query: "SELECT count(*) FROM docs HAVING count(*)", kind: ErrType, at: "count(*)", skip: 10, msg: "argument of HAVING must be type boolean, not type bigint"},
		{query: "SELECT 1 FROM orders o JOIN customers c ON o.id + c.id", kind: ErrType, at: "o.id +", msg: "argument of JOIN/ON must be type boolean, not type bigint"},
		{query: "SELECT 1 AND line FROM docs", kind: ErrType, at: "1 AND", msg: "argument of AND must be type boolean, not type integer"},
		{query: "SELECT CASE WHEN true THEN 1 ELSE 'x' END", kind: ErrType, at: "CASE"},
		{query: "SELECT CAST(ts AS DOUBLE) FROM orders", kind: ErrType, at: "CAST", msg: "cannot cast type timestamp to double"},
		{query: "SELECT line + 1 FROM docs", kind: ErrUnknownFunction, at: "line +", msg: "operator does not exist: text + integer"},
		{query: "SELECT lower(1)", kind: ErrUnknownFunction, at: "lower", msg: "function lower(integer) does not exist"},
		{query: "SELECT nosuch(line) FROM docs", kind: ErrUnknownFunction, at: "nosuch", msg: "function nosuch(text) does not exist"},
		{query: "SELECT id FROM orders WHERE id = 'abc'", kind: ErrInvalidValue, at: "id =", skip: 20},

		{query: "SELECT id FROM orders AS o WHERE EXISTS (WITH x AS (SELECT o.customer_id) SELECT 1 FROM x)", kind: ErrUnsupported, at: "o.customer_id", msg: "correlated subqueries are not supported yet: o.customer_id refers to a column of an enclosing query"},
		{query: "SELECT id FROM orders AS o WHERE EXISTS (SELECT o.customer_id UNION SELECT 2 LIMIT 1)", kind: ErrUnsupported, at: "LIMIT 1)", msg: "LIMIT after set operations in a correlated subquery is not supported"},
		{query: "SELECT line FROM docs WHERE rank() OVER (ORDER BY line) > 1", kind: ErrGrouping, at: "rank", msg: "window functions are not allowed in WHERE"},
		{query: "SELECT unnest(string_split(line, ' ')), unnest(string_split(line, ',')) FROM docs", kind: ErrUnsupported, at: "unnest", skip: 10},
		{query: "CREATE TABLE t (a INT) CONNECTION='x://y'", kind: ErrInvalidValue, msg: "a table Hummer stores takes no CONNECTION: its place in the data directory is its own"},
		{query: "CREATE TABLE docs (a INT) ENGINE=file", kind: ErrDuplicateTable, at: "docs"},
		{query: "DROP TABLE nope", kind: ErrUnknownTable, at: "nope", msg: `table "nope" does not exist`},
		// Not read as an inner join with FULL for docs' alias.
		{query: "SELECT * FROM docs FULL JOIN docs d2", kind: ErrUnsupported, at: "FULL", msg: "this form of FULL JOIN is not supported"},
		{query: "SELECT * FROM docs FULL JOIN docs d2 USING (line + 1)", kind: ErrSyntax, at: "+"},
		{query: "SELECT * FROM docs NATURAL FULL JOIN docs d2 ON true", kind: ErrSyntax, at: "FULL"},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			err := bindAll(cat, c.query)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v (%T), want an *Error", err, err)
			}
			if !errors.Is(err, c.kind) {
				t.Errorf("kind: got %v, want %v (%s)", e.Kind, c.kind, e.Msg)
			}
			want := 0
			if c.at != "" {
				i := strings.Index(c.query[c.skip:], c.at)
				if i < 0 {
					t.Fatalf("bad case: %q not in query", c.at)
				}
				want = charPos(c.query, c.skip+i)
			}
			if c.kind == ErrSyntax && c.at == "" {
				want = len([]rune(c.query)) + 1
			}
			if e.Pos != want {
				t.Errorf("pos: got %d, want %d (%s)\n%s", e.Pos, want, e.Msg, formatError(c.query, err))
			}
			if c.msg != "" && e.Msg != c.msg {
				t.Errorf("msg: got %q, want %q", e.Msg, c.msg)
			}
		})
	}
}

// bindAll parses and binds every statement, returning the first error.
func bindAll(cat CatalogReader, query string) error {
	stmts, err := Parse(query)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := Bind(s, cat, query); err != nil {
			return err
		}
	}
	return nil
}

func TestParseMultiStatement(t *testing.T) {
	q := "SELECT 1; SELECT 'é';\n  SELECT line FROM docs"
	stmts, err := Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 3 {
		t.Fatalf("got %d statements", len(stmts))
	}
	for _, s := range stmts {
		off := s.OriginTextPosition()
		if q[off:off+len(s.Text())] != s.Text() {
			t.Errorf("statement %q recorded at %d", s.Text(), off)
		}
	}
}

// A decimal literal of more digits than the parser's literal values hold
// made it panic (found by wire's FuzzConn): it is a syntax error.
func TestParseLongDecimal(t *testing.T) {
	q := "SELECT " + strings.Repeat("0", 100) + "." + strings.Repeat("0", 40) + "1"
	if _, err := Parse(q); !errors.Is(err, ErrSyntax) {
		t.Errorf("Parse of a 141-digit decimal: %v, want a syntax error", err)
	}
}

// TestCharIndex: charIndex gives what counting from the start (charPos)
// gives, at every offset of queries with and without multi-byte characters.
func TestCharIndex(t *testing.T) {
	for _, q := range []string{"", "SELECT 1", strings.Repeat("SELECT 'é' || 'x', '漢字'; ", 40), strings.Repeat("ö", 600)} {
		x := newCharIndex(q)
		for off := -1; off <= len(q)+1; off++ {
			if got, want := x.pos(off), charPos(q, off); got != want {
				t.Fatalf("query %.20q offset %d: %d, want %d", q, off, got, want)
			}
		}
	}
}
