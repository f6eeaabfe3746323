package session_test

import (
	"strings"
	"testing"
)

// TestViewOverJoinedTables: views joining two tables Hummer stores follow
// INSERT, DELETE and UPDATE on either table (a stream join of their
// changes). The expected rows are worked out by hand from the statements:
// an inner join with a condition beside the keys, and a full join whose
// NULL-padded rows come and go as matches do.
func TestViewOverJoinedTables(t *testing.T) {
	s := openServeEngine(t)
	mustRun(t, s, "CREATE TABLE emp (id BIGINT, name TEXT, dept BIGINT, pay BIGINT)")
	mustRun(t, s, "CREATE TABLE dept (id BIGINT, dname TEXT, floor BIGINT)")
	mustRun(t, s, "INSERT INTO emp VALUES (1, 'ann', 10, 100), (2, 'bob', 10, 50), (3, 'cy', 20, 70), (4, 'di', NULL, 10)")
	mustRun(t, s, "INSERT INTO dept VALUES (10, 'eng', 1), (30, 'ops', 3)")
	mustRun(t, s, `CREATE VIEW rich AS SELECT e.name, d.dname FROM emp AS e JOIN dept AS d ON e.dept = d.id AND e.pay > 60`)
	mustRun(t, s, `CREATE VIEW everyone AS SELECT e.name, d.dname FROM emp AS e FULL JOIN dept AS d ON e.dept = d.id`)
	const rich = "SELECT name, dname FROM rich ORDER BY name, dname"
	const all = "SELECT coalesce(name, '-'), coalesce(dname, '-') FROM everyone ORDER BY 1, 2"

	waitRows(t, s, rich, quoted("ann|eng"))
	waitRows(t, s, all, quoted("-|ops\nann|eng\nbob|eng\ncy|-\ndi|-"))

	// cy's department arrives: cy's NULL-padded row goes.
	mustRun(t, s, "INSERT INTO dept VALUES (20, 'hr', 2)")
	waitRows(t, s, rich, quoted("ann|eng\ncy|hr"))
	waitRows(t, s, all, quoted("-|ops\nann|eng\nbob|eng\ncy|hr\ndi|-"))

	// A second eng row: each eng employee joins both.
	mustRun(t, s, "INSERT INTO dept VALUES (10, 'eng2', 1)")
	waitRows(t, s, rich, quoted("ann|eng\nann|eng2\ncy|hr"))
	waitRows(t, s, all, quoted("-|ops\nann|eng\nann|eng2\nbob|eng\nbob|eng2\ncy|hr\ndi|-"))

	// bob's raise passes the condition; di moves to ops (whose NULL-padded
	// row goes).
	mustRun(t, s, "UPDATE emp SET pay = 80 WHERE id = 2")
	mustRun(t, s, "UPDATE emp SET dept = 30 WHERE id = 4")
	waitRows(t, s, rich, quoted("ann|eng\nann|eng2\nbob|eng\nbob|eng2\ncy|hr"))
	waitRows(t, s, all, quoted("ann|eng\nann|eng2\nbob|eng\nbob|eng2\ncy|hr\ndi|ops"))

	// Both eng rows go: ann and bob are left NULL-padded, once each.
	mustRun(t, s, "DELETE FROM dept WHERE id = 10")
	waitRows(t, s, rich, quoted("cy|hr"))
	waitRows(t, s, all, quoted("ann|-\nbob|-\ncy|hr\ndi|ops"))

	// di leaves: ops is alone again; a department renamed.
	mustRun(t, s, "DELETE FROM emp WHERE name = 'di'")
	mustRun(t, s, "UPDATE dept SET dname = 'people' WHERE id = 20")
	waitRows(t, s, rich, quoted("cy|people"))
	waitRows(t, s, all, quoted("-|ops\nann|-\nbob|-\ncy|people"))

	// SET state_ttl takes PostgreSQL's and Go's spellings of an interval.
	for _, v := range []string{"'1h'", "'30 min'", "'90s'", "0"} {
		mustRun(t, s, "SET state_ttl = "+v)
	}
	if _, err := run(s, "SET state_ttl = 'soon'"); err == nil {
		t.Errorf("SET state_ttl = 'soon' succeeded")
	}
	// It reaches the stream join of a continuous query (two streams).
	mustRun(t, s, "CREATE TABLE s1 (k BIGINT, v TEXT) ENGINE=socket CONNECTION='socket://127.0.0.1:9?format=csv'")
	mustRun(t, s, "SET state_ttl = '90 min'")
	if out := mustRun(t, s, "EXPLAIN SELECT a.v, b.v FROM s1 AS a JOIN s1 AS b ON a.k = b.k"); !strings.Contains(out, "stream_join inner on k = k state_ttl=1h30m0s") {
		t.Errorf("EXPLAIN with state_ttl = '90 min':\n%s", out)
	}
	mustRun(t, s, "DROP VIEW rich")
	mustRun(t, s, "DROP VIEW everyone")
}

// quoted writes rows "a|b\nc|d" as the session prints text values.
func quoted(rows string) string {
	lines := strings.Split(rows, "\n")
	for i, l := range lines {
		lines[i] = "'" + strings.ReplaceAll(l, "|", "'|'") + "'"
	}
	return strings.Join(lines, "\n")
}
