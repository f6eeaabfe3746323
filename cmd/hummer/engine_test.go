package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5"

	"github.com/hummer-db/hummer/exec/vector"
	"github.com/hummer-db/hummer/session"
)

// TestCatalogSurvivesRestart declares a table and a view over it, stops the
// engine, starts a new one on the same data directory and queries both: the
// view's job started again by itself.
func TestCatalogSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	data, _ := filepath.Abs("testdata")
	ctx := context.Background()
	none := func(*session.Result) error { return nil }

	eng, err := openEngine(dir, 2, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := eng.NewSession()
	if err := s.Exec(ctx, fmt.Sprintf("CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file://%s/small.txt'", data), none); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "CREATE VIEW sizes (n) AS SELECT COUNT(*) FROM docs", none); err != nil {
		t.Fatal(err)
	}
	s.Close()
	eng.Close()

	eng, err = openEngine(dir, 2, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s = eng.NewSession()
	defer s.Close()
	var rows int
	err = s.Exec(ctx, "SELECT line FROM docs", func(r *session.Result) error {
		for {
			rec, err := r.Rows.Next(ctx)
			if err != nil {
				return nil
			}
			rows += int(rec.NumRows())
			rec.Release()
		}
	})
	if err != nil || rows != 4 {
		t.Fatalf("after restart: %d rows, err %v; want the table's 4 rows", rows, err)
	}
	// A query over the view waits until its job has read the bounded table.
	var n int64 = -1
	err = s.Exec(ctx, "SELECT n FROM sizes", func(r *session.Result) error {
		rec, err := r.Rows.Next(ctx)
		if err != nil {
			return err
		}
		defer rec.Release()
		n = rec.Column(0).(*array.Int64).Value(0)
		return nil
	})
	if err != nil || n != 4 {
		t.Fatalf("SELECT n FROM sizes right after the restart: %d, %v; want 4", n, err)
	}
}

// TestViewCaughtUp: a SELECT right after CREATE VIEW over a bounded table sees
// the view's whole result, not the part its job has computed so far: the
// WordCount of 20 copies of kjv.txt, summed, is every word of them (counted
// here); with wait_for_views off it reads at once.
func TestViewCaughtUp(t *testing.T) {
	kjv, err := os.ReadFile("../../data/kjv.txt")
	if err != nil {
		t.Fatal(err)
	}
	words := 0
	for _, line := range strings.Split(strings.ToLower(string(kjv)), "\n") {
		for _, w := range strings.Split(line, " ") {
			if w != "" {
				words++
			}
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "kjv20.txt")
	if err := os.WriteFile(path, bytes.Repeat(kjv, 20), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, srv)
	defer conn.Close(context.Background())
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE big (line TEXT) ENGINE=file CONNECTION='file://%s'", path),
		"CREATE VIEW wc AS SELECT word, COUNT(*) AS n FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM big) AS t WHERE word <> '' GROUP BY word",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var total int64
	if err := conn.QueryRow(ctx, "SELECT SUM(n) FROM wc").Scan(&total); err != nil || total != int64(20*words) {
		t.Fatalf("SELECT SUM(n) FROM wc right after CREATE VIEW: %d, %v; want %d", total, err, 20*words)
	}
	if _, err := conn.Exec(ctx, "SET wait_for_views = off"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT SUM(n) FROM wc").Scan(&total); err != nil || total != int64(20*words) {
		t.Fatalf("SELECT SUM(n) FROM wc once caught up, wait_for_views off: %d, %v", total, err)
	}
	if _, err := conn.Exec(ctx, "SET wait_for_views = maybe"); err == nil {
		t.Error("SET wait_for_views = maybe: no error")
	}
}

// TestConcurrentSessions runs queries from many clients at once through the wire
// server; every client must get the full, correct answer.
func TestConcurrentSessions(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	data, _ := filepath.Abs("testdata")
	setup := connectPgx(t, ctx, addr)
	defer setup.Close(context.Background())
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file://%s/small.txt'", data),
		fmt.Sprintf("CREATE TABLE emp (id BIGINT, name TEXT, dept_id BIGINT, salary DECIMAL(10,2), hired DATETIME, active BOOLEAN) ENGINE=file CONNECTION='file://%s/emp.csv?format=csv&header=true'", data),
		fmt.Sprintf("CREATE TABLE dept (id BIGINT, name TEXT, floor BIGINT) ENGINE=file CONNECTION='file://%s/dept.csv?format=csv&header=true'", data),
	} {
		if _, err := setup.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	const clients, rounds = 12, 5
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	cfg := pgxConfig(t, addr)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(context.Background())
			for r := 0; r < rounds; r++ {
				var n int64
				err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM docs) AS t WHERE word = 'the'`).Scan(&n)
				if err != nil || n != 4 {
					errs <- fmt.Errorf("client %d: count of 'the' = %d, err %v", c, n, err)
					return
				}
				var joined int64
				err = conn.QueryRow(ctx, `SELECT COUNT(*) FROM emp e JOIN dept d ON e.dept_id = d.id`).Scan(&joined)
				if err != nil || joined != 6 {
					errs <- fmt.Errorf("client %d: join count = %d, err %v", c, joined, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestClusterWordCount runs WordCount over the King James Bible on three
// TaskManagers joined by network channels, with parallelism 3, and compares every
// count with a plain Go word count: with the network edges' sending side fused
// into the producing tasks, and with network tasks of their own.
func TestClusterWordCount(t *testing.T) {
	for _, mode := range []string{"fused", "own"} {
		t.Run(mode, func(t *testing.T) { clusterWordCount(t, mode) })
	}
}

func clusterWordCount(t *testing.T, networkTask string) {
	kjv, err := filepath.Abs("../../data/kjv.txt")
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(kjv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, w := range strings.Fields(strings.ToLower(string(text))) {
		want[w]++
	}
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	eng, err := openCluster(t.TempDir(), 3, 1, nil, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s := eng.NewSession()
	defer s.Close()
	ctx := context.Background()
	var out strings.Builder
	err = s.Exec(ctx, fmt.Sprintf(`CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file://%s';
		SET parallelism = 3;
		SET network_task = '%s';
		SELECT word, COUNT(*) FROM (SELECT regexp_split_to_table(lower(line), '[[:space:]]+') AS word FROM docs) AS t
		WHERE word <> '' GROUP BY word`, kjv, networkTask), func(r *session.Result) error {
		if r.Rows == nil {
			return nil
		}
		for {
			rec, err := r.Rows.Next(ctx)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			words := rec.Column(0).(*array.String)
			counts := rec.Column(1).(*array.Int64)
			for i := 0; i < int(rec.NumRows()); i++ {
				fmt.Fprintf(&out, "%s|%d\n", words.Value(i), counts.Value(i))
			}
			rec.Release()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, out.String(), want)
}
