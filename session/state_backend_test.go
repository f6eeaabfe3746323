package session_test

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// TestStateBackendDisk: SET state_backend = 'disk' reaches a continuous
// GROUP BY (a view over a stored table, which retracts), whose answers follow
// inserts, updates and deletes; the expected rows are counted here from the
// rows written.
func TestStateBackendDisk(t *testing.T) {
	s := openServeEngine(t)
	if _, err := run(s, "SET state_backend = 'tape'"); err == nil || !strings.Contains(err.Error(), "state_backend") {
		t.Fatalf("SET state_backend = 'tape': %v", err)
	}
	mustRun(t, s, "SET state_backend = 'disk'")
	mustRun(t, s, "CREATE TABLE t (k BIGINT, g BIGINT, v BIGINT)")
	const groups = 300
	rows := map[int][2]int{} // k -> (g, v)
	var vals []string
	for k := range 3000 {
		rows[k] = [2]int{k % groups, k * 3}
		vals = append(vals, fmt.Sprintf("(%d, %d, %d)", k, k%groups, k*3))
	}
	mustRun(t, s, "INSERT INTO t VALUES "+strings.Join(vals, ", "))
	// count(DISTINCT) and min/max over a stored table's changes (which
	// retract) keep each group's values on disk too.
	const view = "SELECT g, count(*) AS n, sum(v) AS s, count(DISTINCT v % 7) AS d, min(v) AS lo, max(v) AS hi FROM t GROUP BY g"
	if out := mustRun(t, s, "EXPLAIN "+view); strings.Contains(out, "state_backend") {
		t.Errorf("a bounded GROUP BY is labelled with a state backend:\n%s", out)
	}
	mustRun(t, s, "CREATE VIEW v AS "+view)
	want := func() string {
		n, sum, lo, hi := map[int]int{}, map[int]int{}, map[int]int{}, map[int]int{}
		mods := map[int]map[int]bool{}
		for _, r := range rows {
			g, v := r[0], r[1]
			if n[g] == 0 || v < lo[g] {
				lo[g] = v
			}
			if n[g] == 0 || v > hi[g] {
				hi[g] = v
			}
			n[g]++
			sum[g] += v
			if mods[g] == nil {
				mods[g] = map[int]bool{}
			}
			mods[g][v%7] = true
		}
		var lines []string
		for g := range n {
			lines = append(lines, fmt.Sprintf("%d|%d|%d|%d|%d|%d", g, n[g], sum[g], len(mods[g]), lo[g], hi[g]))
		}
		sort.Slice(lines, func(i, j int) bool {
			var a, b int
			fmt.Sscan(strings.Split(lines[i], "|")[0], &a)
			fmt.Sscan(strings.Split(lines[j], "|")[0], &b)
			return a < b
		})
		return strings.Join(lines, "\n")
	}
	waitRows(t, s, "SELECT * FROM v ORDER BY g", want())
	// Group 7 loses every row; rows move between groups.
	mustRun(t, s, fmt.Sprintf("DELETE FROM t WHERE g = 7 OR k < 100"))
	for k, r := range rows {
		if r[0] == 7 || k < 100 {
			delete(rows, k)
		}
	}
	mustRun(t, s, "UPDATE t SET g = g + 1, v = v + 1 WHERE k % 10 = 3")
	for k, r := range rows {
		if k%10 == 3 {
			rows[k] = [2]int{r[0] + 1, r[1] + 1}
		}
	}
	waitRows(t, s, "SELECT * FROM v ORDER BY g", want())
	mustRun(t, s, "DROP VIEW v")
}

// TestStateBackendExplain: the setting shows on a streaming GROUP BY's plan.
func TestStateBackendExplain(t *testing.T) {
	s := openServeEngine(t)
	mustRun(t, s, "CREATE TABLE s1 (k BIGINT, v TEXT) ENGINE=socket CONNECTION='socket://127.0.0.1:9?format=csv'")
	mustRun(t, s, "SET state_backend = 'disk'")
	if out := mustRun(t, s, "EXPLAIN SELECT k, count(*) FROM s1 GROUP BY k"); !strings.Contains(out, "state_backend=disk") {
		t.Errorf("EXPLAIN with state_backend = 'disk':\n%s", out)
	}
	if out := mustRun(t, s, "EXPLAIN SELECT a.v, b.v FROM s1 AS a JOIN s1 AS b ON a.k = b.k"); !strings.Contains(out, "stream_join inner on k = k state_backend=disk") {
		t.Errorf("EXPLAIN of a stream join with state_backend = 'disk':\n%s", out)
	}
}

// TestStateBackendReadme runs the README's example of SET state_backend as
// it is written; the counts are the example's rows counted by hand.
func TestStateBackendReadme(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(data), "```")
	block := ""
	for i := 1; i < len(parts); i += 2 {
		if strings.Contains(parts[i], "SET state_backend = 'disk'") {
			_, block, _ = strings.Cut(parts[i], "\n")
		}
	}
	if block == "" {
		t.Fatal("README.md has no example of SET state_backend")
	}
	s := openServeEngine(t)
	var last string
	for _, stmt := range strings.Split(block, ";") {
		if stmt = strings.TrimSpace(stmt); stmt != "" {
			last = mustRun(t, s, stmt)
		}
	}
	if last != "1|2\n2|1" {
		t.Fatalf("the example's SELECT: %q, want 1|2 and 2|1", last)
	}
}
