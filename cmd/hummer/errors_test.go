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
