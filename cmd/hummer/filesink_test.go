package main

import (
	"context"
	"encoding/csv"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestNexmarkQ10 runs Nexmark q10 (bench/nexmark/q10.sql) over the bounded
// Nexmark tables into a temporary directory and checks the files the file
// sink committed: read with encoding/csv, their rows are the bids read
// through a plain SELECT, each once, with the day and minute computed here
// from the bid's time, and each in the directory dt=<day>/hm=<minute>; they
// are PostgreSQL's answer to the query (testdata/nexmark/q10.pg). The table
// then reads back whole through SELECT.
func TestNexmarkQ10(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := nexmarkConn(t, ctx)
	defer conn.Close(context.Background())
	out := filepath.Join(t.TempDir(), "bid")
	text, err := os.ReadFile("../../bench/nexmark/q10.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, strings.ReplaceAll(string(text), "${OUTPUT}", out)); err != nil {
		t.Fatal(err)
	}
	waitJobDone(t, ctx, conn, "INSERT INTO nexmark_q10")

	// What the files must hold: every bid, its day and minute taken from the
	// text of its time (YYYY-MM-DD HH:MM:SS[.ffffff]), not by DATE_FORMAT.
	bids := sortedRows(t, ctx, conn, "SELECT auction, bidder, price, dateTime, extra FROM bid")
	if len(bids) < 100000 {
		t.Fatalf("%d bids", len(bids))
	}
	want := make([]string, 0, len(bids))
	for _, b := range bids {
		f := strings.Split(b, "|")
		ts := f[3]
		want = append(want, b+"|"+ts[:10]+"|"+ts[11:16])
	}
	slices.Sort(want)

	var got []string
	dirs := map[string]bool{}
	err = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		dir, name := filepath.Split(filepath.ToSlash(rel))
		if strings.HasPrefix(name, ".") {
			t.Errorf("an in-progress file is left: %s", rel)
			return nil
		}
		if !strings.HasPrefix(name, "part-") || !strings.HasSuffix(name, ".csv") {
			t.Errorf("file %s: want part-*.csv", rel)
		}
		dirs[dir] = true
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		recs, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		for _, r := range recs {
			if len(r) != 7 {
				t.Fatalf("%s: a record of %d fields: %q", rel, len(r), r)
			}
			if d := "dt=" + r[5] + "/hm=" + r[6] + "/"; dir != d {
				t.Errorf("%s holds a row of partition %s: %q", rel, d, r)
			}
			got = append(got, strings.Join(r, "|"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if len(dirs) < 2 {
		t.Errorf("the rows went to %d partition directories: %v", len(dirs), dirs)
	}
	checkSameRows(t, "the committed files", got, want)
	t.Logf("%d rows in %d partition directories", len(got), len(dirs))
	// And they are PostgreSQL's answer to q10 over the same events
	// (nexmarkPG, TestNexmarkVsPostgres): its rows' count and MD5.
	pg, err := os.ReadFile("testdata/nexmark/q10.pg")
	if err != nil {
		t.Fatal(err)
	}
	if d := digest(got); d != string(pg) {
		t.Errorf("the committed files: %s\nPostgreSQL's: %s", strings.TrimSpace(d), strings.TrimSpace(string(pg)))
	}

	// SELECT reads the table back: the committed files under its directory.
	checkSameRows(t, "SELECT * FROM nexmark_q10", sortedRows(t, ctx, conn, "SELECT * FROM nexmark_q10"), want)
}

// checkSameRows reports the first difference of two sorted multisets of rows.
func checkSameRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	var g, w string
	if i < len(got) {
		g = got[i]
	}
	if i < len(want) {
		w = want[i]
	}
	t.Errorf("%s: %d rows, want %d; first difference at %d: %q, want %q", what, len(got), len(want), i, g, w)
}

// waitJobDone waits until the job whose statement starts with prefix has
// finished; it fails the test if the job failed.
func waitJobDone(t *testing.T, ctx context.Context, conn *pgx.Conn, prefix string) {
	t.Helper()
	var state, msg string
	waitFor(t, ctx, prefix+" to finish", func() bool {
		rows, err := conn.Query(ctx, "SHOW PROCESSLIST", pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		found := false
		var listed []string
		for rows.Next() {
			vals := rows.RawValues()
			listed = append(listed, string(vals[1]))
			if strings.HasPrefix(strings.TrimSpace(string(vals[1])), prefix) {
				found, state, msg = true, string(vals[2]), string(vals[9])
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !found {
			t.Fatalf("SHOW PROCESSLIST does not list %s: %q", prefix, listed)
		}
		if state == "failed" {
			t.Fatalf("%s failed: %s", prefix, msg)
		}
		return state == "finished"
	})
}

// TestFileSinkSQL: a directory table reads as empty before it is written;
// INSERT writes JSON part files that SELECT reads back, a second INSERT adds
// to them; INSERT into a file table over one file is refused.
func TestFileSinkSQL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, startTestServer(t))
	defer conn.Close(context.Background())
	dir := filepath.Join(t.TempDir(), "out")
	one := filepath.Join(t.TempDir(), "one.csv")
	if err := os.WriteFile(one, []byte("1,a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE src (id BIGINT, name TEXT) ENGINE=file CONNECTION='file://" + one + "?format=csv'",
		"CREATE TABLE written (id BIGINT, name TEXT) ENGINE=file CONNECTION='file://" + dir + "/?format=json'",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// partition_by is checked at CREATE TABLE.
	_, err := conn.Exec(ctx, "CREATE TABLE bad (id BIGINT, name TEXT) ENGINE=file CONNECTION='file://"+dir+"/?format=csv&partition_by=day'")
	if pe := pgError(err); pe == nil || !strings.Contains(pe.Message, `partition_by: no column "day" in the table (columns: id, name)`) {
		t.Errorf("partition_by of a column the table does not have: %v", err)
	}
	if got := sortedRows(t, ctx, conn, "SELECT * FROM written"); len(got) != 0 {
		t.Errorf("before any INSERT: %q", got)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO written VALUES (1, 'a "quoted", text'), (2, NULL), (NULL, '')`); err != nil {
		t.Fatal(err)
	}
	waitJobDone(t, ctx, conn, "INSERT INTO written VALUES")
	want := []string{"1|a \"quoted\", text", "2|NULL", "NULL|"}
	checkSameRows(t, "after one INSERT", sortedRows(t, ctx, conn, "SELECT * FROM written"), want)
	if _, err := conn.Exec(ctx, "INSERT INTO written SELECT id + 10, upper(name) FROM src"); err != nil {
		t.Fatal(err)
	}
	waitJobDone(t, ctx, conn, "INSERT INTO written SELECT")
	want = append(want, "11|A")
	slices.Sort(want)
	checkSameRows(t, "after two INSERTs", sortedRows(t, ctx, conn, "SELECT * FROM written"), want)

	_, err = conn.Exec(ctx, "INSERT INTO src SELECT * FROM written")
	if pe := pgError(err); pe == nil || pe.Code != "42809" || !strings.Contains(pe.Message, "end its CONNECTION path with /") {
		t.Errorf("INSERT into a table over one file: %v, want 42809", err)
	}
}
