package main

import (
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
	// The view's job over the bounded table ends having filled the view.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int64 = -1
		err = s.Exec(ctx, "SELECT n FROM sizes", func(r *session.Result) error {
			rec, err := r.Rows.Next(ctx)
			if err != nil {
				return nil // empty: the job has not emitted yet
			}
			defer rec.Release()
			n = rec.Column(0).(*array.Int64).Value(0)
			return nil
		})
		if err != nil {
			t.Fatalf("SELECT n FROM sizes after restart: %v", err)
		}
		if n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after restart the view holds n = %d, want 4", n)
		}
		time.Sleep(20 * time.Millisecond)
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
