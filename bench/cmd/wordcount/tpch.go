package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
)

// The TPC-H suite (issue 21, `make bench-tpch`): the 22 queries at scale factor
// 1 (about 1 GB of CSV, written by the repository's cmd/tpchgen with go-tpc's
// generator) on Hummer over the CSV files, DuckDB over the same files and over
// its own tables, and PostgreSQL 15 over its tables, interleaved query by query.
// The queries are the standard texts of cmd/hummer/testdata/slt/tpch.slt (which
// checks Hummer's answers against PostgreSQL's in make test, at scale 0.01); here
// every contender's answer is checked against PostgreSQL's (DuckDB's where
// PostgreSQL gave none). Results go to their own file, tpch.json.
const (
	tpchFile = "tpch.json"
	tpchPlot = "tpch.png"

	nameTPCHHummer    = "hummer, CSV files"
	nameTPCHHumTable  = "hummer, own tables"
	nameTPCHDuckCSV   = "duckdb, CSV files"
	nameTPCHDuckTable = "duckdb, own tables"
	nameTPCHPostgres  = "postgresql 15, own tables"

	tpchRunsGoal   = "Hummer answers all 22 queries right"
	tpchMeanGoal   = "geometric mean of Hummer's times / DuckDB's (CSV files)"
	tpchTablesGoal = "geometric mean of Hummer's times / DuckDB's (own tables)"
)

// tpchQuery is one TPC-H query: statements run in order and timed together
// (q15: CREATE VIEW, the query, DROP VIEW); the one whose rows count is query.
type tpchQuery struct {
	Name  string   `json:"name"`
	Stmts []string `json:"stmts"`
	Query int      `json:"query"` // index in Stmts
}

// tpchQueries reads the standard texts of the 22 queries from tpch.slt: the
// records after each "# qN, standard text" comment, up to the next comment.
func tpchQueries(repo string) ([]tpchQuery, error) {
	path := filepath.Join(repo, "cmd", "hummer", "testdata", "slt", "tpch.slt")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var qs []tpchQuery
	var cur *tpchQuery
	for _, rec := range strings.Split(string(b), "\n\n") {
		lines := strings.Split(strings.Trim(rec, "\n"), "\n")
		for len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
			if name, ok := strings.CutSuffix(strings.TrimPrefix(lines[0], "# "), ", standard text"); ok {
				qs = append(qs, tpchQuery{Name: name, Query: -1})
				cur = &qs[len(qs)-1]
			} else {
				cur = nil
			}
			lines = lines[1:]
		}
		if cur == nil || len(lines) < 2 {
			continue
		}
		kind := strings.Fields(lines[0])[0]
		body := lines[1:]
		if kind == "query" {
			i := slices.Index(body, "----")
			if i < 0 {
				return nil, fmt.Errorf("%s: %s has no ----", path, cur.Name)
			}
			body = body[:i]
			cur.Query = len(cur.Stmts)
		}
		cur.Stmts = append(cur.Stmts, strings.Join(body, "\n"))
	}
	if len(qs) != 22 {
		return nil, fmt.Errorf("%s: %d standard queries, want 22", path, len(qs))
	}
	for _, q := range qs {
		if q.Query < 0 {
			return nil, fmt.Errorf("%s: %s has no query record", path, q.Name)
		}
	}
	return qs, nil
}

// tpchReport is what tpch.json holds.
type tpchReport struct {
	Date        string             `json:"date"`
	DurationS   float64            `json:"duration_s"`
	ScaleFactor float64            `json:"scale_factor"`
	Bytes       int64              `json:"bytes"`
	Reps        int                `json:"reps"`
	TimeoutS    float64            `json:"timeout_s"`
	Versions    versions           `json:"versions"`
	Postgres    string             `json:"postgres"`
	LoadS       map[string]float64 `json:"load_s"` // loading the CSV files, per contender that loads them
	Contenders  []contenderReport  `json:"contenders"`
	Queries     []tpchQuery        `json:"queries"`
	Runs        []tpchRun          `json:"runs"`
	Summary     []tpchRow          `json:"summary"`
	GeoMeanS    map[string]float64 `json:"geomean_s"`
	Goals       []goal             `json:"goals"`
}

type tpchRun struct {
	Contender string  `json:"contender"`
	Query     string  `json:"query"`
	Rep       int     `json:"rep"`
	WallS     float64 `json:"wall_s"`
	Rows      int     `json:"rows"`
	Error     string  `json:"error,omitempty"`
}

// tpchRow is one query: each contender's median time (0: no successful run)
// and whether its answer was right.
type tpchRow struct {
	Query string             `json:"query"`
	WallS map[string]float64 `json:"wall_s"`
	Right map[string]bool    `json:"right"`
}

// tpchContender runs a query's statements and returns the query's rows as
// normalised text (normRow).
type tpchContender struct {
	name, notes string
	run         func(ctx context.Context, q tpchQuery) ([]string, error)
}

func runTPCH(ctx context.Context, cfg config, b bins, vers versions, repo, work string) (int, error) {
	start := time.Now()
	qs, err := tpchQueries(repo)
	if err != nil {
		return 0, err
	}
	rep := &tpchReport{Date: start.UTC().Format(time.RFC3339), ScaleFactor: cfg.tpchSF, Reps: cfg.tpchReps,
		TimeoutS: cfg.tpchTimeout.Seconds(), Versions: vers, Queries: qs, LoadS: map[string]float64{}}

	// The data, written once by the repository's generator.
	dir := filepath.Join(work, "tpch")
	gen := filepath.Join(work, "tpchgen")
	if err := goBuild(repo, gen, "./cmd/tpchgen"); err != nil {
		return 0, err
	}
	progress("tpch: generating scale factor %v into %s", cfg.tpchSF, dir)
	if _, err := output(gen, "-sf", strconv.FormatFloat(cfg.tpchSF, 'f', -1, 64), "-out", dir); err != nil {
		return 0, err
	}
	tables, err := tpchTables(gen, dir)
	if err != nil {
		return 0, err
	}
	for _, t := range tables {
		st, err := os.Stat(t.path)
		if err != nil {
			return 0, err
		}
		rep.Bytes += st.Size()
		if _, err := os.ReadFile(t.path); err != nil { // into the page cache for everyone
			return 0, err
		}
	}

	// Hummer: one server, the tables over the CSV files.
	h, err := startHummer(ctx, b.hummer, work, "hummer-tpch", 0)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	for _, t := range tables {
		if err := h.exec(ctx, fmt.Sprintf("CREATE TABLE %s (%s) ENGINE=file CONNECTION='file://%s?format=csv&header=true'", t.name, t.columns, t.path)); err != nil {
			return 0, err
		}
	}
	if err := h.exec(ctx, "SET parallelism = 2"); err != nil {
		return 0, err
	}
	// Hummer again, a server of its own whose tables it stores, loaded from
	// the same files by CREATE TABLE AS.
	ht, err := startHummer(ctx, b.hummer, work, "hummer-tpch-tables", 0)
	if err != nil {
		return 0, err
	}
	defer ht.Close()
	t0 := time.Now()
	for _, t := range tables {
		progress("tpch: loading %s into Hummer's tables", t.name)
		for _, q := range []string{
			fmt.Sprintf("CREATE TABLE csv_%s (%s) ENGINE=file CONNECTION='file://%s?format=csv&header=true'", t.name, t.columns, t.path),
			fmt.Sprintf("CREATE TABLE %s AS SELECT * FROM csv_%s", t.name, t.name),
			fmt.Sprintf("DROP TABLE csv_%s", t.name),
		} {
			if err := ht.exec(ctx, q); err != nil {
				return 0, err
			}
		}
	}
	rep.LoadS[nameTPCHHumTable] = round(time.Since(t0).Seconds(), 1)
	if err := ht.exec(ctx, "SET parallelism = 2"); err != nil {
		return 0, err
	}
	// DuckDB, in this process: views over read_csv, and tables loaded from them.
	duckCSV, duckTables, err := openDuckDB(tables, rep)
	if err != nil {
		return 0, err
	}
	defer duckCSV.Close()
	defer duckTables.Close()
	// PostgreSQL: a server of its own in the scratch directory.
	pg, err := startPostgres(ctx, cfg.pgBin, work, tables, rep)
	if err != nil {
		return 0, err
	}
	defer pg.close()
	rep.Postgres = pg.version

	timeout := cfg.tpchTimeout
	cs := []tpchContender{
		{nameTPCHHummer, "`hummer serve`, tables `ENGINE=file` over the CSV files (read again by every query), `SET parallelism = 2`; timed at the client (pgx, simple protocol)",
			func(ctx context.Context, q tpchQuery) ([]string, error) { return pgxRows(ctx, &h.conn, q, timeout) }},
		{nameTPCHHumTable, "`hummer serve` over tables it stores (CREATE TABLE without ENGINE, loaded by `CREATE TABLE AS SELECT` from the files; Arrow IPC segments under its data directory), `SET parallelism = 2`",
			func(ctx context.Context, q tpchQuery) ([]string, error) { return pgxRows(ctx, &ht.conn, q, timeout) }},
		{nameTPCHDuckCSV, "DuckDB in the benchmark's process (duckdb-go), `SET threads = 2`, each table a view over `read_csv` of its file (read again by every query)",
			func(ctx context.Context, q tpchQuery) ([]string, error) { return duckRows(ctx, duckCSV, q, timeout) }},
		{nameTPCHDuckTable, "the same DuckDB settings, tables loaded from the files beforehand (`CREATE TABLE AS`; load time below)",
			func(ctx context.Context, q tpchQuery) ([]string, error) { return duckRows(ctx, duckTables, q, timeout) }},
		{nameTPCHPostgres, "PostgreSQL 15 (Debian's), a server of its own (`initdb`, `shared_buffers = 2GB`, `work_mem = 256MB`, default parallelism: 2 workers per gather), tables loaded with COPY, primary keys, `ANALYZE`",
			func(ctx context.Context, q tpchQuery) ([]string, error) { return pgxRows(ctx, &pg.conn, q, timeout) }},
	}
	for _, c := range cs {
		rep.Contenders = append(rep.Contenders, contenderReport{Name: c.name, Notes: c.notes})
	}

	answers := map[string]map[string][]string{} // contender, query: the last answer
	for _, c := range cs {
		answers[c.name] = map[string][]string{}
	}
	for _, q := range qs {
		warmUp := map[string]error{}
		for r := range cfg.tpchReps + 1 { // the first pass warms up and is not kept
			for _, i := range runOrder(len(cs), r) {
				c := cs[i]
				if err := warmUp[c.name]; err != nil {
					// A contender that failed its warm-up is not run again on
					// this query: its error stands for its runs.
					rep.Runs = append(rep.Runs, tpchRun{Contender: c.name, Query: q.Name, Rep: r, Error: "in the warm-up: " + err.Error()})
					continue
				}
				t0 := time.Now()
				rows, err := c.run(ctx, q)
				wall := time.Since(t0)
				if r == 0 {
					if err == nil {
						answers[c.name][q.Name] = rows
					} else {
						warmUp[c.name] = err
						progress("tpch %s, warm-up, %-26s FAILED: %v", q.Name, c.name, err)
					}
					continue
				}
				run := tpchRun{Contender: c.name, Query: q.Name, Rep: r, WallS: round(wall.Seconds(), 4), Rows: len(rows)}
				if err != nil {
					run.Error = err.Error()
					progress("tpch %s, run %d/%d, %-26s FAILED: %v", q.Name, r, cfg.tpchReps, c.name, err)
				} else {
					answers[c.name][q.Name] = rows
					progress("tpch %s, run %d/%d, %-26s %8.3f s, %d rows", q.Name, r, cfg.tpchReps, c.name, wall.Seconds(), len(rows))
				}
				rep.Runs = append(rep.Runs, run)
			}
		}
	}
	// Every answer against PostgreSQL's (DuckDB's own tables' where it has none).
	wrong := 0
	for _, q := range qs {
		ref, ok := answers[nameTPCHPostgres][q.Name]
		if !ok {
			ref, ok = answers[nameTPCHDuckTable][q.Name]
		}
		for _, c := range cs {
			got, answered := answers[c.name][q.Name]
			if !answered || !ok {
				continue
			}
			if !slices.Equal(got, ref) {
				wrong++
				progress("tpch %s: %s's answer differs from the reference:\n got %s\nwant %s", q.Name, c.name, first(got), first(ref))
				for i := range rep.Runs {
					if rep.Runs[i].Contender == c.name && rep.Runs[i].Query == q.Name && rep.Runs[i].Error == "" {
						rep.Runs[i].Error = "wrong answer"
					}
				}
			}
		}
	}
	rep.DurationS = round(time.Since(start).Seconds(), 1)
	rep.summarise()
	if err := writeJSONFile(filepath.Join(cfg.results, tpchFile), rep); err != nil {
		return 0, err
	}
	if err := plotTPCH(rep, filepath.Join(cfg.results, tpchPlot)); err != nil {
		return 0, err
	}
	rep.writeTable(os.Stdout)
	failed := wrong
	for _, run := range rep.Runs {
		if run.Error != "" && run.Error != "wrong answer" && (run.Contender == nameTPCHHummer || run.Contender == nameTPCHHumTable) {
			failed++
		}
	}
	return failed, nil
}

func first(rows []string) string {
	if len(rows) == 0 {
		return "(no rows)"
	}
	return fmt.Sprintf("%d rows, first %q", len(rows), rows[0])
}

// tpchTable is one table: its name, column definitions and CSV file.
type tpchTable struct {
	name, columns, path string
}

// tpchTables reads the tables' definitions from tpchgen -ddl (PostgreSQL's
// statements, whose column lists every contender reads).
func tpchTables(gen, dir string) ([]tpchTable, error) {
	ddl, err := output(gen, "-ddl", "-out", dir)
	if err != nil {
		return nil, err
	}
	var ts []tpchTable
	for _, line := range strings.Split(ddl, "\n") {
		rest, ok := strings.CutPrefix(line, "CREATE TABLE ")
		if !ok {
			continue
		}
		name, cols, _ := strings.Cut(rest, " (")
		ts = append(ts, tpchTable{name: name, columns: strings.TrimSuffix(cols, ");"), path: filepath.Join(dir, name+".csv")})
	}
	if len(ts) != 8 {
		return nil, fmt.Errorf("tpchgen -ddl gave %d tables, want 8", len(ts))
	}
	return ts, nil
}

// normRow renders one row as its values' text separated by "|", every
// fractional number to 12 significant digits, as the .slt tests compare:
// PostgreSQL picks a numeric's scale per value, DuckDB answers doubles.
func normRow(vals []string) string {
	for i, v := range vals {
		if strings.ContainsAny(v, ".eE") {
			if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(f, 0) {
				vals[i] = strconv.FormatFloat(f, 'g', 12, 64)
			}
		}
	}
	return strings.Join(vals, "|")
}

// openDuckDB opens two in-memory DuckDB databases: one whose tables are views
// over read_csv of the files, one with the tables loaded from them.
func openDuckDB(tables []tpchTable, rep *tpchReport) (*sql.DB, *sql.DB, error) {
	open := func() (*sql.DB, error) {
		db, err := sql.Open("duckdb", "")
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1) // one session: its SET applies to every query
		if _, err := db.Exec("SET threads = 2"); err != nil {
			db.Close()
			return nil, err
		}
		return db, nil
	}
	csv, err := open()
	if err != nil {
		return nil, nil, err
	}
	loaded, err := open()
	if err != nil {
		csv.Close()
		return nil, nil, err
	}
	t0 := time.Now()
	for _, t := range tables {
		var cols []string
		for _, c := range strings.Split(t.columns, ", ") {
			name, typ, _ := strings.Cut(c, " ")
			cols = append(cols, fmt.Sprintf("'%s': '%s'", name, strings.ReplaceAll(typ, "TEXT", "VARCHAR")))
		}
		read := fmt.Sprintf("read_csv('%s', header = true, auto_detect = false, columns = {%s})", t.path, strings.Join(cols, ", "))
		if _, err := csv.Exec(fmt.Sprintf("CREATE VIEW %s AS SELECT * FROM %s", t.name, read)); err != nil {
			return nil, nil, fmt.Errorf("duckdb: %s: %w", t.name, err)
		}
		if _, err := loaded.Exec(fmt.Sprintf("CREATE TABLE %s AS SELECT * FROM %s", t.name, read)); err != nil {
			return nil, nil, fmt.Errorf("duckdb: %s: %w", t.name, err)
		}
	}
	rep.LoadS[nameTPCHDuckTable] = round(time.Since(t0).Seconds(), 1)
	return csv, loaded, nil
}

// duckRows runs q on db and returns its rows, normalised.
func duckRows(ctx context.Context, db *sql.DB, q tpchQuery, timeout time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out []string
	for i, s := range q.Stmts {
		if i != q.Query {
			if _, err := db.ExecContext(ctx, s); err != nil {
				return nil, err
			}
			continue
		}
		rows, err := db.QueryContext(ctx, s)
		if err != nil {
			return nil, err
		}
		cols, err := rows.Columns()
		if err != nil {
			rows.Close()
			return nil, err
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for j := range vals {
			ptrs[j] = &vals[j]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return nil, err
			}
			text := make([]string, len(vals))
			for j, v := range vals {
				text[j] = duckText(v)
			}
			out = append(out, normRow(text))
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// duckText renders a value from duckdb-go as PostgreSQL's text output would.
func duckText(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case time.Time:
		if v.Hour() == 0 && v.Minute() == 0 && v.Second() == 0 && v.Nanosecond() == 0 {
			return v.Format("2006-01-02")
		}
		return v.Format("2006-01-02 15:04:05")
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprint(v)
}

func (r *tpchReport) summarise() {
	r.Summary, r.Goals, r.GeoMeanS = nil, nil, map[string]float64{}
	logSum := map[string]float64{}
	n := map[string]int{}
	for _, q := range r.Queries {
		row := tpchRow{Query: q.Name, WallS: map[string]float64{}, Right: map[string]bool{}}
		for _, c := range r.Contenders {
			var walls []float64
			right := true
			for _, run := range r.Runs {
				if run.Contender != c.Name || run.Query != q.Name {
					continue
				}
				if run.Error != "" {
					right = false
					continue
				}
				walls = append(walls, run.WallS)
			}
			if len(walls) > 0 && right {
				row.WallS[c.Name] = round(median(walls), 3)
				row.Right[c.Name] = true
				logSum[c.Name] += math.Log(median(walls))
				n[c.Name]++
			}
		}
		r.Summary = append(r.Summary, row)
	}
	for _, c := range r.Contenders {
		if n[c.Name] == len(r.Queries) {
			r.GeoMeanS[c.Name] = round(math.Exp(logSum[c.Name]/float64(n[c.Name])), 3)
		}
	}
	answered := float64(n[nameTPCHHummer])
	r.Goals = append(r.Goals, goal{Name: tpchRunsGoal, Value: answered, Target: "22 of 22", Pass: n[nameTPCHHummer] == len(r.Queries) && len(r.Queries) == 22})
	hg, dg := r.GeoMeanS[nameTPCHHummer], r.GeoMeanS[nameTPCHDuckCSV]
	ratio := 0.0
	if hg > 0 && dg > 0 {
		ratio = round(hg/dg, 2)
	}
	r.Goals = append(r.Goals, goal{Name: tpchMeanGoal, Value: ratio, Target: "≤ 1", Pass: ratio > 0 && ratio <= 1})
	if _, ran := r.LoadS[nameTPCHHumTable]; ran {
		ht, dt := r.GeoMeanS[nameTPCHHumTable], r.GeoMeanS[nameTPCHDuckTable]
		ratio = 0
		if ht > 0 && dt > 0 {
			ratio = round(ht/dt, 2)
		}
		r.Goals = append(r.Goals, goal{Name: tpchTablesGoal, Value: ratio, Target: "≤ 1", Pass: ratio > 0 && ratio <= 1})
	}
}

func (r *tpchReport) writeTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "query\t")
	for _, c := range r.Contenders {
		fmt.Fprintf(tw, "%s\t", c.Name)
	}
	fmt.Fprintln(tw)
	for _, s := range r.Summary {
		fmt.Fprintf(tw, "%s\t", s.Query)
		for _, c := range r.Contenders {
			fmt.Fprintf(tw, "%s\t", tpchCell(s, c.Name))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "geometric mean\t")
	for _, c := range r.Contenders {
		fmt.Fprintf(tw, "%s\t", geoCell(r.GeoMeanS[c.Name]))
	}
	fmt.Fprintln(tw)
	tw.Flush()
	for _, g := range r.Goals {
		fmt.Fprintf(w, "goal %s: %.2f (%s) %s\n", g.Name, g.Value, g.Target, passMark(g.Pass))
	}
}

func tpchCell(s tpchRow, name string) string {
	if !s.Right[name] {
		return "failed"
	}
	return fmt.Sprintf("%.3f", s.WallS[name])
}

func geoCell(v float64) string {
	if v == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", v)
}

// readTPCH reads tpch.json; a missing file is a nil report.
func readTPCH(path string) (*tpchReport, error) { return readSummarised[tpchReport](path) }

// readme is the README's section on the suite.
func (r *tpchReport) readme(resultsDir string, p func(string, ...any)) {
	p("## TPC-H: Hummer, DuckDB and PostgreSQL 15 (issue 21)")
	p("")
	p("<!-- From %s, written by `make bench-tpch` (suite tpch of bench/cmd/wordcount; the section is bench/cmd/wordcount/tpch.go). -->", filepath.Join(resultsDir, tpchFile))
	p("")
	p("![TPC-H query times per contender](%s)", filepath.Join(resultsDir, tpchPlot))
	p("")
	p("Run of %s: TPC-H's 22 queries at scale factor %v (%.0f MB of CSV from `cmd/tpchgen`, go-tpc's generator), the standard texts of `cmd/hummer/testdata/slt/tpch.slt`; per query, one warm-up and then %d runs of each contender, interleaved, medians in seconds; %.0f s in all, %.0f s allowed per query. Every answer is checked against PostgreSQL's, values to 12 significant digits (\"failed\": an error, a timeout or a wrong answer).",
		r.Date, r.ScaleFactor, float64(r.Bytes)/1e6, r.Reps, r.DurationS, r.TimeoutS)
	p("")
	head, rule := "| query |", "| --- |"
	for _, c := range r.Contenders {
		head += " " + c.Name + " |"
		rule += " ---: |"
	}
	p("%s", head)
	p("%s", rule)
	for _, s := range r.Summary {
		line := "| " + s.Query + " |"
		for _, c := range r.Contenders {
			line += " " + tpchCell(s, c.Name) + " |"
		}
		p("%s", line)
	}
	line := "| geometric mean |"
	for _, c := range r.Contenders {
		line += " " + geoCell(r.GeoMeanS[c.Name]) + " |"
	}
	p("%s", line)
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
	var loads []string
	for _, c := range r.Contenders {
		if s, ok := r.LoadS[c.Name]; ok {
			loads = append(loads, fmt.Sprintf("%s %.1f s", c.Name, s))
		}
	}
	p("")
	p("Loading the CSV files (not in the query times): %s. Versions: DuckDB %s, %s, Hummer %s.", strings.Join(loads, ", "), r.Versions.DuckDB, r.Postgres, r.Versions.Hummer)
	p("")
}
