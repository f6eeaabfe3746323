package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestInsertJob: INSERT INTO t SELECT runs a job, which SHOW PROCESSLIST
// shows; into a memory table the statement returns once the job has written
// its rows, with their number, and then the rows are in the table.
func TestInsertJob(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	data, _ := filepath.Abs("testdata")
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE emp (id BIGINT, name TEXT, dept_id BIGINT, salary DECIMAL(10,2), hired DATETIME, active BOOLEAN) ENGINE=file CONNECTION='file://%s/emp.csv?format=csv&header=true'", data),
		"CREATE TABLE rich (id BIGINT, name TEXT) ENGINE=memory CONNECTION='memory://rich'",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	tag, err := conn.Exec(ctx, "INSERT INTO rich SELECT id, upper(name) FROM emp WHERE salary > 5000")
	if err != nil {
		t.Fatal(err)
	}
	if tag.String() != "INSERT 0 3" {
		t.Errorf("tag %q", tag)
	}
	// The job is listed, finished.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var state, stmt string
		var in, out int64
		err := conn.QueryRow(ctx, "SHOW PROCESSLIST").Scan(nil, &stmt, &state, nil, &in, &out, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(stmt, "INSERT INTO rich") {
			t.Fatalf("SHOW PROCESSLIST lists %q", stmt)
		}
		if state == "finished" {
			if in != 8 || out != 3 {
				t.Errorf("rows in %d, out %d; want 8 and 3", in, out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still %s after 30s", state)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	rows, err := conn.Query(ctx, "SELECT id, name FROM rich ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %s", id, name))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ", ") != "1 ALICE, 3 CAROL, 7 GRACE" {
		t.Errorf("rich holds %v", got)
	}
	// COPY (...) TO STDOUT over a bounded table ends with the table: each row a
	// line of its columns, tab-separated, NULL as \N, as in PostgreSQL.
	var out strings.Builder
	tag, err = conn.PgConn().CopyTo(ctx, &out, "COPY (SELECT id, name, dept_id FROM emp WHERE id IN (2, 5, 8)) TO STDOUT")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	sort.Strings(lines)
	if got := strings.Join(lines, "|"); got != "2\tBob\t20|5\tEve\t\\N|8\tO'Neil, Pat\t40" || tag.String() != "COPY 3" {
		t.Errorf("COPY gave %q, tag %q", got, tag)
	}

	for _, bad := range []struct{ sql, code string }{
		{"INSERT INTO rich SELECT id, name, id FROM emp", "42601"},
		{"INSERT INTO rich SELECT name, id FROM emp", "42804"},
		{"UPDATE rich SET id = 1", "42809"},
		{"INSERT INTO rich SELECT * FROM rich ON DUPLICATE KEY UPDATE id = 1", "0A000"},
		{"KILL 999", "22023"},
	} {
		_, err := conn.Exec(ctx, bad.sql)
		if err == nil || !strings.Contains(err.Error(), bad.code) {
			t.Errorf("%s: err %v, want SQLSTATE %s", bad.sql, err, bad.code)
		}
	}
}

// TestMemoryTableDML: a memory table is filled by the same statements as
// any table and answers as one: empty when new, INSERT's tag the rows it
// wrote. The expected tags and rows are PostgreSQL 15's for the same
// statements over CREATE TABLE m (a BIGINT, b TEXT).
func TestMemoryTableDML(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, startTestServer(t))
	defer conn.Close(context.Background())
	rows := func(q string) string {
		t.Helper()
		r, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return strings.Join(scanLines(t, r), " | ")
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE m (a BIGINT, b TEXT) ENGINE=memory CONNECTION='memory://m'"); err != nil {
		t.Fatal(err)
	}
	if got := rows("SELECT * FROM m"); got != "" {
		t.Errorf("a new memory table holds %q, want no rows", got)
	}
	for _, c := range []struct{ sql, tag string }{
		{"INSERT INTO m VALUES (1, 'x'), (2, 'y')", "INSERT 0 2"},
		{"INSERT INTO m SELECT a + 10, b FROM m", "INSERT 0 2"},
		{"INSERT INTO m SELECT a, b FROM m WHERE a > 100", "INSERT 0 0"},
	} {
		tag, err := conn.Exec(ctx, c.sql)
		if err != nil || tag.String() != c.tag {
			t.Errorf("%s: %q, %v; want %s", c.sql, tag, err, c.tag)
		}
	}
	if got, want := rows("SELECT * FROM m ORDER BY a"), "1 x | 2 y | 11 x | 12 y"; got != want {
		t.Errorf("m holds %q, want %q", got, want)
	}
}
