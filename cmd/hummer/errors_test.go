package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestErrorCodes checks that bad input gets the SQLSTATE and the position a
// PostgreSQL client expects, and that the session answers the next statement.
func TestErrorCodes(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())

	data, _ := filepath.Abs("testdata")
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file://%s/small.txt'", data)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		sql  string
		code string
		pos  int32 // 0: no position expected
	}{
		{"SELEC 1", "42601", 1},
		{"SELECT 1 +", "42601", 11},
		{"SELECT * FROM nope", "42P01", 15},
		{"SELECT line, nope FROM docs", "42703", 14},
		// Quoted names are exact, unquoted ones fold (PostgreSQL 15's positions).
		{`SELECT * FROM "Docs"`, "42P01", 15},
		{`SELECT LINE, "LINE" FROM DOCS`, "42703", 14},
		{`SELECT d."line", "Line" FROM docs d`, "42703", 18},
		{"SELECT nofunc(line) FROM docs", "42883", 0},
		{"SELECT line + 1 FROM docs", "42883", 0},
		{"SELECT line, COUNT(*) FROM docs", "42803", 0},
		{"DROP TABLE nope", "42P01", 0},
		{"CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file:///x'", "42P07", 0},
		{"CREATE TABLE t (line TEXT) ENGINE=file CONNECTION='file:///x?format=xml'", "22023", 0},
		{"CREATE TABLE t (line TEXT) ENGINE=nosuch CONNECTION='x://y'", "42704", 0},
		{"SELECT 1 / 0", "22012", 0},
		{"SELECT CAST('abc' AS SIGNED)", "22P02", 0},
	}
	for _, c := range cases {
		_, err := conn.Exec(ctx, c.sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			t.Errorf("%s: got %v, want a PostgreSQL error %s", c.sql, err, c.code)
			continue
		}
		if pgErr.Code != c.code {
			t.Errorf("%s: SQLSTATE %s (%s), want %s", c.sql, pgErr.Code, pgErr.Message, c.code)
		}
		if c.pos != 0 && pgErr.Position != c.pos {
			t.Errorf("%s: position %d, want %d", c.sql, pgErr.Position, c.pos)
		}
		var n int64
		if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM docs").Scan(&n); err != nil || n != 4 {
			t.Fatalf("after %q the session does not answer: n=%d err=%v", c.sql, n, err)
		}
	}
}

// TestColumnHints: a column that does not exist gets PostgreSQL's HINT naming
// the nearest columns in scope (the ErrorResponse's H field), the hints
// PostgreSQL 15 gives for the same queries; quoted names make "id" for "Id"
// a common slip.
func TestColumnHints(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	for _, s := range []string{
		`CREATE TABLE "Emp2" ("Id" BIGINT, "Name" TEXT, dept_id BIGINT, "Dept_Id" BIGINT)`,
		`CREATE TABLE docs (line TEXT)`,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, c := range []struct{ sql, msg, hint string }{
		{`SELECT Id FROM "Emp2"`, `column "id" does not exist`, `Perhaps you meant to reference the column "Emp2.Id".`},
		{`SELECT e.NAME FROM "Emp2" e`, `column e.name does not exist`, `Perhaps you meant to reference the column "e.Name".`},
		{`SELECT "name" FROM "Emp2"`, `column "name" does not exist`, `Perhaps you meant to reference the column "Emp2.Name".`},
		{`SELECT Dept_ids FROM "Emp2"`, `column "dept_ids" does not exist`, `Perhaps you meant to reference the column "Emp2.dept_id".`},
		{`SELECT lin FROM docs a, docs b`, `column "lin" does not exist`, `Perhaps you meant to reference the column "a.line" or the column "b.line".`},
		{`SELECT x.lines FROM docs x, docs y`, `column x.lines does not exist`, `Perhaps you meant to reference the column "x.line".`},
		{`SELECT lin FROM docs a, docs b, docs c`, `column "lin" does not exist`, ``},
		{`SELECT nme FROM "Emp2" a, "Emp2" b`, `column "nme" does not exist`, ``},
		{`SELECT "LINE" FROM docs`, `column "LINE" does not exist`, ``},
	} {
		_, err := conn.Exec(ctx, c.sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			t.Errorf("%s: got %v, want an error", c.sql, err)
			continue
		}
		if pgErr.Code != "42703" || pgErr.Message != c.msg || pgErr.Hint != c.hint {
			t.Errorf("%s: %s %q HINT %q, want 42703 %q HINT %q", c.sql, pgErr.Code, pgErr.Message, pgErr.Hint, c.msg, c.hint)
		}
	}
}
