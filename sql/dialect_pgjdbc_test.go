package sql

// The rewrites of dialect_pgjdbc.go, in TestDialectRewrites.
func init() {
	dialectCases = append(dialectCases, []struct{ rewrite, in, out string }{
		{"(x).field", "SELECT (information_schema._pg_expandarray(i.indkey)).n AS k FROM t WHERE a = (r.KEYS).x",
			"SELECT record_field((information_schema._pg_expandarray(i.indkey)), 'n') AS k FROM t WHERE a = record_field((r.\"keys\"), 'x')"},
		{"(x).field", `SELECT ((a)).b, (c)."D" FROM t WHERE (x).y`, `SELECT record_field(((a)), 'b'), record_field((c), 'D') FROM t WHERE record_field((x), 'y')`},
		{"(x).field", "SELECT f(x).y, (t).*, (a).b(1), count(*) FROM t", "SELECT f(x).y, (t).*, (a).b(1), count(*) FROM t"},
		{"MySQL's reserved words as names", "SELECT f(x) AS KEYS, r.Keys, a.key FROM t JOIN u USING (id) WHERE (r.KEYS).x = 1",
			`SELECT f(x) AS "keys", r."keys", a."key" FROM t JOIN u USING (id) WHERE record_field((r."keys"), 'x') = 1`},
		{"MySQL's reserved words as names", "CREATE TABLE t (id BIGINT PRIMARY KEY, KEY k (id))", "CREATE TABLE t (id BIGINT PRIMARY KEY, KEY k (id))"},
		{"<> ALL (array)", "SELECT w FROM k WHERE w <> ALL ('{a,b}'::text[]) AND x != ALL (y) AND z <> ALL (SELECT 1)",
			"SELECT w FROM k WHERE (array_position(CAST('{a,b}' AS CHAR), w) IS NULL) AND (array_position(y, x) IS NULL) AND z <> ALL (SELECT 1)"},
		{"FROM pg_get_keywords()", "select string_agg(word, ',') from pg_catalog.pg_get_keywords() where word <> 'a'",
			"select GROUP_CONCAT(word SEPARATOR ',') from pg_catalog.pg_get_keywords where word <> 'a'"},
		{"FROM pg_get_keywords()", "SELECT * FROM t, pg_get_keywords() k JOIN pg_get_keywords () ON true", "SELECT * FROM t, pg_get_keywords k JOIN pg_get_keywords ON true"},
	}...)
}
