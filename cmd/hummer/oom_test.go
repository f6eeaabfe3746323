package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestQueryOutOfMemory: under a small --memory a GROUP BY over 3 million keys
// (about 500 MiB of groups in memory) spills to disk and answers right; a
// COUNT(DISTINCT) of them all, one group's state, which cannot spill, fails
// with 53200 (out_of_memory)
// instead of taking the process, and its other sessions, down; the server
// answers on.
func TestQueryOutOfMemory(t *testing.T) {
	bin := buildHummer(t)
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.csv")
	f, err := os.Create(keys)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	const n = 3000000 // about 500 MiB of aggregation state
	for i := range n {
		fmt.Fprintf(w, "key number %d,%d\n", i, i%10)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	addr := freeAddr(t)
	exited := startProcess(t, bin, "serve", "--pg-addr", addr, "--data-dir", filepath.Join(dir, "data"), "--memory", "120MiB")
	waitUntil(t, "PostgreSQL port", exited, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	other := connectPgx(t, ctx, addr) // a session that lives through it
	defer other.Close(context.Background())
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE kv (k TEXT, v BIGINT) ENGINE=file CONNECTION='file://%s?format=csv'", keys)); err != nil {
		t.Fatal(err)
	}
	var groups, sum int64
	start := time.Now()
	err = conn.QueryRow(ctx, "SELECT COUNT(*), SUM(s) FROM (SELECT k, SUM(v) AS s FROM kv GROUP BY k) AS t").Scan(&groups, &sum)
	if err != nil || groups != n || sum != n/10*45 {
		t.Fatalf("the GROUP BY over %d keys: %d groups summing to %d, %v; want %d and %d", n, groups, sum, err, n, n/10*45)
	}
	t.Logf("the GROUP BY over %d keys under --memory 120MiB: %s", n, time.Since(start))
	var distinct int64
	err = conn.QueryRow(ctx, "SELECT COUNT(DISTINCT k) FROM kv").Scan(&distinct)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53200" {
		t.Fatalf("COUNT(DISTINCT) of %d keys: %d, %v; want 53200", n, distinct, err)
	}
	t.Logf("%s", pe.Message)
	select {
	case <-exited:
		t.Fatal("the server died")
	default:
	}
	var one int64
	if err := other.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("the other session after the failed query: %d, %v", one, err)
	}
	if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM (SELECT v, COUNT(*) FROM kv GROUP BY v) AS t").Scan(&groups); err != nil || groups != 10 {
		t.Errorf("a GROUP BY of 10 groups after it: %d, %v", groups, err)
	}
}
