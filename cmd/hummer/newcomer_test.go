package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// What a newcomer meets first (issue 23): a file table over a file that is
// not there, a view whose job was killed, and `hummer sql` beside a server.

// TestFileTableMissingFile: CREATE TABLE over a missing file is refused with
// 58P01 in PostgreSQL's words for COPY FROM a missing file, and no table is
// made; over a directory with 42809; once the file exists the same statement
// works.
func TestFileTableMissingFile(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	dir := t.TempDir()
	path := filepath.Join(dir, "people.csv")
	create := fmt.Sprintf("CREATE TABLE people (id BIGINT, name TEXT) ENGINE=file CONNECTION='file://%s?format=csv&header=true'", path)

	_, err := conn.Exec(ctx, create)
	want := fmt.Sprintf(`could not open file "%s" for reading: No such file or directory`, path)
	if pe := pgError(err); pe == nil || pe.Code != "58P01" || pe.Message != want {
		t.Errorf("CREATE TABLE over a missing file: %v, want 58P01 %q", err, want)
	}
	_, err = conn.Exec(ctx, "SELECT * FROM people")
	if pe := pgError(err); pe == nil || pe.Code != "42P01" {
		t.Errorf("the refused table: %v, want 42P01 (no such table)", err)
	}
	_, err = conn.Exec(ctx, fmt.Sprintf("CREATE TABLE d (line TEXT) ENGINE=file CONNECTION='file://%s'", dir))
	if pe := pgError(err); pe == nil || pe.Code != "42809" {
		t.Errorf("CREATE TABLE over a directory: %v, want 42809", err)
	}

	if err := os.WriteFile(path, []byte("id,name\n1,Ada\n2,Alan\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, create); err != nil {
		t.Fatalf("once the file exists: %v", err)
	}
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM people").Scan(&n); err != nil || n != 2 {
		t.Errorf("count(*): %d, %v; want 2", n, err)
	}
	// A file removed after CREATE still fails the query that reads it.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "SELECT count(*) FROM people")
	if pe := pgError(err); pe == nil || pe.Code != "58P01" {
		t.Errorf("a query over the removed file: %v, want 58P01", err)
	}
}

// TestKilledViewRefused: after KILL of the job that keeps a view, the view
// no longer follows its inputs, so reading it fails with 55000 naming the
// stopped job instead of answering the rows it had; DROP VIEW still works
// and a new view of the same name answers again.
func TestKilledViewRefused(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	for _, stmt := range []string{
		"CREATE TABLE events (kind TEXT)",
		"INSERT INTO events VALUES ('a'), ('b'), ('a')",
		"CREATE VIEW kinds AS SELECT kind, COUNT(*) AS n FROM events GROUP BY kind",
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	count := func() (int64, error) {
		var n int64
		err := conn.QueryRow(ctx, "SELECT n FROM kinds WHERE kind = 'a'").Scan(&n)
		return n, err
	}
	if n, err := count(); err != nil || n != 2 {
		t.Fatalf("the view before KILL: %d, %v; want 2", n, err)
	}

	id := viewJob(t, ctx, conn, "CREATE VIEW kinds")
	if _, err := conn.Exec(ctx, "KILL "+id); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO events VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	_, err := count()
	want := fmt.Sprintf("view kinds is stopped: its job %s was stopped (job cancelled: KILL %s) and no longer follows its inputs; DROP VIEW kinds and create it again", id, id)
	if pe := pgError(err); pe == nil || pe.Code != "55000" || pe.Message != want {
		t.Errorf("the view after KILL: %v, want 55000 %q", err, want)
	}

	for _, stmt := range []string{"DROP VIEW kinds", "CREATE VIEW kinds AS SELECT kind, COUNT(*) AS n FROM events GROUP BY kind"} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if n, err := count(); err != nil || n != 3 {
		t.Errorf("the view created again: %d, %v; want 3", n, err)
	}
}

// viewJob returns the id of the running job SHOW PROCESSLIST lists for the
// statement starting with prefix.
func viewJob(t *testing.T, ctx context.Context, conn *pgx.Conn, prefix string) string {
	t.Helper()
	rows, err := conn.Query(ctx, "SHOW PROCESSLIST")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var listed []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		stmt, _ := vals[1].(string)
		state, _ := vals[2].(string)
		if strings.HasPrefix(stmt, prefix) && state == "running" {
			return fmt.Sprint(vals[0])
		}
		listed = append(listed, fmt.Sprint(vals[:3]))
	}
	t.Fatalf("SHOW PROCESSLIST has no running job for %q: %v", prefix, listed)
	return ""
}

// pgError is err's PostgreSQL error, or nil.
func pgError(err error) *pgconn.PgError {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}
