package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nodeResult is one query's outcome as testdata/nodepg/query.js prints it.
type nodeResult struct {
	Text   string `json:"text"`
	Fields []struct {
		Name string `json:"name"`
		Type uint32 `json:"type"`
	} `json:"fields"`
	Rows     []map[string]any `json:"rows"`
	Command  string           `json:"command"`
	RowCount int              `json:"rowCount"`
	Error    *struct {
		Severity string `json:"severity"`
		Code     string `json:"code"`
		Message  string `json:"message"`
		Position string `json:"position"`
	} `json:"error"`
}

// TestNodePostgres runs node-postgres (the npm package pg, pinned in
// testdata/nodepg/package.json) against `hummer serve`: parameterised WordCount
// queries over the King James Bible through the extended protocol, a named
// statement run with several values, and errors with their SQLSTATE and
// position. Counts are checked against a plain Go word count.
func TestNodePostgres(t *testing.T) {
	if os.Getenv("HUMMER_SKIP_NODE") == "1" {
		t.Skip("HUMMER_SKIP_NODE=1")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (.ci/run installs Node.js and npm; HUMMER_SKIP_NODE=1 skips this test)", tool)
		}
	}
	dir, err := filepath.Abs("testdata/nodepg")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	npmCI(t, ctx, dir)

	kjv, err := filepath.Abs("../../data/kjv.txt")
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(kjv)
	if err != nil {
		t.Fatal(err)
	}
	// Count the way the query does: lower(line), split on single spaces, empty
	// strings kept (a word = $1 never matches them).
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		for _, w := range strings.Split(strings.ToLower(line), " ") {
			counts[w]++
		}
	}

	addr := startHummer(t)
	conn := connectPgx(t, ctx, addr)
	_, err = conn.Exec(ctx, fmt.Sprintf("CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file://%s'", kjv))
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	const word, prefix, minCount = "god", "lo", 100
	prepared := []string{"lord", "jesus"}
	argsJSON, _ := json.Marshal(map[string]any{"word": word, "prefix": prefix, "min": minCount, "prepared": prepared})
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.CommandContext(ctx, "node", "query.js", string(argsJSON))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PGHOST="+host, "PGPORT="+port, "PGUSER=hummer", "PGDATABASE=hummer",
		"PGPASSWORD=", "PGSSLMODE=disable")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node query.js: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr.String())
	}
	var got struct {
		Count, NullParam, Mixed, BadColumn, BadParam, AfterErrors nodeResult
		Prepared                                                  []nodeResult
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("node's output is not the expected JSON: %v\n%s", err, stdout)
	}

	const oidText, oidInt8 = 25, 20
	checkCount := func(what string, r nodeResult, want int) {
		t.Helper()
		if r.Error != nil {
			t.Errorf("%s: error %+v", what, *r.Error)
			return
		}
		if len(r.Fields) != 1 || r.Fields[0].Name != "n" || r.Fields[0].Type != oidInt8 {
			t.Errorf("%s: columns %+v, want n of type int8", what, r.Fields)
		}
		if r.Command != "SELECT" || r.RowCount != 1 || len(r.Rows) != 1 {
			t.Errorf("%s: %s %d with %d rows, want SELECT 1", what, r.Command, r.RowCount, len(r.Rows))
			return
		}
		// pg hands int8 over as a string: JavaScript numbers cannot hold every int64.
		if n := r.Rows[0]["n"]; n != strconv.Itoa(want) {
			t.Errorf("%s: n = %#v, want %q", what, n, strconv.Itoa(want))
		}
	}
	checkCount(fmt.Sprintf("count of %q", word), got.Count, counts[word])
	checkCount("NULL parameter", got.NullParam, 0)
	if len(got.Prepared) != len(prepared) {
		t.Fatalf("prepared statement ran %d times, want %d", len(got.Prepared), len(prepared))
	}
	for i, w := range prepared {
		checkCount(fmt.Sprintf("prepared count of %q", w), got.Prepared[i], counts[w])
	}
	checkCount("prepared statement after errors", got.AfterErrors, counts[word])

	// WHERE word LIKE 'lo%' ... HAVING COUNT(*) >= 100 ORDER BY n DESC, word.
	type wordCount struct {
		word string
		n    int
	}
	var want []wordCount
	for w, n := range counts {
		if strings.HasPrefix(w, prefix) && n >= minCount {
			want = append(want, wordCount{w, n})
		}
	}
	sort.Slice(want, func(i, j int) bool {
		if want[i].n != want[j].n {
			return want[i].n > want[j].n
		}
		return want[i].word < want[j].word
	})
	if len(want) < 3 {
		t.Fatalf("the reference count finds only %v: pick another prefix", want)
	}
	if r := got.Mixed; r.Error != nil {
		t.Errorf("text and numeric parameters: error %+v", *r.Error)
	} else {
		if len(r.Fields) != 2 || r.Fields[0].Name != "word" || r.Fields[0].Type != oidText ||
			r.Fields[1].Name != "n" || r.Fields[1].Type != oidInt8 {
			t.Errorf("text and numeric parameters: columns %+v, want word text, n int8", r.Fields)
		}
		var rows []wordCount
		for _, row := range r.Rows {
			w, _ := row["word"].(string)
			ns, _ := row["n"].(string)
			n, err := strconv.Atoi(ns)
			if err != nil {
				t.Errorf("text and numeric parameters: row %v", row)
			}
			rows = append(rows, wordCount{w, n})
		}
		if fmt.Sprint(rows) != fmt.Sprint(want) {
			t.Errorf("text and numeric parameters:\n got %v\nwant %v", rows, want)
		}
		if r.RowCount != len(want) {
			t.Errorf("text and numeric parameters: rowCount %d, want %d", r.RowCount, len(want))
		}
	}

	if e := got.BadColumn.Error; e == nil {
		t.Errorf("misspelt column: no error, got %+v", got.BadColumn)
	} else {
		pos := strconv.Itoa(strings.Index(got.BadColumn.Text, "wrod") + 1)
		if e.Severity != "ERROR" || e.Code != "42703" || e.Position != pos || !strings.Contains(e.Message, "wrod") {
			t.Errorf("misspelt column: %+v, want ERROR 42703 naming wrod at position %s", *e, pos)
		}
	}
	if e := got.BadParam.Error; e == nil {
		t.Errorf("a word for a numeric parameter: no error, got %+v", got.BadParam)
	} else if e.Code != "22P02" || !strings.Contains(e.Message, `"many"`) {
		t.Errorf("a word for a numeric parameter: %+v, want 22P02 quoting the value", *e)
	}
}

// TestNodePostgresExtras runs testdata/nodepg/extras.js, pg-cursor and
// pg-copy-streams on node-postgres, against Hummer and compares what it
// prints with extras.expected.json, its output against PostgreSQL 15
// (regenerate: PGHOST=/tmp PGPORT=5433 PGUSER=postgres PGDATABASE=<db> node
// extras.js > extras.expected.json). pg-cursor reads a named portal two rows
// at a time with Execute and Flush, Sync only after the last read; the COPY
// streams go both ways, in text and csv, with a bad value's error.
func TestNodePostgresExtras(t *testing.T) {
	if os.Getenv("HUMMER_SKIP_NODE") == "1" {
		t.Skip("HUMMER_SKIP_NODE=1")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (.ci/run installs Node.js and npm; HUMMER_SKIP_NODE=1 skips this test)", tool)
		}
	}
	dir, err := filepath.Abs("testdata/nodepg")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	npmCI(t, ctx, dir)
	want, err := os.ReadFile(filepath.Join(dir, "extras.expected.json"))
	if err != nil {
		t.Fatal(err)
	}

	addr := startTestServer(t)
	host, port, _ := net.SplitHostPort(addr)
	// A deadline well short of the context's: a server that leaves a cursor's
	// Flush unanswered hangs the script.
	runCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	cmd := exec.CommandContext(runCtx, "node", "extras.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PGHOST="+host, "PGPORT="+port, "PGUSER=hummer", "PGDATABASE=hummer",
		"PGPASSWORD=", "PGSSLMODE=disable")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("node extras.js: %v\nstdout:\n%s\nstderr:\n%s", err, got, stderr.String())
	}
	if string(got) != string(want) {
		t.Errorf("extras.js against Hummer differs from PostgreSQL's extras.expected.json:\n%s", lineDiff(string(want), string(got)))
	}
}

// lineDiff shows the lines of got that differ from want's, with their line
// numbers.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  PostgreSQL: %s\n  Hummer:     %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// npmCI installs testdata/nodepg's locked packages into its node_modules unless
// every pinned package is there already at its version.
func npmCI(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, filepath.Join(dir, "package.json"), &pkg)
	installedAll := true
	for name, version := range pkg.Dependencies {
		var installed struct {
			Version string `json:"version"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", name, "package.json"))
		if err != nil || json.Unmarshal(b, &installed) != nil || installed.Version != version {
			installedAll = false
		}
	}
	if installedAll {
		return
	}
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
