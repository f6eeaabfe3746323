package sql

import "testing"

// The system-catalog rewrites' cases (dialect_pg.go), in TestDialectRewrites.
func init() {
	dialectCases = append(dialectCases, []struct{ rewrite, in, out string }{
		{"E'...' strings", `SELECT E'a\nb', E'it\'s', e'\\x', E'\x41\101'`, "SELECT 'a\nb', 'it''s', '\\x', 'AA'"},
		{"E'...' strings", `SELECT 'a\n' FROM e`, `SELECT 'a\n' FROM e`},
		{"E'...' strings", "SELECT $$it's$$, $q$a$$b$q$, $1, $x", "SELECT 'it''s', 'a$$b', $1, $x"},
		{"OPERATOR(schema.op)", "WHERE c.relname OPERATOR(pg_catalog.~) '^(docs)$'", "WHERE c.relname   REGEXP   '^(docs)$'"},
		{"OPERATOR(schema.op)", "WHERE a OPERATOR(pg_catalog.=) b", "WHERE a  =  b"},
		{"~, !~, ~*, !~*", "WHERE n !~ '^pg_' AND n ~ 'x'", "WHERE n  NOT REGEXP  '^pg_' AND n  REGEXP  'x'"},
		{"~, !~, ~*, !~*", "WHERE n ~* 'DOC' AND m !~* f(x)", "WHERE n  REGEXP CONCAT('(?i)',  'DOC') AND m  NOT REGEXP CONCAT('(?i)',  f(x))"},
		{"~, !~, ~*, !~*", "SELECT '~' FROM t", "SELECT '~' FROM t"},
		{"COLLATE PostgreSQL collations", `WHERE a = 'x' COLLATE pg_catalog.default AND b COLLATE "C" < 'y'`, "WHERE a = 'x'   AND b   < 'y'"},
		{"COLLATE PostgreSQL collations", "WHERE a = b COLLATE utf8mb4_bin", "WHERE a = b COLLATE utf8mb4_bin"},
		{"qualified and array type names", `SELECT c.oid::pg_catalog.regclass::pg_catalog.text, x::int2[], CAST(y AS pg_catalog.int4), z::"char"`,
			"SELECT CAST(regclass(c.oid ) AS CHAR), CAST(x AS CHAR), CAST(y AS SIGNED), CAST(z AS CHAR)"},
		{"ARRAY(subquery)", "SELECT ARRAY(SELECT b.rolname FROM m JOIN r b ON m.id = b.oid WHERE m.member = r.oid) AS memberof FROM r",
			"SELECT COALESCE((SELECT ('{' || GROUP_CONCAT(array_element(b.rolname) SEPARATOR ',') || '}') FROM m JOIN r b ON m.id = b.oid WHERE m.member = r.oid), '{}') AS memberof FROM r"},
		{"ARRAY(subquery)", "SELECT array(select rolname from pg_roles where oid > 1 order by 1)",
			"SELECT COALESCE((SELECT ('{' || GROUP_CONCAT(array_element(rolname) order by  rolname SEPARATOR ',') || '}') from pg_roles where oid > 1 ), '{}')"},
		{"= ANY (ARRAY[...])", "WHERE relkind = ANY (ARRAY['r', 'p']) AND k <> ALL (ARRAY[1, f(2)])", "WHERE relkind  IN ('r', 'p') AND k  NOT IN (1, f(2))"},
		{"= ANY (ARRAY[...])", "WHERE k = ANY (SELECT 1)", "WHERE k = ANY (SELECT 1)"},
		{"= ANY (ARRAY[...])", "SELECT 'd' = any(stxkind), oid = any (pol.polroles) FROM t", "SELECT (array_position(stxkind, 'd') IS NOT NULL), (array_position(pol.polroles, oid) IS NOT NULL) FROM t"},
		{"generate_series in FROM", "SELECT s FROM generate_series(1, 3) AS s, t WHERE x", "SELECT s FROM (SELECT generate_series(1, 3) AS s) AS s, t WHERE x"},
		{"generate_series in FROM", "SELECT * FROM pg_catalog.generate_series(0, f(n)) s (k) JOIN generate_series(1,2) ON true", "SELECT * FROM (SELECT pg_catalog.generate_series(0, f(n)) AS k) AS s JOIN (SELECT generate_series(1,2) AS generate_series) AS generate_series ON true"},
		{"generate_series in FROM", "SELECT generate_series(1, 2) FROM t", "SELECT generate_series(1, 2) FROM t"},
		{"generate_series in FROM", "select 'toast.' || x from pg_catalog.unnest(tc.reloptions) x", "select 'toast.' || x from (SELECT pg_catalog.unnest(tc.reloptions) AS x) AS x"},
		{"generate_series in FROM", "SELECT * FROM unnest(a)", "SELECT * FROM (SELECT unnest(a) AS unnest) AS unnest"},
		{"generate_series in FROM", "SELECT id, generate_series(1, n) FROM t, u WHERE f(a, generate_series(1, 2)) ORDER BY 1, generate_series(1, 2)",
			"SELECT id, generate_series(1, n) FROM t, u WHERE f(a, generate_series(1, 2)) ORDER BY 1, generate_series(1, 2)"},
		{"x[i]", "WHERE attnum = prattrs[s] AND (x)[f(1)] = 'a' AND ARRAY[1] IS NULL", "WHERE attnum = array_get(prattrs, s) AND array_get((x), f(1)) = 'a' AND array_build(1) IS NULL"},
		{"PASSWORD", "ALTER USER hummer PASSWORD 'SCRAM-SHA-256$4096:x$y:z'", "ALTER USER hummer IDENTIFIED BY 'SCRAM-SHA-256$4096:x$y:z'"},
		{"PASSWORD", "create role bob with login password 'pw';", "CREATE USER bob IDENTIFIED BY 'pw';"},
		{"PASSWORD", "ALTER USER bob IDENTIFIED BY 'pw'", "ALTER USER bob IDENTIFIED BY 'pw'"},
		{"PASSWORD", `CREATE ROLE "Mixed Case" WITH LOGIN`, `CREATE USER "Mixed Case"`},
		{"PASSWORD", `CREATE ROLE "Mixed Case" LOGIN PASSWORD 'pw'`, `CREATE USER "Mixed Case" IDENTIFIED BY 'pw'`},
		{"ARRAY[...]", "SELECT ARRAY['a', f(1, 2)], ARRAY[], ARRAY[ARRAY[1]]", "SELECT array_build('a', f(1, 2)), '{}', array_build(array_build(1))"},
		{"CAST AS SQL type names", "SELECT CAST(x AS boolean), 'on'::bool, CAST(t AS timestamp with time zone), '2024-01-02+02'::timestamptz",
			"SELECT \"bool\"(x ), \"bool\"('on' ), timestamptz(t ), timestamptz('2024-01-02+02' )"},
		{"array_agg", "SELECT array_agg(x ORDER BY y DESC) FROM t", "SELECT ('{' || GROUP_CONCAT(COALESCE(array_element(x), 'NULL') ORDER BY y DESC SEPARATOR ',') || '}') FROM t"},
		{"PostgreSQL column types", "CREATE TABLE t (ts timestamptz, \"At\" timestamp with time zone NOT NULL, b BYTEA, i interval, n BIGINT)",
			"CREATE TABLE t (ts DATETIME, \"At\" DATETIME NOT NULL, b TEXT, i TEXT, n BIGINT)"},
		{"PostgreSQL column types", "CREATE TABLE t (o OID, r REAL, f FLOAT, g FLOAT(10), v VARCHAR, w VARCHAR(5), c CHARACTER VARYING, d CHARACTER VARYING(2))",
			"CREATE TABLE t (o BIGINT, r FLOAT, f DOUBLE, g FLOAT(10), v TEXT, w VARCHAR(5), c TEXT, d CHARACTER VARYING(2))"},
		{"PostgreSQL column types", "SELECT ts::timestamptz FROM t", "SELECT timestamptz(ts ) FROM t"},
		{"interval 'text'", "SELECT timestamptz '2024-01-02+02', TIMESTAMP WITH TIME ZONE '2024-01-02', bytea '\\x01', TIMESTAMP '2024-01-02'",
			"SELECT timestamptz('2024-01-02+02' ), timestamptz('2024-01-02' ), bytea('\\x01' ), TIMESTAMP '2024-01-02'"},
		// interval '2 hours', of one unit, is MySQL's INTERVAL '2' HOUR first
		// (rewriteIntervalLiterals); '1 day 2 hours' would be an interval value.
		{"interval 'text'", "SELECT now() - interval '2 hours', ts + INTERVAL '3' DAY, INTERVAL '1' hour_minute, '1 day'::interval, interval '1 day 2 hours'",
			"SELECT now() - interval '2' HOUR, ts + INTERVAL '3' DAY, INTERVAL '1' hour_minute, \"interval\"('1 day' ), \"interval\"('1 day 2 hours' )"},
		{"CAST AS SQL type names", "SELECT '\\x01'::bytea, CAST(s AS interval)", "SELECT bytea('\\x01' ), \"interval\"(s )"},
	}...)
}

func TestEscapeStringLexing(t *testing.T) {
	toks := lex(`E'a\'b' x`)
	if toks[0].kind != tokString || toks[0].text != `E'a\'b'` {
		t.Errorf("E string lexed as %q", toks[0].text)
	}
}
