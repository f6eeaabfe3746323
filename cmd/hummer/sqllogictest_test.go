package main

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSQLLogicClassic runs the files of testdata/sqllogictest in the classic
// sqllogictest format (SQLite's, the one the public suites are written in),
// through pgx as any client:
//
//	statement ok | statement error       the next statement succeeds or fails
//	query <types> [nosort|rowsort|valuesort] [label]
//	                                     the query's values after "----", one
//	                                     per line, or "N values hashing to H"
//	hash-threshold N                     hash results of more than N values
//	skipif <db> | onlyif <db>            for the next record (this runner is
//	                                     "hummer", and runs what PostgreSQL runs)
//	halt                                 stop reading the file
//
// Values print as sqllogictest prints them: integers (I) as integers, reals (R)
// with three decimals, text (T) as is but "(empty)" for an empty string and @ for each
// character outside printable ASCII, NULL as NULL; rowsort sorts the rows,
// valuesort every value; the hash is the MD5 of each value and a newline. The
// expected values come from PostgreSQL 15 (sqllogictest-oracle.py beside them).
// __DATA__ in the SQL is the absolute path of testdata/.
//
// HUMMER_SLT_DIR=DIR runs DIR's .test files instead: the public suite, kept
// outside the repository, its expected values filled from PostgreSQL by the
// same oracle; each file logs how many of its records came out as expected.
func TestSQLLogicClassic(t *testing.T) {
	dir := "testdata/sqllogictest"
	if d := os.Getenv("HUMMER_SLT_DIR"); d != "" {
		dir = d
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.test"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .test files: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".test"), func(t *testing.T) { runClassic(t, f) })
	}
}

// classicRecord is one record of a classic file.
type classicRecord struct {
	line      int
	statement bool
	wantError bool
	types     string
	sortMode  string // nosort, rowsort, valuesort
	sql       string
	values    []string // or, hashed:
	nvalues   int
	hash      string
}

func parseClassic(t *testing.T, path string) []*classicRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lineNo := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		lineNo++
		return strings.TrimRight(sc.Text(), "\r"), true
	}
	var recs []*classicRecord
	skip := false
	for {
		line, ok := next()
		if !ok {
			break
		}
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch fields[0] {
		case "halt":
			return recs
		case "hash-threshold":
			continue
		case "skipif", "onlyif":
			db := ""
			if len(fields) > 1 {
				db = fields[1]
			}
			runs := db == "postgresql" || db == "hummer"
			if fields[0] == "skipif" && runs || fields[0] == "onlyif" && !runs {
				skip = true
			}
			continue
		}
		r := &classicRecord{line: lineNo}
		switch {
		case fields[0] == "statement" && len(fields) > 1:
			r.statement, r.wantError = true, fields[1] == "error"
		case fields[0] == "query" && len(fields) > 1:
			r.types, r.sortMode = fields[1], "nosort"
			if len(fields) > 2 {
				r.sortMode = fields[2]
			}
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
			if !r.statement && l == "----" {
				inResult = true
				continue
			}
			if !inResult {
				sqlLines = append(sqlLines, l)
				continue
			}
			var n int
			var h string
			if c, _ := fmt.Sscanf(l, "%d values hashing to %s", &n, &h); c == 2 {
				r.nvalues, r.hash = n, h
				continue
			}
			r.values = append(r.values, l)
		}
		r.sql = strings.Join(sqlLines, "\n")
		if skip {
			skip = false
			continue
		}
		recs = append(recs, r)
	}
	return recs
}

func runClassic(t *testing.T, path string) {
	recs := parseClassic(t, path)
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	dataDir, _ := filepath.Abs("testdata")
	subst := strings.NewReplacer("__DATA__", dataDir)
	queries, wrong := 0, 0
	fail := func(format string, args ...any) {
		wrong++
		t.Errorf(format, args...)
	}
	for _, r := range recs {
		q := subst.Replace(r.sql)
		where := fmt.Sprintf("%s:%d", path, r.line)
		if r.statement {
			_, err := conn.Exec(ctx, q)
			if r.wantError && err == nil {
				fail("%s: %s\nsucceeded, want an error", where, q)
			} else if !r.wantError && err != nil {
				fail("%s: %s\nunexpected error: %v", where, q, err)
			}
			continue
		}
		queries++
		got, err := classicValues(ctx, conn, q, r.types, r.sortMode)
		if err != nil {
			fail("%s: %s\nunexpected error: %v", where, q, err)
			continue
		}
		if r.hash != "" {
			if n, h := len(got), classicHash(got); n != r.nvalues || h != r.hash {
				fail("%s: %s\ngot %d values hashing to %s, want %d values hashing to %s", where, q, n, h, r.nvalues, r.hash)
			}
			continue
		}
		if strings.Join(got, "\n") != strings.Join(r.values, "\n") {
			fail("%s: %s\ngot:\n%s\nwant:\n%s", where, q, strings.Join(got, "\n"), strings.Join(r.values, "\n"))
		}
	}
	t.Logf("%s: %d records, %d queries; %d not as expected", path, len(recs), queries, wrong)
}

// classicValues runs q and returns its values as sqllogictest prints them, in
// the record's sort mode.
func classicValues(ctx context.Context, conn *pgx.Conn, q, types, sortMode string) ([]string, error) {
	rows, err := conn.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var table [][]string
	for rows.Next() {
		raw := rows.RawValues()
		if len(raw) != len(types) {
			return nil, fmt.Errorf("query returned %d columns, the record declares %d", len(raw), len(types))
		}
		row := make([]string, len(raw))
		for i, v := range raw {
			row[i] = classicValue(v, types[i])
		}
		table = append(table, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if sortMode == "rowsort" {
		sort.Slice(table, func(i, j int) bool {
			for k := range table[i] {
				if table[i][k] != table[j][k] {
					return table[i][k] < table[j][k]
				}
			}
			return false
		})
	}
	var vals []string
	for _, row := range table {
		vals = append(vals, row...)
	}
	if sortMode == "valuesort" {
		sort.Strings(vals)
	}
	return vals, nil
}

// classicValue prints one value of type t (I, R or T).
func classicValue(v []byte, t byte) string {
	if v == nil {
		return "NULL"
	}
	s := string(v)
	switch t {
	case 'I':
		if f, err := strconv.ParseFloat(s, 64); err == nil && strings.ContainsAny(s, ".eE") {
			return strconv.FormatInt(int64(f), 10)
		}
		return s
	case 'R':
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return fmt.Sprintf("%.3f", f)
		}
		return s
	}
	if s == "" {
		return "(empty)"
	}
	b := []byte(s)
	for i, c := range b {
		if c < ' ' || c > '~' {
			b[i] = '@'
		}
	}
	return string(b)
}

// classicHash is sqllogictest's hash of a result: the MD5 of each value and a
// newline.
func classicHash(vals []string) string {
	h := md5.New()
	for _, v := range vals {
		h.Write([]byte(v))
		h.Write([]byte("\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}
