package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestResultsEncodedByTasks reads results that several result tasks produce,
// and so encode themselves (session.EncodingRows), through both protocols: the
// simple one (text) and pgx's extended one (binary integers), with NULLs among
// them. The expected counts come from the input's construction.
func TestResultsEncodedByTasks(t *testing.T) {
	addr := startTestServer(t)
	ctx := context.Background()
	var lines strings.Builder
	const rows, words = 10000, 500
	for i := range rows {
		fmt.Fprintf(&lines, "w%d\n", i%words)
	}
	data := filepath.Join(t.TempDir(), "words.txt")
	if err := os.WriteFile(data, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	query := "SELECT line, COUNT(*) AS n, NULLIF(line, 'w7') AS maybe FROM docs GROUP BY line"
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg := pgxConfig(t, addr)
			cfg.DefaultQueryExecMode = mode
			conn, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS docs (line TEXT) ENGINE=file CONNECTION='file://"+data+"'"); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, "SET parallelism = 2"); err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			res, err := conn.Query(ctx, query)
			if err != nil {
				t.Fatal(err)
			}
			for res.Next() {
				var line string
				var n int64
				var maybe *string
				if err := res.Scan(&line, &n, &maybe); err != nil {
					t.Fatal(err)
				}
				if (maybe == nil) != (line == "w7") || (maybe != nil && *maybe != line) {
					t.Errorf("%s: NULLIF gave %v", line, maybe)
				}
				got[line] += n
			}
			if err := res.Err(); err != nil {
				t.Fatal(err)
			}
			if tag := res.CommandTag().String(); tag != fmt.Sprintf("SELECT %d", words) {
				t.Errorf("command tag %q, want SELECT %d", tag, words)
			}
			if len(got) != words {
				t.Fatalf("%d words, want %d", len(got), words)
			}
			for w, n := range got {
				if n != rows/words {
					t.Errorf("%s: count %d, want %d", w, n, rows/words)
				}
			}
		})
	}
}
