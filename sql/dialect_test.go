package sql

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

func TestLexCoversTheText(t *testing.T) {
	for _, s := range []string{
		"SELECT a, 'it''s' AS \"x\"\"y\", 1.5e3, .5, $1 FROM t -- c\n/* d */ WHERE a<=>b::int;",
		"E'\\n' X'ff' n'x' `q` #x\n", "'unterminated", "/* open", "a->>'k' <> b",
		"", "é+ü", "SELECT\t1\r\n",
	} {
		var b strings.Builder
		for i, tok := range lex(s) {
			if tok.pos != b.Len() {
				t.Errorf("%q: token %d (%q) at %d, want %d", s, i, tok.text, tok.pos, b.Len())
			}
			b.WriteString(tok.text)
		}
		if b.String() != s {
			t.Errorf("tokens of %q join to %q", s, b.String())
		}
	}
	kinds := func(s string) []tokenKind {
		var k []tokenKind
		for _, tok := range lex(s) {
			k = append(k, tok.kind)
		}
		return k
	}
	if got := kinds("a 'b''c' \"d\" 2 $3 ::"); len(got) != 11 || got[0] != tokWord || got[2] != tokString || got[4] != tokIdent ||
		got[6] != tokNumber || got[8] != tokParam || got[10] != tokPunct {
		t.Errorf("kinds %v", got)
	}
}

func FuzzLex(f *testing.F) {
	f.Add("SELECT 'a''b' FROM \"t\" -- x\n WHERE a IS DISTINCT FROM b")
	f.Fuzz(func(t *testing.T, s string) {
		var b strings.Builder
		for _, tok := range lex(s) {
			b.WriteString(tok.text)
		}
		if b.String() != s {
			t.Fatalf("tokens join to %q", b.String())
		}
		d := rewriteDialect(s)
		for off := 0; off <= len(d.text); off++ {
			if o := d.origin(off); o < 0 || o > len(s) {
				t.Fatalf("offset %d maps to %d, outside the text", off, o)
			}
		}
	})
}

// dialectCases are the rewrites' tests: what users write, what the parser
// reads. Every rewrite has at least one (TestDialectRewrites checks).
var dialectCases = []struct{ rewrite, in, out string }{
	{"DECLARE, FETCH, MOVE, CLOSE", "DECLARE c NO SCROLL CURSOR WITH HOLD FOR SELECT a FROM t; FETCH FORWARD 2 FROM c",
		" SELECT a FROM t; DO 0"},
	{"DECLARE, FETCH, MOVE, CLOSE", `declare "c" binary cursor without hold for values (1); move all in "c"; close all;`,
		" SELECT 1 AS column1; DO 0; DO 0;"},
	{"DECLARE, FETCH, MOVE, CLOSE", "SELECT 'FETCH 1 FROM c' AS fetch; DECLARE x INT", "SELECT 'FETCH 1 FROM c' AS \"fetch\"; DECLARE x INT"},
	{"transaction statements", "BEGIN; begin work; BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY; START TRANSACTION READ WRITE",
		"BEGIN; START TRANSACTION; START TRANSACTION READ ONLY; START TRANSACTION"},
	{"transaction statements", "END; end transaction; COMMIT WORK AND CHAIN; ABORT; ROLLBACK; rollback work",
		"COMMIT; COMMIT; COMMIT AND CHAIN; ROLLBACK; ROLLBACK; ROLLBACK"},
	{"transaction statements", `SAVEPOINT S1; RELEASE s1; RELEASE SAVEPOINT "A""b"; ROLLBACK TO s1; ROLLBACK TRANSACTION TO SAVEPOINT S1`,
		`SAVEPOINT "s1"; RELEASE SAVEPOINT "s1"; RELEASE SAVEPOINT "A""b"; ROLLBACK TO "s1"; ROLLBACK TO "s1"`},
	{"transaction statements", "BEGIN ISOLATION LEVEL CHAOS; START TRANSACTION WITH CONSISTENT SNAPSHOT; SELECT 1 AS end",
		"BEGIN ISOLATION LEVEL CHAOS; START TRANSACTION WITH CONSISTENT SNAPSHOT; SELECT 1 AS end"},
	{"MATERIALIZED VIEW", "CREATE MATERIALIZED VIEW v AS SELECT 1", "CREATE VIEW v AS SELECT 1"},
	{"MATERIALIZED VIEW", "drop materialized view v; SELECT 'materialized view'", "drop view v; SELECT 'materialized view'"},
	{"MATERIALIZED VIEW", "CREATE VIEW materialized AS SELECT 1", "CREATE VIEW materialized AS SELECT 1"},
	{"session commands", "SET search_path TO \"My Schema\", public", "DO 0"},
	{"session commands", "set local TimeZone = 'Europe/Paris'; SELECT 1", "DO 0; SELECT 1"},
	{"session commands", "SET TIME ZONE LOCAL;", "DO 0;"},
	{"session commands", "RESET ALL; discard all; DEALLOCATE PREPARE s1; deallocate all", "DO 0; DO 0; DO 0; DO 0"},
	{"session commands", "SET x = 1 + 1; SET @u = 1; SET GLOBAL x = 1; UPDATE t SET a = 1", "SET x = 1 + 1; SET @u = 1; SET GLOBAL x = 1; UPDATE t SET a = 1"},
	{"session commands", "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; DISCARD nope", "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; DISCARD nope"},
	{"SHOW name", "SHOW work_mem", "SHOW VARIABLES LIKE 'work_mem'"},
	{"SHOW name", "SHOW TIME ZONE; show transaction isolation level; SHOW myapp.Tenant; SHOW ALL", "SHOW VARIABLES LIKE 'timezone'; show VARIABLES LIKE 'transaction_isolation'; SHOW VARIABLES LIKE 'myapp.tenant'; SHOW VARIABLES"},
	{"SHOW name", "SHOW SESSION VARIABLES; SHOW CREATE TABLE t; SHOW session authorization", "SHOW SESSION VARIABLES; SHOW CREATE TABLE t; SHOW VARIABLES LIKE 'session_authorization'"},
	{"SHOW name", "SET x = 1; show Statement_Timeout ;", "DO 0; show VARIABLES LIKE 'statement_timeout' ;"},
	{"SHOW name", "SHOW TABLES", "SHOW TABLES"},
	{"SHOW name", "SHOW processlist", "SHOW processlist"},
	{"x::type", "SELECT a::text, 'x'::varchar(3) FROM t", "SELECT CAST(a AS CHAR), CAST('x' AS CHAR(3)) FROM t"},
	{"x::type", "SELECT t.a::bigint, (a + 1)::double precision, f(x, y)::numeric(10, 2)", "SELECT CAST(t.a AS SIGNED), CAST((a + 1) AS DOUBLE), CAST(f(x, y) AS DECIMAL(10, 2))"},
	{"x::type", "SELECT a::int::text", "SELECT CAST(CAST(a AS SIGNED) AS CHAR)"},
	{"x::type", "SELECT TIMESTAMP '2024-01-01 12:00'::timestamptz, DATE '2024-01-01'::text, 'x'::text", "SELECT timestamptz(TIMESTAMP '2024-01-01 12:00' ), CAST(DATE '2024-01-01' AS CHAR), CAST('x' AS CHAR)"},
	{"x::type", "SELECT -1::int, $1::bigint", "SELECT -CAST(1 AS SIGNED), CAST($1 AS SIGNED)"},
	{"x::type", "SELECT ts::timestamp without time zone FROM t", "SELECT CAST(ts AS DATETIME) FROM t"},
	{"x::type", "SELECT '::' FROM t -- a::b", "SELECT '::' FROM t -- a::b"},
	{"CAST AS SQL type names", "SELECT CAST(x AS TEXT), CAST(y AS integer)", "SELECT CAST(x AS CHAR), CAST(y AS SIGNED)"},
	{"CAST AS SQL type names", "SELECT CAST(f(a, b) AS character varying(20)) + CAST(z AS NUMERIC(10,2))", "SELECT CAST(f(a, b) AS CHAR(20)) + CAST(z AS DECIMAL(10,2))"},
	{"CAST AS SQL type names", "SELECT CAST(x AS numeric), CAST(y AS NUMERIC(5,2)), z::numeric", "SELECT \"numeric\"(x ), CAST(y AS DECIMAL(5,2)), \"numeric\"(z )"},
	{"CAST AS SQL type names", "SELECT CAST(x AS DOUBLE PRECISION), CAST(y AS DECIMAL(5,1)), CAST(z AS SIGNED)", "SELECT CAST(x AS DOUBLE), CAST(y AS DECIMAL(5,1)), CAST(z AS SIGNED)"},
	{"EXTRACT(PostgreSQL field FROM x)", "SELECT EXTRACT(DOW FROM d), extract(epoch from t.ts + 1), EXTRACT(YEAR FROM d)", "SELECT date_part('dow', d), date_part('epoch', t.ts + 1), EXTRACT(YEAR FROM d)"},
	{"EXTRACT(PostgreSQL field FROM x)", "SELECT EXTRACT(TIMEZONE_HOUR FROM ts)", "SELECT date_part('timezone_hour', ts)"},
	{"DISTINCT ON (...)", "SELECT DISTINCT ON (a, b) x, y FROM t WHERE z ORDER BY a, b, c DESC LIMIT 3", "SELECT  x, y , ROW_NUMBER() OVER (PARTITION BY a, b ORDER BY a, b, c DESC) AS \"$distinct_on\" FROM t WHERE z ORDER BY a, b, c DESC LIMIT 3"},
	{"DISTINCT ON (...)", "SELECT DISTINCT ON (k) k FROM (SELECT DISTINCT x AS k FROM t) AS s", "SELECT  k , ROW_NUMBER() OVER (PARTITION BY k) AS \"$distinct_on\" FROM (SELECT DISTINCT x AS k FROM t) AS s"},
	{"VALUES lists", "SELECT * FROM (VALUES (1, 'a'), (2, f(x, y))) AS t (n, s)", "SELECT * FROM (SELECT 1 AS n, 'a' AS s UNION ALL SELECT 2, f(x, y)) AS t "},
	{"VALUES lists", "VALUES (1), (2)", "SELECT 1 AS column1 UNION ALL SELECT 2"},
	{"VALUES lists", "INSERT INTO t VALUES (1, 2)", "INSERT INTO t VALUES (1, 2)"},
	{"GROUPING SETS, ROLLUP, CUBE", "SELECT a, b, count(*) FROM t GROUP BY ROLLUP (a, b) HAVING count(*) > 1",
		"SELECT a, b, count(*) FROM t GROUP BY a, b HAVING count(*) > 1"},
	{"GROUPING SETS, ROLLUP, CUBE", "SELECT 1 FROM t GROUP BY x, CUBE ((a, b), c), GROUPING SETS ((x), ())",
		"SELECT 1 FROM t GROUP BY x, a, b, c"},
	{"GROUPING SETS, ROLLUP, CUBE", "SELECT count(*) FROM t GROUP BY GROUPING SETS (())", "SELECT count(*) FROM t "},
	{"string_agg", "SELECT string_agg(name, ', ' ORDER BY f(a, b) DESC), STRING_AGG(DISTINCT x, '') FROM t",
		"SELECT GROUP_CONCAT(name ORDER BY f(a, b) DESC SEPARATOR ', '), GROUP_CONCAT(DISTINCT x SEPARATOR '') FROM t"},
	{"string_agg", "SELECT pg_catalog.string_agg(x, ', ' ORDER BY 1) FROM t", "SELECT GROUP_CONCAT(x ORDER BY 1 SEPARATOR ', ') FROM t"},
	{"string_agg", "SELECT string_agg(x, ',') FILTER (WHERE x <> 'a') FROM t",
		"SELECT GROUP_CONCAT(CASE WHEN x <> 'a' THEN x END SEPARATOR ',') FROM t"},
	{"derived table column lists", "SELECT * FROM (SELECT k, count(*) FROM t GROUP BY k) AS c (key, n)", "SELECT * FROM (SELECT k AS \"key\", count(*) AS n FROM t GROUP BY k) AS c "},
	{"derived table column lists", "SELECT * FROM (SELECT DISTINCT a x, f(b) AS y, c \"z\" FROM t UNION SELECT 1, 2, 3) t (p, q, r)",
		"SELECT * FROM (SELECT DISTINCT a AS p, f(b) AS q, c AS r FROM t UNION SELECT 1, 2, 3) t "},
	{"derived table column lists", "SELECT * FROM (SELECT case when a then 1 end, x IS NULL FROM t) AS c (k, n)",
		"SELECT * FROM (SELECT case when a then 1 end AS k, x IS NULL AS n FROM t) AS c "},
	{"derived table column lists", "SELECT * FROM (SELECT * FROM t) AS c (k, n)", "SELECT * FROM (SELECT * FROM t) AS c (k, n)"},
	{"derived table column lists", "SELECT * FROM (SELECT a, b FROM t) AS c (k)", "SELECT * FROM (SELECT a, b FROM t) AS c (k)"},
	// A subquery in an expression has no column list: what follows it is the expression's (SQLite's select1.test).
	{"derived table column lists", "SELECT b FROM t1 WHERE EXISTS(SELECT 1 FROM t1 AS x) AND (e>c)", "SELECT b FROM t1 WHERE EXISTS(SELECT 1 FROM t1 AS x) AND (e>c)"},
	{"derived table column lists", "SELECT a, (SELECT max(x) FROM t) AND (e) FROM t1", "SELECT a, (SELECT max(x) FROM t) AND (e) FROM t1"},
	{"derived table column lists", "SELECT * FROM a, (SELECT x FROM t) s (k) JOIN LATERAL (SELECT 1) AS l (n) ON true",
		"SELECT * FROM a, (SELECT x AS k FROM t) s  JOIN LATERAL (SELECT 1 AS n) AS l  ON true"},
	{"FULL [OUTER] JOIN", "SELECT * FROM a FULL OUTER JOIN b ON a.k = b.k FULL JOIN (SELECT 1 AS k) AS c ON c.k = a.k", "SELECT * FROM a LEFT JOIN b ON a.k = b.k LEFT JOIN (SELECT 1 AS k) AS c ON c.k = a.k"},
	{"FULL [OUTER] JOIN", "SELECT full FROM t", "SELECT full FROM t"},
	{"AT TIME ZONE", "SELECT ts AT TIME ZONE 'Europe/Paris', t.ts at time zone t.zone, TIMESTAMP '2024-01-01 12:00' AT TIME ZONE 'UTC' FROM t",
		"SELECT timezone('Europe/Paris', ts), timezone(t.zone, t.ts), timezone('UTC', TIMESTAMP '2024-01-01 12:00') FROM t"},
	{"AT TIME ZONE", "SELECT x::timestamptz AT TIME ZONE $1 AT TIME ZONE 'UTC', f(a, b) AT TIME ZONE ('U' || 'TC') = y",
		"SELECT timezone('UTC', timezone($1, timestamptz(x ))), timezone(('U' || 'TC'), f(a, b)) = y"},
	{"AT TIME ZONE", "SELECT at, time, zone FROM t AT", "SELECT at, time, zone FROM t AT"},
	// Standing alone it is a value, not MySQL's interval operand.
	{"INTERVAL 'n unit'", "SELECT interval '1 hour', DATE_ADD(d, INTERVAL '2 days'), d - interval '3 days' FROM t",
		"SELECT \"interval\"('1 hour' ), DATE_ADD(d, INTERVAL '2' DAY), d - interval '3' DAY FROM t"},
	{"INTERVAL 'n unit'", "SELECT d - INTERVAL '1 day', d + interval '-2 Hours', INTERVAL '90' DAY + d, INTERVAL '1 day 2 hours', 'INTERVAL' FROM t",
		// One of several units is an interval value (rewriteIntervalLiteral).
		"SELECT d - INTERVAL '1' DAY, d + interval '-2' HOUR, INTERVAL '90' DAY + d, \"interval\"('1 day 2 hours' ), 'INTERVAL' FROM t"},
	{"INTERVAL 'n unit'", "SUM(x) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '3 mons' PRECEDING AND INTERVAL '1 week' FOLLOWING)",
		"SUM(x) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '3' MONTH PRECEDING AND INTERVAL '1' WEEK FOLLOWING)"},
	// Interval + interval is no date arithmetic: both stay values.
	{"INTERVAL 'n unit'", "SELECT -INTERVAL '1 day', (- INTERVAL '2 hours'), now() - INTERVAL '1 hour' FROM t",
		"SELECT -\"interval\"('1 day' ), (- \"interval\"('2 hours' )), now() - INTERVAL '1' HOUR FROM t"},
	{"INTERVAL 'n unit'", "SELECT INTERVAL '1 day' + INTERVAL '2 hours', d + INTERVAL '1 day' - INTERVAL '2 hours' FROM t",
		"SELECT \"interval\"('1 day' ) + \"interval\"('2 hours' ), d + INTERVAL '1' DAY - \"interval\"('2 hours' ) FROM t"},
	{"FULL [OUTER] JOIN", "SELECT * FROM a FULL JOIN b USING (k, \"L\") WHERE k > 1", "SELECT * FROM a LEFT JOIN b ON TRUE WHERE k > 1"},
	{"FULL [OUTER] JOIN", "SELECT * FROM a NATURAL FULL OUTER JOIN (SELECT 1 AS k) AS b, c", "SELECT * FROM a LEFT JOIN (SELECT 1 AS k) AS b ON TRUE, c"},
	{"FULL [OUTER] JOIN", "SELECT * FROM a NATURAL FULL JOIN b", "SELECT * FROM a LEFT JOIN b ON TRUE"},
	{"NULLS FIRST|LAST", "SELECT a FROM t ORDER BY a DESC NULLS LAST, f(b, c) NULLS FIRST", "SELECT a FROM t ORDER BY a DESC, f(b, c)"},
	{"FOR SYSTEM_TIME AS OF", "SELECT * FROM (SELECT *, PROCTIME() AS p FROM bid) B JOIN side_input FOR SYSTEM_TIME AS OF B.p AS S ON mod(B.auction, 10000) = S.key",
		"SELECT * FROM (SELECT *, PROCTIME() AS p FROM bid) B JOIN side_input AS S ON mod(B.auction, 10000) = S.\"key\""},
	{"FOR SYSTEM_TIME AS OF", "SELECT * FROM o JOIN r for system_time as of proctime() ON o.c = r.c, x JOIN y FOR SYSTEM_TIME AS OF p",
		"SELECT * FROM o JOIN r ON o.c = r.c, x JOIN y "},
	// Not a time attribute: left for the parser to refuse where it is written.
	{"FOR SYSTEM_TIME AS OF", "SELECT * FROM o JOIN r FOR SYSTEM_TIME AS OF o.t - INTERVAL '1' HOUR ON o.c = r.c",
		"SELECT * FROM o JOIN r FOR SYSTEM_TIME AS OF o.t - INTERVAL '1' HOUR ON o.c = r.c"},
	{"NULLS FIRST|LAST", "SELECT a, b FROM t ORDER BY 2 DESC NULLS LAST, 1 NULLS FIRST, 3 + 1 NULLS LAST", "SELECT a, b FROM t ORDER BY (2) DESC, (1), 3 + 1"},
	{"NULLS FIRST|LAST", "SELECT (SELECT x FROM u ORDER BY x NULLS FIRST LIMIT 1) AS nulls", "SELECT (SELECT x FROM u ORDER BY x LIMIT 1) AS nulls"},
	{"FILTER (WHERE ...)", "SELECT COUNT(*) FILTER (WHERE ok), SUM(x + 1) FILTER (WHERE f(y) > 0) FROM t", "SELECT COUNT(CASE WHEN ok THEN 1 END), SUM(CASE WHEN f(y) > 0 THEN x + 1 END) FROM t"},
	{"FILTER (WHERE ...)", "SELECT count(DISTINCT a) filter (where b) FROM t", "SELECT count(DISTINCT CASE WHEN b THEN a END) FROM t"},
	{"FILTER (WHERE ...)", "SELECT filter FROM t WHERE filter > 1", "SELECT filter FROM t WHERE filter > 1"},
	{"LIMIT, OFFSET, FETCH FIRST", "SELECT a FROM t ORDER BY a LIMIT 5 OFFSET 2", "SELECT a FROM t ORDER BY a LIMIT 5 OFFSET 2"},
	{"LIMIT, OFFSET, FETCH FIRST", "SELECT a FROM t LIMIT $1 OFFSET $2", "SELECT a FROM t LIMIT ? OFFSET ?"},
	{"LIMIT, OFFSET, FETCH FIRST", "SELECT a FROM t LIMIT $12", "SELECT a FROM t LIMIT ?"},
	{"LIMIT, OFFSET, FETCH FIRST", "SELECT a FROM t OFFSET 3", "SELECT a FROM t LIMIT 18446744073709551615 OFFSET 3"},
	{"LIMIT, OFFSET, FETCH FIRST", "SELECT a FROM t limit all offset $1", "SELECT a FROM t LIMIT 18446744073709551615 OFFSET ?"},
	{"LIMIT, OFFSET, FETCH FIRST", "SELECT a FROM t LIMIT ALL", "SELECT a FROM t LIMIT 18446744073709551615"},
	{"LIMIT, OFFSET, FETCH FIRST", "SELECT a FROM t OFFSET 1 LIMIT 2", "SELECT a FROM t LIMIT 2 OFFSET 1"},
	{"LIMIT, OFFSET, FETCH FIRST", "SELECT a FROM t OFFSET $2 ROWS FETCH NEXT $1 ROWS ONLY", "SELECT a FROM t LIMIT ? OFFSET ?"},
	{"LIMIT, OFFSET, FETCH FIRST", "SELECT a FROM t OFFSET 1 ROW FETCH FIRST ROW ONLY", "SELECT a FROM t LIMIT 1 OFFSET 1"},
	{"LIMIT, OFFSET, FETCH FIRST", "SELECT a FROM t FETCH FIRST 2 ROWS ONLY", "SELECT a FROM t FETCH FIRST 2 ROWS ONLY"},
	{"LIMIT, OFFSET, FETCH FIRST", "SELECT (SELECT b FROM u LIMIT $1) FROM t LIMIT 1", "SELECT (SELECT b FROM u LIMIT ?) FROM t LIMIT 1"},
	{"LIMIT, OFFSET, FETCH FIRST", "SELECT a FROM t FETCH FIRST 2 ROWS WITH TIES", "SELECT a FROM t FETCH FIRST 2 ROWS WITH TIES"},
	{"LIMIT, OFFSET, FETCH FIRST", "SELECT a FROM t LIMIT (1 + 1)", "SELECT a FROM t LIMIT (1 + 1)"},
	{"LIMIT, OFFSET, FETCH FIRST", "SELECT offset, t.limit FROM t", "SELECT offset, t.limit FROM t"},
	{"IS [NOT] DISTINCT FROM", "SELECT a IS NOT DISTINCT FROM b FROM t", "SELECT a <=> b FROM t"},
	{"IS [NOT] DISTINCT FROM", "SELECT a IS DISTINCT FROM b FROM t", "SELECT a <=> b IS FALSE FROM t"},
	{"IS [NOT] DISTINCT FROM", "WHERE a IS DISTINCT FROM f(b, c) + 1 AND d", "WHERE a <=> f(b, c) + 1 IS FALSE AND d"},
	{"IS [NOT] DISTINCT FROM", "CASE WHEN a is distinct from (b) THEN 1 END", "CASE WHEN a <=> (b) IS FALSE THEN 1 END"},
	{"IS [NOT] DISTINCT FROM", "f(a IS DISTINCT FROM b, x IS DISTINCT FROM y)", "f(a <=> b IS FALSE, x <=> y IS FALSE)"},
	{"IS [NOT] DISTINCT FROM", "SELECT 'a IS DISTINCT FROM b' -- IS DISTINCT FROM c", "SELECT 'a IS DISTINCT FROM b' -- IS DISTINCT FROM c"},
}

func TestDialectRewrites(t *testing.T) {
	tested := map[string]bool{}
	for _, c := range dialectCases {
		tested[c.rewrite] = true
		if got := rewriteDialect(c.in).text; got != c.out {
			t.Errorf("%s: %q\n got %q\nwant %q", c.rewrite, c.in, got, c.out)
		}
	}
	for _, r := range dialectRewrites {
		if !tested[r.name] {
			t.Errorf("rewrite %q has no case in dialectCases", r.name)
		}
	}
}

// TestFoldIdentifiers: unquoted words fold to lower case, as PostgreSQL folds
// unquoted identifiers; quoted identifiers, strings and non-ASCII letters
// keep theirs; the parser's names are then exact.
func TestFoldIdentifiers(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{`SELECT "Id", Name FROM "Users" AS U`, `select "Id", name from "Users" as u`},
		{`SELECT 'Mixed' AS "X", Ü FROM t`, `select 'Mixed' as "X", Ü from t`},
		{"SELECT `Q`, 'A', $$B$$, 1E3 FROM T", "select `q`, 'A', 'B', 1E3 from t"},
	} {
		d := rewriteDialect(c.in)
		foldIdentifiers(d)
		if d.text != c.out {
			t.Errorf("%q: got %q, want %q", c.in, d.text, c.out)
		}
	}
	stmts, err := Parse(`SELECT "Id", Name FROM "Users" AS U`)
	if err != nil {
		t.Fatal(err)
	}
	sel := stmts[0].(*ast.SelectStmt)
	col := sel.Fields.Fields[0].Expr.(*ast.ColumnNameExpr).Name.Name.O
	col2 := sel.Fields.Fields[1].Expr.(*ast.ColumnNameExpr).Name.Name.O
	tn := sel.From.TableRefs.Left.(*ast.TableSource).Source.(*ast.TableName).Name.O
	if col != "Id" || col2 != "name" || tn != "Users" {
		t.Errorf("parsed names %q %q %q, want Id name Users", col, col2, tn)
	}
	if txt := stmts[0].Text(); txt != `SELECT "Id", Name FROM "Users" AS U` {
		t.Errorf("statement text %q, want the user's", txt)
	}
}

// TestDialectPositions: errors in rewritten statements point at the user's
// text, and the statements' texts are the user's.
func TestDialectPositions(t *testing.T) {
	// A syntax error after a rewrite that made the text longer.
	q := "SHOW work_mem; SELECT a IS DISTINCT FROM b FROM t WHERE WHERE"
	_, err := Parse(q)
	var se *Error
	if !errors.As(err, &se) || se.Pos != strings.LastIndex(q, "WHERE")+1 || !strings.Contains(se.Msg, `"WHERE"`) {
		t.Errorf("%q: %v at %d, want the second WHERE at %d", q, err, se.Pos, strings.LastIndex(q, "WHERE")+1)
	}
	// A binding error inside a rewritten statement.
	q = "SHOW work_mem; SELECT id IS DISTINCT FROM nosuch FROM customers"
	stmts, err := Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	text, start := stmts[1].Text(), stmts[1].OriginTextPosition()
	if strings.TrimSpace(text) != "SELECT id IS DISTINCT FROM nosuch FROM customers" || start < 0 || start+len(text) > len(q) || q[start:start+len(text)] != text {
		t.Errorf("statement text %q at %d, want the user's text where it is in %q", text, start, q)
	}
	_, err = Bind(stmts[1], newTestCatalog(t), q)
	if !errors.As(err, &se) || se.Pos != strings.Index(q, "nosuch")+1 {
		t.Errorf("binding %q: %v at %d, want nosuch at %d", q, err, se.Pos, strings.Index(q, "nosuch")+1)
	}
}

func TestParseCopyTo(t *testing.T) {
	text := CopyOptions{Delimiter: '\t', Null: `\N`}
	csv := CopyOptions{CSV: true, Delimiter: ',', Quote: '"', Escape: '"'}
	csvHeader := csv
	csvHeader.Header = true
	forced := csvHeader
	forced.ForceQuote = []string{"a", "B"}
	all := csv
	all.ForceQuoteAll, all.Header = true, true
	legacy := csvHeader
	legacy.Delimiter, legacy.Null, legacy.ForceQuoteAll = ';', "-", true
	pipe := text
	pipe.Delimiter, pipe.Null = '|', "NUL"
	bin := text
	bin.Binary = true
	ctl := text
	ctl.Delimiter, ctl.Null = 0x01, "\\N\té\x07\x08"
	for _, c := range []struct {
		in   string
		want *Copy
		ok   bool
		// err is a part of the error's text, code its kind and pos its
		// position (0: none), as PostgreSQL 15 reports them.
		err  string
		code error
		pos  int
	}{
		{in: "COPY (SELECT 1) TO STDOUT", want: &Copy{Query: "SELECT 1", QueryPos: 6, Pos: 5, To: true, Options: text}, ok: true},
		{in: " copy (SELECT f(a), ')' FROM t) to stdout ;", want: &Copy{Query: "SELECT f(a), ')' FROM t", QueryPos: 7, Pos: 6, To: true, Options: text}, ok: true},
		{in: "COPY t TO STDOUT", want: &Copy{Table: "t", Pos: 5, To: true, Options: text}, ok: true},
		{in: "COPY t TO STDIN", want: &Copy{Table: "t", Pos: 5, To: true, Options: text}, ok: true},
		{in: `copy public."My T" (a, "B") to stdout with (format csv, header true, force_quote (a, "B"))`,
			want: &Copy{Table: "My T", Pos: 12, Columns: []string{"a", "B"}, To: true, Options: forced}, ok: true},
		{in: "COPY (SELECT 1 AS a) TO STDOUT (FORCE_QUOTE *, FORMAT 'csv', HEADER on)", want: &Copy{Query: "SELECT 1 AS a", QueryPos: 6, Pos: 5, To: true, Options: all}, ok: true},
		{in: "COPY t TO STDOUT WITH CSV HEADER DELIMITER AS ';' NULL '-' FORCE QUOTE *", want: &Copy{Table: "t", Pos: 5, To: true, Options: legacy}, ok: true},
		{in: `COPY t TO STDOUT CSV FORCE QUOTE a, "B" HEADER`, want: &Copy{Table: "t", Pos: 5, To: true, Options: forced}, ok: true},
		{in: "COPY t TO STDOUT DELIMITER AS '|' NULL AS 'NUL'", want: &Copy{Table: "t", Pos: 5, To: true, Options: pipe}, ok: true},
		{in: "COPY t TO STDOUT BINARY", want: &Copy{Table: "t", Pos: 5, To: true, Options: bin}, ok: true},
		{in: "COPY t TO STDOUT (FORMAT binary, FREEZE, ENCODING 'UTF8')", want: &Copy{Table: "t", Pos: 5, To: true, Options: bin}, ok: true},

		{in: `COPY t TO STDOUT (DELIMITER E'\x01', NULL E'\\N\t\u00e9\7\b')`, want: &Copy{Table: "t", Pos: 5, To: true, Options: ctl}, ok: true},

		{in: "COPY t TO STDOUT WITH (FORMAT xml)", ok: true, err: `COPY format "xml" not recognized`, code: ErrInvalidValue, pos: 24},
		{in: "COPY t TO STDOUT WITH (HEADER match)", ok: true, err: `cannot use "match" with HEADER in COPY TO`, code: ErrUnsupported},
		{in: "COPY t TO STDOUT WITH (HEADER maybe)", ok: true, err: `header requires a Boolean value or "match"`, code: ErrSyntax},
		{in: "COPY t TO STDOUT WITH (bogus)", ok: true, err: `option "bogus" not recognized`, code: ErrSyntax, pos: 24},
		{in: "COPY t TO STDOUT WITH (format csv, format csv)", ok: true, err: "conflicting or redundant options", code: ErrSyntax, pos: 36},
		{in: "COPY t TO STDOUT csv csv", ok: true, err: "conflicting or redundant options", code: ErrSyntax, pos: 22},
		{in: "COPY t TO STDOUT WITH (delimiter 'ab')", ok: true, err: "COPY delimiter must be a single one-byte character", code: ErrUnsupported},
		{in: "COPY t TO STDOUT WITH (delimiter)", ok: true, err: "delimiter requires a parameter", code: ErrSyntax},
		{in: `COPY t TO STDOUT WITH (delimiter E'\n')`, ok: true, err: "COPY delimiter cannot be newline or carriage return", code: ErrInvalidValue},
		{in: "COPY t TO STDOUT WITH (delimiter 'a')", ok: true, err: `COPY delimiter cannot be "a"`, code: ErrInvalidValue},
		{in: `COPY t TO STDOUT WITH (null E'\n')`, ok: true, err: "COPY null representation cannot use newline or carriage return", code: ErrInvalidValue},
		{in: "COPY t TO STDOUT WITH (quote '''')", ok: true, err: "COPY quote available only in CSV mode", code: ErrUnsupported},
		{in: "COPY t TO STDOUT WITH (escape 'a')", ok: true, err: "COPY escape available only in CSV mode", code: ErrUnsupported},
		{in: "COPY t TO STDOUT WITH (format csv, quote 'ab')", ok: true, err: "COPY quote must be a single one-byte character", code: ErrUnsupported},
		{in: `COPY t TO STDOUT WITH (format csv, delimiter '"')`, ok: true, err: "COPY delimiter and quote must be different", code: ErrInvalidValue},
		{in: "COPY t TO STDOUT WITH (force_quote (a))", ok: true, err: "COPY force quote available only in CSV mode", code: ErrUnsupported},
		{in: "COPY t TO STDOUT WITH (format csv, force_quote a)", ok: true, err: `argument to option "force_quote" must be a list of column names`, code: ErrInvalidValue, pos: 36},
		{in: "COPY t TO STDOUT WITH (format csv, force_not_null (a))", ok: true, err: "COPY force not null only available using COPY FROM", code: ErrUnsupported},
		{in: "COPY t TO STDOUT WITH (format csv, force_null (a))", ok: true, err: "COPY force null only available using COPY FROM", code: ErrUnsupported},
		{in: "COPY t TO STDOUT WITH (format binary, delimiter ',')", ok: true, err: "cannot specify DELIMITER in BINARY mode", code: ErrSyntax},
		{in: "COPY t TO STDOUT BINARY NULL 'x'", ok: true, err: "cannot specify NULL in BINARY mode", code: ErrSyntax},
		{in: "COPY t TO STDOUT WITH (format binary, header)", ok: true, err: "cannot specify HEADER in BINARY mode", code: ErrUnsupported},
		{in: "COPY t TO STDOUT WITH (format csv, null ',')", ok: true, err: "COPY delimiter must not appear in the NULL specification", code: ErrUnsupported},
		{in: `COPY t TO STDOUT WITH (format csv, null 'x"')`, ok: true, err: "CSV quote character must not appear in the NULL specification", code: ErrUnsupported},
		{in: "COPY t TO STDOUT WITH (encoding 'bogus')", ok: true, err: `argument to option "encoding" must be a valid encoding name`, code: ErrInvalidValue, pos: 24},
		{in: "COPY t (a) TO STDOUT WHERE a > 1", ok: true, err: "WHERE clause not allowed with COPY TO", code: ErrSyntax, pos: 22},
		{in: "COPY (SELECT 1) FROM STDIN", ok: true, err: `syntax error at or near "FROM"`, code: ErrSyntax, pos: 17},
		{in: "COPY t TO '/tmp/x'", ok: true, err: "COPY to a file is not supported", code: ErrUnsupported, pos: 11},
		{in: "COPY t TO PROGRAM 'cat'", ok: true, err: "COPY to or from a program is not supported", code: ErrUnsupported, pos: 11},
		{in: "COPY (SELECT 1) TO '/tmp/x' (FORMAT csv)", ok: true, err: "COPY to a file is not supported", code: ErrUnsupported, pos: 20},

		{in: "COPY (SELECT 1) TO STDOUT; SELECT 2"},
		{in: "COPY (SELECT 1 TO STDOUT"},
		{in: "COPY () TO STDOUT"},
		{in: "SELECT 'COPY (x) TO STDOUT'"},
	} {
		got, ok, err := ParseCopy(c.in)
		var se *Error
		switch {
		case ok != c.ok:
			t.Errorf("ParseCopy(%q): ok %v, want %v", c.in, ok, c.ok)
		case c.err != "":
			if !errors.As(err, &se) || !strings.Contains(se.Msg, c.err) || !errors.Is(err, c.code) || se.Pos != c.pos {
				t.Errorf("ParseCopy(%q): error %#v, want %q (%v) at %d", c.in, err, c.err, c.code, c.pos)
			}
		case err != nil:
			t.Errorf("ParseCopy(%q): %v", c.in, err)
		case c.want != nil && !reflect.DeepEqual(got, c.want):
			t.Errorf("ParseCopy(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestParseCopyFrom(t *testing.T) {
	csv := CopyOptions{CSV: true, Delimiter: ',', Quote: '"', Escape: '"'}
	text := CopyOptions{Delimiter: '\t', Null: `\N`}
	withHeader := csv
	withHeader.Header = true
	semi := csv
	semi.Delimiter, semi.Null = ';', "-"
	tab := text
	tab.Delimiter = '|'
	for _, c := range []struct {
		in      string
		want    *Copy
		ok      bool
		errText string
	}{
		{in: "COPY t FROM STDIN", want: &Copy{Table: "t", Pos: 5, Options: text}, ok: true},
		{in: `copy public."My T" (a, "B") from stdin;`, want: &Copy{Table: "My T", Pos: 12, Columns: []string{"a", "B"}, Options: text}, ok: true},
		{in: "COPY t FROM STDIN WITH (FORMAT csv, HEADER)", want: &Copy{Table: "t", Pos: 5, Options: withHeader}, ok: true},
		{in: "COPY t FROM STDIN (format 'csv', header true)", want: &Copy{Table: "t", Pos: 5, Options: withHeader}, ok: true},
		{in: "COPY t FROM STDIN WITH (format csv, header match)", want: &Copy{Table: "t", Pos: 5, Options: withHeader}, ok: true},
		{in: "COPY t FROM STDIN WITH CSV HEADER", want: &Copy{Table: "t", Pos: 5, Options: withHeader}, ok: true},
		{in: "COPY t FROM STDIN WITH (FORMAT csv, DELIMITER ';', NULL '-')", want: &Copy{Table: "t", Pos: 5, Options: semi}, ok: true},
		{in: "COPY t FROM STDIN DELIMITER AS '|'", want: &Copy{Table: "t", Pos: 5, Options: tab}, ok: true},
		{in: `copy "t" ( "a", "b" ) from stdin binary;`, want: &Copy{Table: "t", Pos: 5, Columns: []string{"a", "b"}, Options: CopyOptions{Binary: true, Delimiter: '\t', Null: `\N`}}, ok: true},
		{in: "COPY t FROM STDIN WITH (FORMAT binary, HEADER)", ok: true, errText: "in BINARY mode"},
		{in: "COPY t FROM STDIN WITH (DELIMITER ';;')", ok: true, errText: "single one-byte character"},
		{in: `COPY t FROM STDIN WITH (QUOTE '"')`, ok: true, errText: "available only in CSV mode"},
		{in: "COPY t FROM STDIN WITH (COLOUR red)", ok: true, errText: `option "colour" not recognized`},
		{in: "COPY t FROM STDIN WITH (FORMAT csv, FORCE_QUOTE (a))", ok: true, errText: "COPY force quote only available using COPY TO"},
		{in: "COPY t FROM '/etc/passwd'", ok: true, errText: "COPY from a file is not supported"},
		{in: "SELECT 'COPY t FROM STDIN'"},
	} {
		got, ok, err := ParseCopy(c.in)
		switch {
		case ok != c.ok:
			t.Errorf("ParseCopy(%q): ok %v, want %v", c.in, ok, c.ok)
		case c.errText != "":
			if err == nil || !strings.Contains(err.Error(), c.errText) {
				t.Errorf("ParseCopy(%q): error %v, want %q", c.in, err, c.errText)
			}
		case err != nil:
			t.Errorf("ParseCopy(%q): %v", c.in, err)
		case c.want != nil && !reflect.DeepEqual(got, c.want):
			t.Errorf("ParseCopy(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

// TestSessionCommandFacts: what the binder is told of each session command,
// PostgreSQL's flattening of SET's values included (PostgreSQL 15 shows
// search_path '"My Schema", public' after the first, application_name
// 'myapp' after SET application_name = MyApp).
func TestSessionCommandFacts(t *testing.T) {
	for _, c := range []struct {
		in   string
		want sessionCommand
	}{
		{`SET search_path TO "My Schema", public`, sessionCommand{verb: "SET", name: "search_path", values: []string{"My Schema", "public"}}},
		{"SET application_name = MyApp", sessionCommand{verb: "SET", name: "application_name", values: []string{"myapp"}}},
		{"SET LOCAL extra_float_digits = -3", sessionCommand{verb: "SET", name: "extra_float_digits", local: true, values: []string{"-3"}}},
		{"SET SESSION statement_timeout TO '5s'", sessionCommand{verb: "SET", name: "statement_timeout", values: []string{"5s"}}},
		{"SET DateStyle = ISO, DMY", sessionCommand{verb: "SET", name: "datestyle", values: []string{"iso", "dmy"}}},
		{"SET myapp.tenant = 'it''s'", sessionCommand{verb: "SET", name: "myapp.tenant", values: []string{"it's"}}},
		{"SET TIME ZONE 'Europe/Paris'", sessionCommand{verb: "SET", name: "timezone", values: []string{"Europe/Paris"}}},
		{"SET TIME ZONE -3.5", sessionCommand{verb: "SET", name: "timezone", values: []string{"-3.5"}}},
		{"SET TIME ZONE INTERVAL '+02:00' HOUR TO MINUTE", sessionCommand{verb: "SET", name: "timezone", values: []string{"2"}}},
		{"SET TIME ZONE INTERVAL '-03:30'", sessionCommand{verb: "SET", name: "timezone", values: []string{"-3.5"}}},
		{"SET TIME ZONE DEFAULT", sessionCommand{verb: "SET", name: "timezone"}},
		{"SET work_mem TO DEFAULT", sessionCommand{verb: "SET", name: "work_mem"}},
		{"SET NAMES 'UTF8'", sessionCommand{verb: "SET", name: "client_encoding", values: []string{"UTF8"}}},
		{"RESET TimeZone", sessionCommand{verb: "RESET", name: "timezone"}},
		{"RESET TIME ZONE", sessionCommand{verb: "RESET", name: "timezone"}},
		{"RESET ALL", sessionCommand{verb: "RESET", all: true}},
		{"DISCARD TEMPORARY", sessionCommand{verb: "DISCARD", name: "TEMP"}},
		{"DEALLOCATE \"S1\"", sessionCommand{verb: "DEALLOCATE", name: "S1"}},
		{"DEALLOCATE PREPARE ALL", sessionCommand{verb: "DEALLOCATE", all: true}},
	} {
		d := rewriteDialect(c.in)
		got := d.facts.session[0]
		if got == nil || !reflect.DeepEqual(*got, c.want) {
			t.Errorf("%q: fact %+v, want %+v", c.in, got, c.want)
		}
	}
}

// The grouping sets' fact: the product of the items' sets, as indexes into
// the flattened GROUP BY (x 0, a 1, b 2, c 3).
func TestGroupingSetsFact(t *testing.T) {
	d := rewriteDialect("SELECT 1 FROM t GROUP BY x, CUBE ((a, b), c), GROUPING SETS ((x), ())")
	if len(d.facts.groupingSets) != 1 {
		t.Fatalf("facts %v", d.facts.groupingSets)
	}
	want := "[[0 1 2 3 0] [0 1 2 3] [0 3 0] [0 3] [0 1 2 0] [0 1 2] [0 0] [0]]"
	for off, sets := range d.facts.groupingSets {
		if got := fmt.Sprint(sets); got != want {
			t.Errorf("sets %s, want %s", got, want)
		}
		if off != strings.Index(d.text, "x,") {
			t.Errorf("fact at %d, want the offset of x", off)
		}
	}
}
