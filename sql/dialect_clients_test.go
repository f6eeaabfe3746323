package sql

// The client forms' cases (dialect_clients.go), in TestDialectRewrites.
func init() {
	dialectCases = append(dialectCases, []struct{ rewrite, in, out string }{
		{"keywords as labels", "SELECT (SELECT 1) AS DEFAULT, c.conkey as key, 1 AS order FROM t AS limit",
			`SELECT (SELECT 1) AS "default", c.conkey as "key", 1 AS "order" FROM t AS "limit"`},
		{"keywords as labels", "SELECT CAST(x AS CHAR), CAST(y AS DECIMAL(10, 2)) AS n FROM t",
			"SELECT CAST(x AS CHAR), CAST(y AS DECIMAL(10, 2)) AS n FROM t"},
		{"keywords as labels", "CREATE VIEW v AS SELECT 1 AS x", "CREATE VIEW v AS SELECT 1 AS x"},
		{"substring(s FOR n)", "SELECT substring(f(a, b) for 128), substring(s FROM 2 FOR 3), substring(s, 1, 2)",
			"SELECT substring(f(a, b) FROM 1 for 128), substring(s FROM 2 FOR 3), substring(s, 1, 2)"},
		{"x::type", "SELECT pg_catalog.f(\n a.x::text, b\n )::regclass::oid", "SELECT CAST(regclass(pg_catalog.f(\n CAST(a.x AS CHAR), b\n ) ) AS SIGNED)"},
	}...)
}
