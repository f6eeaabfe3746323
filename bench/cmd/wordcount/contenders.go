package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hummer-db/hummer/bench/counts"
)

// measurement is what one run of one contender cost.
type measurement struct {
	Wall      time.Duration
	CPU       time.Duration // user + system, all threads
	PeakRSS   int64         // bytes
	RSSBefore int64         // bytes; hummer only: the server's RSS when the query started
}

// input is one benchmark input: some copies of kjv.txt in one file.
type input struct {
	Copies int
	Path   string
	Bytes  int64
	Table  string // its hummer table
	Ref    map[string]int64
}

// contender is one program, or one query of Hummer's, measured on every input.
type contender struct {
	Name  string
	Notes string                                      // how it runs, for the README
	Query string                                      // hummer's SQL or the command line, %s for the input
	Want  func(ref map[string]int64) map[string]int64 // the correct result, from the reference
	Run   func(ctx context.Context, in *input) (measurement, counts.Digest, error)
}

// The Hummer queries: the WordCount of DESIGN.md, and the two variants the issue asks
// to stay within 20% of it.
const (
	wordCountSQL = `SELECT word, COUNT(*) AS n FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM %s) AS t WHERE word <> '' GROUP BY word`
	upperSQL     = `SELECT upper(word) AS word, COUNT(*) AS n FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM %s) AS t WHERE word <> '' GROUP BY upper(word)`
	longerSQL    = `SELECT word, COUNT(*) AS n FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM %s) AS t WHERE word <> '' AND length(word) > 3 GROUP BY word`
)

// mawkProgram is WordCount in awk. awk splits fields on runs of blanks rather than on
// each ' ', which yields the same counts on this corpus (checked every run like the
// others: its only double spaces make empty strings that the query drops anyway).
const mawkProgram = `{ for (i = 1; i <= NF; i++) c[tolower($i)]++ } END { for (w in c) print w, c[w] }`

// Contender names, as the table, JSON and plot show them.
const (
	nameHummer2 = "hummer p=2"
	nameHummer1 = "hummer p=1"
	nameUpper   = "hummer upper(word)"
	nameLonger  = "hummer length(word)>3"
	nameDuckDB  = "duckdb"
	nameMawk    = "mawk"
	nameGo      = "go counter"
	// nameGo1 is the Go counter on one goroutine: how the machine itself
	// scales from one core to two (Hummer's parallelism goal), for reference.
	nameGo1 = "go counter, 1 worker"
)

func identity(m map[string]int64) map[string]int64 { return m }

func contenders(h *hummerServer, measure, duckwc, duckDBQuery, gowc string, cpus int) []contender {
	hummer := func(p int, sql string) func(context.Context, *input) (measurement, counts.Digest, error) {
		return func(ctx context.Context, in *input) (measurement, counts.Digest, error) {
			return h.run(ctx, p, fmt.Sprintf(sql, in.Table))
		}
	}
	child := func(name string, args ...string) func(context.Context, *input) (measurement, counts.Digest, error) {
		return func(ctx context.Context, in *input) (measurement, counts.Digest, error) {
			return runChild(ctx, measure, filepath.Join(filepath.Dir(in.Path), "measure.json"), name, append(args, in.Path)...)
		}
	}
	viaWire := "`hummer serve`; a pgx client (simple protocol) sends `SET parallelism = %d` and the query, and receives every row (checked after the clock stops, as the other contenders' output is)"
	return []contender{
		{Name: nameHummer2, Notes: fmt.Sprintf(viaWire, 2), Query: wordCountSQL, Want: identity, Run: hummer(2, wordCountSQL)},
		{Name: nameHummer1, Notes: fmt.Sprintf(viaWire, 1), Query: wordCountSQL, Want: identity, Run: hummer(1, wordCountSQL)},
		{Name: nameUpper, Notes: fmt.Sprintf(viaWire, 2), Query: upperSQL, Want: counts.Upper, Run: hummer(2, upperSQL)},
		{Name: nameLonger, Notes: fmt.Sprintf(viaWire, 2), Query: longerSQL,
			Want: func(m map[string]int64) map[string]int64 { return counts.LongerThan(m, 3) }, Run: hummer(2, longerSQL)},
		{Name: nameDuckDB, Notes: fmt.Sprintf("`bench/cmd/duckwc`: in-memory DuckDB, `SET threads = %d`, one process per run (start-up included, about 20 ms). It reads lines with `read_csv` and a delimiter that never occurs, DuckDB's parallel reader; `read_text` + `string_split(content, chr(10))` gives the same counts about 18x slower", cpus),
			Query: duckDBQuery, Want: identity, Run: child(duckwc, "-threads", fmt.Sprint(cpus))},
		{Name: nameMawk, Notes: "one process per run, single-threaded", Query: "mawk '" + mawkProgram + "' %s",
			Want: identity, Run: child("mawk", mawkProgram)},
		{Name: nameGo, Notes: fmt.Sprintf("`bench/cmd/gowc` (package `bench/wc`): %d goroutines, one per core, each on a line-aligned byte range; one process per run", cpus),
			Query: "gowc %s", Want: identity, Run: child(gowc, "-workers", fmt.Sprint(cpus))},
		{Name: nameGo1, Notes: "the same with one goroutine: the machine's own scaling from one core to two, for reference",
			Query: "gowc -workers 1 %s", Want: identity, Run: child(gowc, "-workers", "1")},
	}
}

// runChild runs a program that prints "word count" lines under bench/cmd/measure, which
// reports the program's wall time from start to exit, user + system CPU time and peak
// RSS from its rusage.
func runChild(ctx context.Context, measure, report, name string, args ...string) (measurement, counts.Digest, error) {
	var m measurement
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, measure, append([]string{"-o", report, "--", name}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return m, counts.Digest{}, fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	m, err = readMeasure(report)
	if err != nil {
		return m, counts.Digest{}, fmt.Errorf("%s: %w", name, err)
	}
	d, err := counts.ParseLines(stdout.Bytes())
	return m, d, err
}

// readMeasure reads bench/cmd/measure's report.
func readMeasure(report string) (measurement, error) {
	var m measurement
	b, err := os.ReadFile(report)
	if err != nil {
		return m, err
	}
	var r struct { // bench/cmd/measure's Report
		WallNS    int64 `json:"wall_ns"`
		CPUNS     int64 `json:"cpu_ns"`
		MaxRSSKiB int64 `json:"max_rss_kib"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return m, fmt.Errorf("%s: %w", report, err)
	}
	m.Wall, m.CPU, m.PeakRSS = time.Duration(r.WallNS), time.Duration(r.CPUNS), r.MaxRSSKiB<<10
	if m.Wall <= 0 || m.PeakRSS <= 0 {
		return m, fmt.Errorf("no measurement in %s", b)
	}
	return m, nil
}
