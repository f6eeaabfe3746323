package main

// The tables suite (issue 22): writing the tables Hummer stores itself against
// PostgreSQL 15 on the same machine, both durable (fsync on): psql's \copy of
// ten million rows, and single-row INSERTs from pgbench at 1 and 16 sessions.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

const (
	suiteTables = "tables"
	tablesFile  = "tables.json"

	nameTabHummer   = "hummer"
	nameTabPostgres = "postgresql 15"

	tablesCopyGoal = "\\copy rows/s, Hummer / PostgreSQL"
)

// tablesReport is the suite's results file.
type tablesReport struct {
	Date       string            `json:"date"`
	Versions   versions          `json:"versions"`
	Postgres   string            `json:"postgres"`
	CopyRows   int               `json:"copy_rows"`
	CopyBytes  int64             `json:"copy_bytes"`
	Reps       int               `json:"reps"`
	InsertS    float64           `json:"insert_seconds"`
	Contenders []contenderReport `json:"contenders"`
	Copies     []tablesCopyRun   `json:"copies"`
	Inserts    []tablesInsertRun `json:"inserts"`
	DurationS  float64           `json:"duration_s"`
	// Derived by summarise.
	CopyS map[string]float64 `json:"copy_median_s"`
	Goals []goal             `json:"goals"`
}

type tablesCopyRun struct {
	Contender string  `json:"contender"`
	Rep       int     `json:"rep"`
	WallS     float64 `json:"wall_s"`
	Error     string  `json:"error,omitempty"`
}

type tablesInsertRun struct {
	Contender string  `json:"contender"`
	Clients   int     `json:"clients"`
	TPS       float64 `json:"tps"`
	LatencyMS float64 `json:"latency_ms"`
	Done      int64   `json:"transactions"`
	Error     string  `json:"error,omitempty"`
}

// tablesTarget is one server of the suite, as psql and pgbench reach it.
type tablesTarget struct {
	name             string
	host, port, user string
	db               string
}

func (t tablesTarget) args() []string {
	return []string{"-h", t.host, "-p", t.port, "-U", t.user, "-d", t.db}
}

// psql runs sql with psql -c, without .psqlrc, stopping at the first error.
func (t tablesTarget) psql(ctx context.Context, sql string) (string, error) {
	args := append([]string{"-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"}, t.args()...)
	out, err := exec.CommandContext(ctx, "psql", append(args, "-c", sql)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: psql -c %q: %w: %s", t.name, sql, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func runTables(ctx context.Context, cfg config, b bins, vers versions, work string) (int, error) {
	start := time.Now()
	rep := &tablesReport{Date: start.UTC().Format(time.RFC3339), Versions: vers, CopyRows: cfg.tablesRows, Reps: cfg.tablesReps,
		InsertS: cfg.tablesInsert.Seconds()}
	pgbench, err := pgBinary(cfg.pgBin, "pgbench")
	if err != nil {
		return 0, err
	}

	// The \copy input, and what it sums to.
	data := filepath.Join(work, "copy.csv")
	progress("tables: writing %d rows into %s", cfg.tablesRows, data)
	sumID, err := writeCopyInput(data, cfg.tablesRows)
	if err != nil {
		return 0, err
	}
	st, err := os.Stat(data)
	if err != nil {
		return 0, err
	}
	rep.CopyBytes = st.Size()
	if _, err := os.ReadFile(data); err != nil { // into the page cache for both
		return 0, err
	}

	h, err := startHummer(ctx, b.hummer, work, "hummer-tables", 0)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	hAddr := h.conn.PgConn().Conn().RemoteAddr().String()
	hHost, hPort, _ := strings.Cut(hAddr, ":")
	pg, err := newPostgres(ctx, cfg.pgBin, work, 5480, "shared_buffers=1GB", "max_wal_size=4GB", "max_connections=40")
	if err != nil {
		return 0, err
	}
	defer pg.close()
	rep.Postgres = pg.version
	targets := []tablesTarget{
		{nameTabHummer, hHost, hPort, "hummer", "hummer"},
		{nameTabPostgres, pg.socketDir, strconv.Itoa(pg.port), "postgres", "postgres"},
	}
	rep.Contenders = []contenderReport{
		{Name: nameTabHummer, Notes: "`hummer serve` over TCP on loopback (it has no Unix socket), a table it stores: a single-row INSERT appends to the table's write-ahead log and flushes it (fdatasync, shared by the statements committing together) before it returns; \\copy writes segment files and fsyncs them and the version that names them"},
		{Name: nameTabPostgres, Notes: "PostgreSQL 15 (Debian's), a server of its own with its durable defaults (`fsync` and `synchronous_commit` on), `shared_buffers = 1GB`, `max_wal_size = 4GB`, over its Unix socket"},
	}

	failed := 0
	// \copy: the table made again before each run; timed around psql.
	for r := range cfg.tablesReps {
		for _, i := range runOrder(len(targets), r) {
			t := targets[i]
			run := tablesCopyRun{Contender: t.name, Rep: r}
			if _, err := t.psql(ctx, "DROP TABLE IF EXISTS copied; CREATE TABLE copied (id BIGINT, name TEXT, amount DECIMAL(12,2), day DATE)"); err != nil {
				return 0, err
			}
			t0 := time.Now()
			_, err := t.psql(ctx, fmt.Sprintf(`\copy copied FROM '%s' WITH (FORMAT csv)`, data))
			run.WallS = round(time.Since(t0).Seconds(), 3)
			if err == nil {
				var got string
				if got, err = t.psql(ctx, "SELECT count(*) || ' ' || sum(id) FROM copied"); err == nil && got != fmt.Sprintf("%d %d", cfg.tablesRows, sumID) {
					err = fmt.Errorf("after the copy: count and sum of ids %q, want %d %d", got, cfg.tablesRows, sumID)
				}
			}
			if err != nil {
				run.Error = err.Error()
				failed++
			}
			progress("tables: \\copy of %d rows, run %d, %-14s %7.2f s %s", cfg.tablesRows, r+1, t.name, run.WallS, run.Error)
			rep.Copies = append(rep.Copies, run)
		}
	}
	for _, t := range targets {
		t.psql(ctx, "DROP TABLE IF EXISTS copied")
	}

	// Single-row INSERTs from pgbench, each table counted afterwards.
	script := filepath.Join(work, "insert.sql")
	if err := os.WriteFile(script, []byte("\\set id random(1, 1000000000)\nINSERT INTO ins VALUES (:id, 'a row');\n"), 0o644); err != nil {
		return 0, err
	}
	for _, clients := range []int{1, 16} {
		for _, t := range targets {
			run := tablesInsertRun{Contender: t.name, Clients: clients}
			if _, err := t.psql(ctx, "DROP TABLE IF EXISTS ins; CREATE TABLE ins (id BIGINT, note TEXT)"); err != nil {
				return 0, err
			}
			args := append([]string{"-n", "-f", script, "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 4)),
				"-T", strconv.Itoa(int(cfg.tablesInsert.Seconds()))}, t.args()...)
			out, err := exec.CommandContext(ctx, pgbench, args...).CombinedOutput()
			if err == nil {
				run.TPS, run.LatencyMS, run.Done, err = parsePgbench(string(out))
			}
			if err == nil {
				var n string
				if n, err = t.psql(ctx, "SELECT count(*) FROM ins"); err == nil && n != strconv.FormatInt(run.Done, 10) {
					err = fmt.Errorf("pgbench committed %d transactions, the table has %s rows", run.Done, n)
				}
			}
			if err != nil {
				run.Error = fmt.Sprintf("%v: %s", err, lastLines(string(out), 3))
				failed++
			}
			progress("tables: INSERT, %2d sessions, %-14s %8.0f tps, %6.2f ms %s", clients, t.name, run.TPS, run.LatencyMS, run.Error)
			rep.Inserts = append(rep.Inserts, run)
		}
	}
	for _, t := range targets {
		t.psql(ctx, "DROP TABLE IF EXISTS ins")
	}

	rep.DurationS = round(time.Since(start).Seconds(), 1)
	rep.summarise()
	if err := writeJSONFile(filepath.Join(cfg.results, tablesFile), rep); err != nil {
		return 0, err
	}
	rep.writeTable(os.Stdout)
	return failed, nil
}

// writeCopyInput writes n rows of (id, name, amount, day) as CSV and returns
// the sum of the ids.
func writeCopyInput(path string, n int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var sum int64
	day0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	var line []byte
	for i := 1; i <= n; i++ {
		sum += int64(i)
		line = strconv.AppendInt(line[:0], int64(i), 10)
		line = append(line, ",name-"...)
		line = strconv.AppendInt(line, int64(i%1000), 10)
		line = append(line, ',')
		line = strconv.AppendInt(line, int64(i%100000/100), 10)
		line = append(line, '.')
		line = strconv.AppendInt(line, int64(10+i%90), 10)
		line = append(line, ',')
		line = day0.AddDate(0, 0, i%1500).AppendFormat(line, "2006-01-02")
		line = append(line, '\n')
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return sum, f.Close()
}

var (
	pgbenchTPS     = regexp.MustCompile(`tps = ([0-9.]+)`)
	pgbenchLatency = regexp.MustCompile(`latency average = ([0-9.]+) ms`)
	pgbenchDone    = regexp.MustCompile(`number of transactions actually processed: (\d+)`)
	pgbenchFailed  = regexp.MustCompile(`number of failed transactions: (\d+)`)
)

// parsePgbench reads pgbench's summary.
func parsePgbench(out string) (tps, latencyMS float64, done int64, err error) {
	m1, m2, m3 := pgbenchTPS.FindStringSubmatch(out), pgbenchLatency.FindStringSubmatch(out), pgbenchDone.FindStringSubmatch(out)
	if m1 == nil || m2 == nil || m3 == nil {
		return 0, 0, 0, fmt.Errorf("pgbench printed no summary")
	}
	if m := pgbenchFailed.FindStringSubmatch(out); m != nil && m[1] != "0" {
		return 0, 0, 0, fmt.Errorf("pgbench: %s failed transactions", m[1])
	}
	tps, _ = strconv.ParseFloat(m1[1], 64)
	latencyMS, _ = strconv.ParseFloat(m2[1], 64)
	done, _ = strconv.ParseInt(m3[1], 10, 64)
	return tps, latencyMS, done, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " / ")
}

func (r *tablesReport) summarise() {
	r.CopyS, r.Goals = map[string]float64{}, nil
	for _, c := range r.Contenders {
		var walls []float64
		for _, run := range r.Copies {
			if run.Contender == c.Name && run.Error == "" {
				walls = append(walls, run.WallS)
			}
		}
		if len(walls) > 0 {
			r.CopyS[c.Name] = round(median(walls), 3)
		}
	}
	ratio := 0.0
	if h, p := r.CopyS[nameTabHummer], r.CopyS[nameTabPostgres]; h > 0 && p > 0 {
		ratio = round(p/h, 2) // rows/s Hummer over rows/s PostgreSQL
	}
	r.Goals = append(r.Goals, goal{Name: tablesCopyGoal, Value: ratio, Target: "≥ 1", Pass: ratio >= 1})
}

func (r *tablesReport) writeTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "contender\t\\copy s\tM rows/s\tINSERT tps (1)\tms (1)\tINSERT tps (16)\tms (16)\t")
	for _, c := range r.Contenders {
		fmt.Fprintf(tw, "%s\t%s\t\n", c.Name, r.cells(c.Name, "\t"))
	}
	tw.Flush()
	for _, g := range r.Goals {
		fmt.Fprintf(w, "goal %s: %.2f (%s) %s\n", g.Name, g.Value, g.Target, passMark(g.Pass))
	}
}

// cells are a contender's figures, joined by sep.
func (r *tablesReport) cells(name, sep string) string {
	var cs []string
	if s, ok := r.CopyS[name]; ok {
		cs = append(cs, fmt.Sprintf("%.2f", s), fmt.Sprintf("%.2f", float64(r.CopyRows)/s/1e6))
	} else {
		cs = append(cs, "failed", "")
	}
	for _, clients := range []int{1, 16} {
		found := false
		for _, in := range r.Inserts {
			if in.Contender == name && in.Clients == clients {
				found = true
				if in.Error != "" {
					cs = append(cs, "failed", "")
				} else {
					cs = append(cs, fmt.Sprintf("%.0f", in.TPS), fmt.Sprintf("%.2f", in.LatencyMS))
				}
			}
		}
		if !found {
			cs = append(cs, "", "")
		}
	}
	return strings.Join(cs, sep)
}

func readTables(path string) (*tablesReport, error) { return readSummarised[tablesReport](path) }

// readme is the README's section on the suite.
func (r *tablesReport) readme(resultsDir string, p func(string, ...any)) {
	p("## Tables Hummer stores: \\copy and INSERT against PostgreSQL 15 (issue 22)")
	p("")
	p("<!-- From %s, written by `make bench-tables` (suite tables of bench/cmd/wordcount; the section is bench/cmd/wordcount/tables.go). -->", filepath.Join(resultsDir, tablesFile))
	p("")
	p("Run of %s: psql's `\\copy` of %d rows (%.0f MB of CSV: a bigint, a text, a decimal(12,2), a date) into a fresh table, %d runs per contender, interleaved, median in seconds; then pgbench's single-row `INSERT ... VALUES` (a custom script, a random bigint and a text) for %.0f s at 1 and at 16 sessions, into a table without a key. Every run is checked: the table's count and sum of ids after a copy, its count against pgbench's committed transactions after an INSERT run. %.0f s in all.",
		r.Date, r.CopyRows, float64(r.CopyBytes)/1e6, r.Reps, r.InsertS, r.DurationS)
	p("")
	p("| contender | \\copy s | M rows/s | INSERT tps, 1 session | latency ms | INSERT tps, 16 sessions | latency ms |")
	p("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, c := range r.Contenders {
		p("| %s | %s |", c.Name, r.cells(c.Name, " | "))
	}
	p("")
	p("| goal | target | value |")
	p("| --- | --- | ---: |")
	for _, g := range r.Goals {
		p("| %s | %s | %.2f %s |", g.Name, g.Target, g.Value, passMark(g.Pass))
	}
	p("")
	for _, c := range r.Contenders {
		p("- **%s**: %s.", c.Name, c.Notes)
	}
	p("")
	p("Versions: %s, Hummer %s.", r.Postgres, r.Versions.Hummer)
	p("")
}
