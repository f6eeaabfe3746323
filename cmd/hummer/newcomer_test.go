package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// TestSQLCommand: `hummer sql -f -` runs a script from standard input one
// statement at a time, stops at the first error and names its line and
// SQLSTATE; a script that does not parse runs nothing; and while a server
// holds the data directory, hummer sql refuses it (as a second server does)
// instead of changing the catalog under the server.
func TestSQLCommand(t *testing.T) {
	bin := buildHummer(t)
	dir := filepath.Join(t.TempDir(), "data")
	run := func(stdin string, args ...string) (stdout, stderr string, err error) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"sql", "--data-dir", dir}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		return out.String(), errOut.String(), err
	}

	script := "CREATE TABLE t (a BIGINT);\nINSERT INTO t VALUES (1), (2);\n\nSELECT a,\n       nope\n  FROM t;\nINSERT INTO t VALUES (3);\n"
	stdout, stderr, err := run(script, "-f", "-")
	if err == nil {
		t.Errorf("a failing script exited 0")
	}
	if stdout != "CREATE TABLE\nINSERT 0 2\n" {
		t.Errorf("stdout:\n%s\nwant the two statements before the failing one", stdout)
	}
	if want := `hummer: <stdin>:5: ERROR:  column "nope" does not exist (SQLSTATE 42703)` + "\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	// The statements before the error stayed; the one after never ran.
	stdout, _, err = run("", "-e", "SELECT count(*) AS n FROM t")
	if err != nil || stdout != " n \n---\n 2\n(1 row)\n\n" {
		t.Errorf("count after the script: %v\n%q", err, stdout)
	}
	_, stderr, err = run("INSERT INTO t VALUES (4);\nSELEC 5;\n", "-f", "-")
	if want := `hummer: <stdin>:2: ERROR:  syntax error at or near "SELEC" (SQLSTATE 42601)` + "\n"; err == nil || stderr != want {
		t.Errorf("a script that does not parse: %v, stderr %q, want %q", err, stderr, want)
	}
	stdout, _, _ = run("SELECT count(*) AS n FROM t;", "-f", "-")
	if stdout != " n \n---\n 2\n(1 row)\n\n" {
		t.Errorf("a script that does not parse ran some of it: count\n%s", stdout)
	}

	// A timestamptz prints in the session's zone, as psql prints PostgreSQL's.
	stdout, _, err = run("SET TIME ZONE 'Asia/Tokyo';\nSELECT TIMESTAMPTZ '2024-01-01 00:00:00+00' AS t;\n", "-f", "-")
	if want := "SET\n           t            \n------------------------\n 2024-01-01 09:00:00+09\n(1 row)\n\n"; err != nil || stdout != want {
		t.Errorf("timestamptz after SET TIME ZONE: %v\n%q\nwant %q", err, stdout, want)
	}

	// A server on the directory: hummer sql and a second server are refused.
	addr := freeAddr(t)
	exited := startProcess(t, bin, "serve", "--pg-addr", addr, "--data-dir", dir)
	waitUntil(t, "the server", exited, func() bool {
		_, err := psqlErr(addr, "SELECT 1;")
		return err == nil
	})
	_, stderr, err = run("SELECT 1;", "-f", "-")
	inUse := fmt.Sprintf("data directory %s is in use by another hummer process", dir)
	if err == nil || !strings.Contains(stderr, inUse) {
		t.Errorf("hummer sql beside the server: %v, stderr %q, want %q", err, stderr, inUse)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a second server that starts is killed
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "serve", "--pg-addr", freeAddr(t), "--data-dir", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), inUse) {
		t.Errorf("a second server on the directory: %v\n%s", err, out)
	}
	if got := psql(t, addr, "SELECT count(*) FROM t;"); got != "2\n" {
		t.Errorf("the server's count: %q", got)
	}
}
