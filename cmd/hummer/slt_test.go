package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5"

	"github.com/hummer-db/hummer/connectors/tpch"
	"github.com/hummer-db/hummer/exec/vector"
	"github.com/hummer-db/hummer/wire"
)

// The SQL end-to-end tests: sqllogictest-style files in testdata/slt, each run
// against a fresh engine and wire server through a real PostgreSQL client (pgx,
// simple protocol, results read as text).
//
// Records:
//
//	statement ok            the next statement (up to a blank line) succeeds
//	statement error <re>    it fails with a message matching <re>
//	query <types> [rowsort] the query's rows, one per line, columns separated by
//	                        single spaces, after a "----" line; NULL prints as
//	                        NULL and the empty string as (empty)
//
// In SQL text __DATA__ is replaced by the absolute path of testdata/,
// __KJV__ by the path of the sample corpus and __TPCH__ by a directory of
// TPC-H's tables at scale factor 0.01 (connectors/tpch), written once, when a
// file first asks for it. With -rewrite the expected rows of
// every query are replaced by what the engine returns, for review.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of .slt files")

func TestSQLLogic(t *testing.T) {
	files, err := filepath.Glob("testdata/slt/*.slt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no slt files: %v", err)
	}
	var (
		tpchOnce sync.Once
		tpchDir  = t.TempDir() // the parent's: it outlives every file's run
		tpchErr  error
	)
	tpchData := func() (string, error) {
		tpchOnce.Do(func() { tpchErr = tpch.Write(tpchDir, 0.01) })
		return tpchDir, tpchErr
	}
	// Every file runs in local mode (one TaskManager, 2 slots) and on a cluster of
	// three TaskManagers in this process, whose edges are network channels.
	for _, tms := range []int{1, 3} {
		for _, f := range files {
			name := fmt.Sprintf("%s/tms=%d", strings.TrimSuffix(filepath.Base(f), ".slt"), tms)
			t.Run(name, func(t *testing.T) {
				runSLT(t, f, tms, tpchData)
			})
		}
	}
}

type sltRecord struct {
	line    int
	kind    string // "statement" or "query"
	errRe   string // statement error
	types   string
	rowsort bool
	sql     string
	want    []string
}

func parseSLT(t *testing.T, path string) []*sltRecord {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []*sltRecord
	sc := bufio.NewScanner(f)
	lineNo := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		lineNo++
		return sc.Text(), true
	}
	for {
		line, ok := next()
		if !ok {
			break
		}
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		r := &sltRecord{line: lineNo, kind: fields[0]}
		switch {
		case fields[0] == "statement" && len(fields) >= 2 && fields[1] == "ok":
		case fields[0] == "statement" && len(fields) >= 2 && fields[1] == "error":
			r.errRe = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line[len("statement"):]), "error"))
		case fields[0] == "query" && len(fields) >= 2:
			r.types = fields[1]
			r.rowsort = len(fields) > 2 && fields[2] == "rowsort"
		default:
			t.Fatalf("%s:%d: cannot read record %q", path, lineNo, line)
		}
		var sqlLines []string
		inResult := false
		for {
			l, ok := next()
			if !ok || strings.TrimSpace(l) == "" {
				break
			}
			if r.kind == "query" && l == "----" {
				inResult = true
				continue
			}
			if inResult {
				r.want = append(r.want, l)
			} else {
				sqlLines = append(sqlLines, l)
			}
		}
		r.sql = strings.Join(sqlLines, "\n")
		recs = append(recs, r)
	}
	return recs
}

func runSLT(t *testing.T, path string, tms int, tpchData func() (string, error)) {
	recs := parseSLT(t, path)
	tpchDir := "__TPCH__"
	for _, r := range recs {
		if strings.Contains(r.sql, "__TPCH__") {
			dir, err := tpchData()
			if err != nil {
				t.Fatal(err)
			}
			tpchDir = dir
			break
		}
	}
	addr := startClusterServer(t, tms)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())

	dataDir, _ := filepath.Abs("testdata")
	kjv, _ := filepath.Abs("../../data/kjv.txt")
	subst := strings.NewReplacer("__DATA__", dataDir, "__KJV__", kjv, "__TPCH__", tpchDir)
	changed := false
	for _, r := range recs {
		q := subst.Replace(r.sql)
		where := fmt.Sprintf("%s:%d", path, r.line)
		switch {
		case r.kind == "statement" && r.errRe == "":
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Errorf("%s: %s\nunexpected error: %v", where, q, err)
			}
		case r.kind == "statement":
			_, err := conn.Exec(ctx, q)
			if err == nil {
				t.Errorf("%s: %s\nsucceeded, want an error matching %q", where, q, r.errRe)
			} else if !regexp.MustCompile(r.errRe).MatchString(err.Error()) {
				t.Errorf("%s: %s\nerror %q does not match %q", where, q, err, r.errRe)
			}
		default:
			got, err := queryText(ctx, conn, q, len(r.types))
			if err != nil {
				t.Errorf("%s: %s\nunexpected error: %v", where, q, err)
				continue
			}
			want := make([]string, len(r.want))
			for i, w := range r.want {
				want[i] = subst.Replace(w)
			}
			want = normalizeRows(want)
			got = normalizeRows(got)
			if r.rowsort {
				sort.Strings(got)
				sort.Strings(want)
			}
			if *rewrite {
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					r.want, changed = got, true
				}
				continue
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", where, q, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
	if changed {
		writeSLT(t, path, recs)
	}
}

// fractional matches a number with a fractional part, as DECIMAL and DOUBLE print.
var fractional = regexp.MustCompile(`^-?[0-9]+\.[0-9]+(e[-+][0-9]+)?$`)

// normalizeRows rewrites every fractional number in rows to 12 significant
// digits, so that results which differ from PostgreSQL's only in printed scale
// (numeric division and AVG print up to 20 digits there) compare equal.
func normalizeRows(rows []string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		toks := strings.Split(r, " ")
		for j, tok := range toks {
			if fractional.MatchString(tok) {
				if f, err := strconv.ParseFloat(tok, 64); err == nil {
					toks[j] = strconv.FormatFloat(f, 'g', 12, 64)
				}
			}
		}
		out[i] = strings.Join(toks, " ")
	}
	return out
}

// queryText runs q and renders each row as its columns' text separated by spaces.
func queryText(ctx context.Context, conn *pgx.Conn, q string, ncols int) ([]string, error) {
	rows, err := conn.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals := rows.RawValues()
		if len(vals) != ncols {
			return nil, fmt.Errorf("query returned %d columns, the record declares %d", len(vals), ncols)
		}
		cells := make([]string, len(vals))
		for i, v := range vals {
			switch {
			case v == nil:
				cells[i] = "NULL"
			case len(v) == 0:
				cells[i] = "(empty)"
			default:
				cells[i] = string(v)
			}
		}
		out = append(out, strings.Join(cells, " "))
	}
	return out, rows.Err()
}

func writeSLT(t *testing.T, path string, recs []*sltRecord) {
	var b strings.Builder
	for i, r := range recs {
		if i > 0 {
			b.WriteString("\n")
		}
		switch {
		case r.kind == "statement" && r.errRe == "":
			b.WriteString("statement ok\n")
		case r.kind == "statement":
			b.WriteString("statement error " + r.errRe + "\n")
		default:
			b.WriteString("query " + r.types)
			if r.rowsort {
				b.WriteString(" rowsort")
			}
			b.WriteString("\n")
		}
		b.WriteString(r.sql + "\n")
		if r.kind == "query" {
			b.WriteString("----\n")
			for _, w := range r.want {
				b.WriteString(w + "\n")
			}
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startTestServer starts a fresh engine (empty catalog) and wire server on a free
// loopback port, stopped when the test ends. Every task allocates from one checked
// allocator, and the test fails if any Arrow memory is still held at the end.
func startTestServer(t *testing.T) string {
	t.Helper()
	return startClusterServer(t, 1)
}

// startClusterServer is startTestServer with tms TaskManagers: two slots for a
// single one, one slot each otherwise.
func startClusterServer(t *testing.T, tms int) string {
	t.Helper()
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	slots := 2
	if tms > 1 {
		slots = 1
	}
	eng, err := openCluster(t.TempDir(), tms, slots, nil, mem)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := wire.NewServer(backend{eng}, wire.Options{Users: backend{eng}}) // trust, for the catalog's users
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
		eng.Close()
		mem.AssertSize(t, 0)
	})
	return ln.Addr().String()
}

func connectPgx(t *testing.T, ctx context.Context, addr string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.ConnectConfig(ctx, pgxConfig(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// pgxConfig is the client configuration of these tests: the simple query
// protocol, whose results arrive as text, as the .slt files compare them (the
// extended protocol has its own tests in extended_test.go).
func pgxConfig(t *testing.T, addr string) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig("postgres://hummer@" + addr + "/hummer?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	return cfg
}
