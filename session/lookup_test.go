package session_test

import (
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/sql"
)

// EXPLAIN shows the primary-key lookup of a scan whose filter confines a
// stored table's key, and none for a table without a key or a filter on
// another column.
func TestExplainKeyLookup(t *testing.T) {
	s := openServeEngine(t)
	mustRun(t, s, "CREATE TABLE pk (id BIGINT PRIMARY KEY, v TEXT)")
	mustRun(t, s, "CREATE TABLE nokey (id BIGINT, v TEXT)")
	for _, c := range []struct{ query, want string }{
		{"EXPLAIN SELECT v FROM pk WHERE id = 5", "(primary-key lookup id in 5)"},
		{"EXPLAIN SELECT v FROM pk WHERE id BETWEEN 3 AND 8", "(primary-key lookup id in 3..8)"},
		{"EXPLAIN SELECT v FROM pk WHERE id IN (8, 2, 5)", "(primary-key lookup id in 2, 5, 8)"},
		{"EXPLAIN SELECT v FROM pk WHERE id >= 100 AND v = 'x'", "(primary-key lookup id in 100..)"},
		{"EXPLAIN SELECT v FROM pk WHERE v = 'x'", ""},
		{"EXPLAIN SELECT v FROM nokey WHERE id = 5", ""},
	} {
		out := mustRun(t, s, c.query)
		if c.want == "" {
			if strings.Contains(out, "primary-key lookup") {
				t.Errorf("%s: a lookup:\n%s", c.query, out)
			}
			continue
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("%s: no %q in\n%s", c.query, c.want, out)
		}
	}
}

// The binder's row-id column is the one the stored table's source fills.
func TestRowIDColumnName(t *testing.T) {
	if sql.RowIDColumn != exec.RowIDColumn {
		t.Errorf("sql.RowIDColumn %q, exec.RowIDColumn %q", sql.RowIDColumn, exec.RowIDColumn)
	}
}
