package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestBadRowsNotice: a query over a file table with bad_rows=skip answers
// with the good rows and tells the client, in a NOTICE before the command
// completes, how many rows it skipped and the first, by both protocols; by
// default the same query fails with SQLSTATE 22000 naming the line.
func TestBadRowsNotice(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data, _ := filepath.Abs("testdata")
	setup := connectPgx(t, ctx, addr)
	defer setup.Close(context.Background())
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE bad (a BIGINT, b TEXT) ENGINE=file CONNECTION='file://%s/bad.csv?format=csv&header=true'", data),
		fmt.Sprintf("CREATE TABLE skipped (a BIGINT, b TEXT) ENGINE=file CONNECTION='file://%s/bad.csv?format=csv&header=true&bad_rows=skip'", data),
	} {
		if _, err := setup.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	want := fmt.Sprintf(`2 bad rows skipped (bad_rows=skip); the first: file %s/bad.csv, line 4: column a: invalid bigint "three"`, data)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		cfg := pgxConfig(t, addr)
		cfg.DefaultQueryExecMode = mode
		var mu sync.Mutex
		var notices []string
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			mu.Lock()
			notices = append(notices, n.Message)
			mu.Unlock()
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM skipped").Scan(&n); err != nil || n != 3 {
			t.Errorf("mode %v: COUNT(*) = %d, %v; want 3", mode, n, err)
		}
		mu.Lock()
		if len(notices) != 1 || notices[0] != want {
			t.Errorf("mode %v: notices %q, want %q", mode, notices, want)
		}
		mu.Unlock()
		_, err = conn.Exec(ctx, "SELECT a FROM bad")
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22000" || !strings.Contains(pe.Message, "bad.csv, line 4") {
			t.Errorf("mode %v: the default table's query: %v, want 22000 naming line 4", mode, err)
		}
		conn.Close(context.Background())
	}
	// psql shows the notice.
	out, err := psqlErr(addr, "SELECT b FROM skipped ORDER BY a")
	if err != nil || !strings.Contains(out, "NOTICE:  2 bad rows skipped") || !strings.Contains(out, "six") {
		t.Errorf("psql: %v\n%s", err, out)
	}
}
