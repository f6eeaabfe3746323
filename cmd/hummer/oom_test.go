package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestQueryOutOfMemory: under a small --memory a GROUP BY over 3 million keys
// (about 500 MiB of groups in memory), an ORDER BY of all its rows and a join
// of them to themselves spill to disk and answer right; a COUNT(DISTINCT) of
// them all, one group's state, which cannot spill, fails with 53200
// (out_of_memory) instead of taking the process, and its other sessions,
// down; the server answers on.
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
	// A sort of every row spills its runs and merges them; a top-N of the
	// groups holds only its N. The answers come from sorting the keys here.
	// (Each row doubled, about twice the memory the server has.)
	all := make([]string, n)
	for i := range n {
		all[i] = fmt.Sprintf("key number %d key number %d", i, i)
	}
	slices.Sort(all)
	start = time.Now()
	got := queryStrings(t, ctx, conn, "SELECT kk FROM (SELECT CONCAT(k, ' ', k) AS kk FROM kv) AS t ORDER BY kk DESC LIMIT 3 OFFSET 1500000")
	if want := []string{all[n-1-1500000], all[n-1-1500001], all[n-1-1500002]}; !slices.Equal(got, want) {
		t.Errorf("the sort of every row: %q, want %q", got, want)
	}
	t.Logf("ORDER BY over %d rows under --memory 120MiB: %s", n, time.Since(start))
	var nines []string
	for _, k := range all {
		var i int
		fmt.Sscanf(k, "key number %d", &i)
		if i%10 == 9 && len(nines) < 3 {
			nines = append(nines, fmt.Sprintf("key number %d", i))
		}
	}
	got = queryStrings(t, ctx, conn, "SELECT k FROM (SELECT k, SUM(v) AS s FROM kv GROUP BY k) AS t ORDER BY s DESC, k LIMIT 3")
	if !slices.Equal(got, nines) {
		t.Errorf("the top 3 groups: %q, want %q", got, nines)
	}

	// A join whose build side is every row partitions both sides to disk.
	var pairs, vsum int64
	start = time.Now()
	err = conn.QueryRow(ctx, "SELECT COUNT(*), SUM(a.v) FROM kv AS a JOIN kv AS b ON a.k = b.k").Scan(&pairs, &vsum)
	if err != nil || pairs != n || vsum != n/10*45 {
		t.Fatalf("the self-join on %d keys: %d rows summing to %d, %v; want %d and %d", n, pairs, vsum, err, n, n/10*45)
	}
	t.Logf("a join of %d rows to %d under --memory 120MiB: %s", n, n, time.Since(start))

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

// queryStrings returns the first column of query's rows, as text.
func queryStrings(t *testing.T, ctx context.Context, conn *pgx.Conn, query string) []string {
	t.Helper()
	rows, err := conn.Query(ctx, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}
