package main

// The nexmark suite (issues 24 and 25): the queries of bench/nexmark that
// nexmarkQueries lists (the Nexmark suite's, as the nexmark/nexmark project's
// Flink suite publishes them) through Hummer's real path, `hummer serve` and SQL over
// the wire, each an INSERT INTO its ENGINE=blackhole table over ENGINE=nexmark
// tables generating as fast as they can, at parallelism 1 and 2. The tables
// end after a number of events but are planned as streams (continuous=true),
// as Flink's streaming mode runs its bounded generator: every query runs as
// the continuous job it would be over a stream without end (stream joins,
// updating aggregations and Top-N), and ends with its input. Against a
// hand-written Go program doing q0 and q5 over the same generator
// (bench/cmd/nexmarkgo), and the per-core figures Flink, RisingWave and Arroyo
// publish (nexmark_report.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

const (
	suiteNexmark = "nexmark"
	nexmarkFile  = "nexmark.json"
	nexmarkPlot  = "nexmark.png"

	nameNxHummer = "hummer"
	nameNxGo     = "go program"
)

// nexmarkQueries are the queries of bench/nexmark, in the suite's order: all
// of them, q6 too, whose OVER aggregation reads a Top-N's changing rows (an
// over_window; Flink cannot run it, FLINK-19059, and its suite skips it).
// q10 writes every bid to files (${OUTPUT}: a directory under the work
// directory, emptied before each run).
var nexmarkQueries = []string{"q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q9", "q10", "q11",
	"q12", "q13", "q14", "q15", "q16", "q17", "q18", "q19", "q20", "q21", "q22"}

// nexmarkVarying are the queries whose runs may disagree on the rows they
// write: q12 works in processing time (PROCTIME()), so how its rows fall into
// windows depends on the wall clock; the others' results change as input
// arrives, and how many changes (updates, deletes) they write depends on how
// their inputs' batches interleave.
var nexmarkVarying = map[string]bool{"q12": true, "q4": true, "q6": true, "q9": true, "q15": true, "q16": true, "q17": true, "q18": true, "q19": true}

// nexmarkGoQueries are the queries the Go program does.
var nexmarkGoQueries = []string{"q0", "q5"}

// nexmarkReport is the suite's results file.
type nexmarkReport struct {
	Date      string   `json:"date"`
	Versions  versions `json:"versions"`
	Machine   machine  `json:"machine"`
	Reps      int      `json:"reps"`
	EventRate float64  `json:"event_rate"`
	// Events is each query's length of the event sequence (all three kinds).
	Events    map[string]int64 `json:"events"`
	Queries   []nexmarkQuery   `json:"queries"`
	Runs      []nexmarkRun     `json:"runs"`
	DurationS float64          `json:"duration_s"`
	// RunsS, OtherCPUS and StealS are the machine's other work while the runs went on.
	RunsS     float64 `json:"runs_s"`
	OtherCPUS float64 `json:"other_cpu_s"`
	StealS    float64 `json:"steal_s"`
	// Derived by summarise.
	Summary   []nexmarkRow      `json:"summary"`
	Published []nexmarkFigure   `json:"published"`
	Goals     []nexmarkGoal     `json:"goals"`
	Checks    map[string]string `json:"checks,omitempty"` // per query, a disagreement between runs' row counts
}

type nexmarkQuery struct {
	Name string `json:"name"`
	SQL  string `json:"sql"` // the INSERT statement, as sent
}

// nexmarkRun is one timed run: Hummer's job or the Go program's process.
type nexmarkRun struct {
	Query       string  `json:"query"`
	Contender   string  `json:"contender"`
	Parallelism int     `json:"parallelism"`
	Rep         int     `json:"rep"`
	Events      int64   `json:"events"`
	WallS       float64 `json:"wall_s"`
	CPUS        float64 `json:"cpu_s"`
	PeakRSSMiB  float64 `json:"peak_rss_mib"`
	// RSSBeforeMiB is, for Hummer, the server's RSS when the statement was
	// sent: what the long-lived server held from earlier jobs.
	RSSBeforeMiB float64 `json:"rss_before_mib,omitempty"`
	Rows         int64   `json:"rows"` // Hummer: the job's rows_out (into the sink); Go: its output rows
	Error        string  `json:"error,omitempty"`
}

// nexmarkRow is the median of one contender's successful runs of a query at
// one parallelism.
type nexmarkRow struct {
	Query       string  `json:"query"`
	Contender   string  `json:"contender"`
	Parallelism int     `json:"parallelism"`
	Runs        int     `json:"runs"`
	Events      int64   `json:"events"`
	WallS       float64 `json:"wall_s"`
	CPUS        float64 `json:"cpu_s"`
	PeakRSSMiB  float64 `json:"peak_rss_mib"`
	// RSSBeforeMiB is the median of the runs' RSSBeforeMiB.
	RSSBeforeMiB float64 `json:"rss_before_mib,omitempty"`
	Rows         int64   `json:"rows"`
	EventsPerS   float64 `json:"events_per_s"`
	// PerCore is events/s over the cores used: the parallelism, at most the machine's.
	PerCore float64 `json:"events_per_s_per_core"`
	// PerCPUS is events over the CPU seconds the process(es) used, as the
	// nexmark/nexmark project measures Flink's cores.
	PerCPUS float64 `json:"events_per_cpu_s"`
}

// nexmarkGoal is one target judged on one query.
type nexmarkGoal struct {
	Query  string  `json:"query"`
	Name   string  `json:"name"`
	Target string  `json:"target"`
	Value  float64 `json:"value"`
	Pass   bool    `json:"pass"`
	Note   string  `json:"note,omitempty"`
}

// runNexmark runs the suite and writes its results file; it returns how many
// runs failed.
func runNexmark(ctx context.Context, cfg config, b bins, vers versions, repo, work string) (int, error) {
	start := time.Now()
	cpus := runtime.NumCPU()
	rep := &nexmarkReport{Date: start.UTC().Format(time.RFC3339), Versions: vers, Machine: readMachine(cpus),
		Reps: cfg.nexmarkReps, EventRate: cfg.nexmarkEventRate, Events: map[string]int64{}}
	rep.Machine.LoadAvg = loadAvg()
	dir := filepath.Join(repo, "bench", "nexmark")
	ddl, err := os.ReadFile(filepath.Join(dir, "ddl.sql"))
	if err != nil {
		return 0, err
	}
	queries := cfg.nexmarkQueries
	if len(queries) == 0 {
		queries = nexmarkQueries
	}
	// Each query's file holds its sink's CREATE TABLE and its INSERT.
	sinks, inserts, outputs := map[string]string{}, map[string]string{}, map[string]string{}
	for _, q := range queries {
		text, err := os.ReadFile(filepath.Join(dir, q+".sql"))
		if err != nil {
			return 0, err
		}
		if sinks[q], inserts[q], err = splitNexmarkQuery(string(text)); err != nil {
			return 0, fmt.Errorf("%s.sql: %w", q, err)
		}
		if strings.Contains(sinks[q], "${OUTPUT}") {
			outputs[q] = filepath.Join(work, "nexmark-"+q)
			sinks[q] = strings.ReplaceAll(sinks[q], "${OUTPUT}", outputs[q])
		}
		rep.Queries = append(rep.Queries, nexmarkQuery{Name: q, SQL: inserts[q]})
		if rep.Events[q] = cfg.nexmarkEvents[q]; rep.Events[q] == 0 {
			rep.Events[q] = cfg.nexmarkEvents[""]
		}
		if rep.Events[q] <= 0 {
			return 0, fmt.Errorf("-nexmark-events gives %s no length", q)
		}
	}

	nxgo := filepath.Join(work, "nexmarkgo")
	if err := goBuild(".", nxgo, "./cmd/nexmarkgo"); err != nil {
		return 0, err
	}
	// A fresh data directory: a -work directory kept from an earlier run
	// would hold its tables.
	if err := os.RemoveAll(filepath.Join(work, "nexmark-data")); err != nil {
		return 0, err
	}
	h, err := startHummer(ctx, b.hummer, work, "nexmark", 0)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	// Checkpoints every 3 minutes, as the Flink suite takes them: a run of
	// seconds takes none.
	if err := h.exec(ctx, "SET checkpoint_interval = '180s'"); err != nil {
		return 0, err
	}
	for _, q := range queries {
		if err := h.exec(ctx, sinks[q]); err != nil {
			return 0, fmt.Errorf("%s's sink: %w", q, err)
		}
	}
	// The source tables are declared for one length of the event sequence at a
	// time, and declared again when a query needs another.
	side, err := sideInputCSV(work)
	if err != nil {
		return 0, err
	}
	tables := &nexmarkTables{h: h, ddl: string(ddl), eventRate: cfg.nexmarkEventRate, sideInput: side}

	type contender struct {
		query, name string
		parallelism int
	}
	var cs []contender
	for _, q := range queries {
		for _, p := range []int{1, 2} {
			cs = append(cs, contender{q, nameNxHummer, p})
		}
	}
	for _, q := range nexmarkGoQueries {
		if _, ok := inserts[q]; ok {
			for _, p := range []int{1, 2} {
				cs = append(cs, contender{q, nameNxGo, p})
			}
		}
	}
	run := func(c contender, r int) nexmarkRun {
		events := rep.Events[c.query]
		res := nexmarkRun{Query: c.query, Contender: c.name, Parallelism: c.parallelism, Rep: r, Events: events}
		var m measurement
		var err error
		if c.name == nameNxGo {
			m, res.Rows, err = runNexmarkGo(ctx, b.measure, nxgo, filepath.Join(work, "nexmarkgo.json"), c.query, events, cfg.nexmarkEventRate, c.parallelism)
		} else if err = tables.declare(ctx, events); err == nil {
			if out := outputs[c.query]; out != "" {
				err = os.RemoveAll(out) // the files of the run before
			}
			if err == nil {
				m, res.Rows, err = h.runJob(ctx, c.parallelism, inserts[c.query], cfg.nexmarkTimeout)
			}
		}
		res.WallS, res.CPUS, res.PeakRSSMiB = round(m.Wall.Seconds(), 4), round(m.CPU.Seconds(), 3), mib(m.PeakRSS)
		if m.RSSBefore > 0 {
			res.RSSBeforeMiB = mib(m.RSSBefore)
		}
		if err != nil {
			res.Error = err.Error()
		}
		return res
	}

	// One warm-up of each of Hummer's queries (not recorded): the first job pays
	// for lazily built state.
	for _, c := range cs {
		if c.name == nameNxHummer && c.parallelism == 2 {
			if res := run(c, 0); res.Error != "" {
				progress("nexmark warm-up %s: %s", c.query, res.Error)
			}
		}
	}
	others, err := startOtherWork(h.pids())
	if err != nil {
		return 0, err
	}
	failed := 0
	for r := range cfg.nexmarkReps {
		for _, i := range runOrder(len(cs), r) {
			res := run(cs[i], r+1)
			if res.Error != "" {
				failed++
				progress("nexmark run %d/%d, %-4s %-10s p=%d FAILED: %s", r+1, cfg.nexmarkReps, res.Query, res.Contender, res.Parallelism, res.Error)
			} else {
				progress("nexmark run %d/%d, %-4s %-10s p=%d %7.3f s wall %7.3f s CPU %6.0f k events/s per core, %d rows",
					r+1, cfg.nexmarkReps, res.Query, res.Contender, res.Parallelism, res.WallS, res.CPUS,
					float64(res.Events)/res.WallS/float64(min(res.Parallelism, cpus))/1e3, res.Rows)
			}
			rep.Runs = append(rep.Runs, res)
		}
	}
	runs, other, steal, err := others.done()
	if err != nil {
		return 0, err
	}
	rep.RunsS, rep.OtherCPUS, rep.StealS = round(runs.Seconds(), 1), round(other.Seconds(), 1), round(steal.Seconds(), 1)
	rep.DurationS = round(time.Since(start).Seconds(), 1)
	rep.summarise()
	if err := writeJSONFile(filepath.Join(cfg.results, nexmarkFile), rep); err != nil {
		return 0, err
	}
	rep.writeTable(os.Stdout)
	return failed, nil
}

// nexmarkDefaultEvents sizes each query's runs to about a second of CPU on
// this 2-core machine, for the whole suite to take about 10 minutes: q3 and
// q8 read only the people and auctions (8% of the events).
const nexmarkDefaultEvents = "q0=4000000,q1=4000000,q2=4000000,q3=20000000,q4=2000000,q5=1000000,q6=500000,q7=2000000,q8=20000000,q9=500000,q10=1000000,q11=1000000," +
	"q12=2000000,q13=4000000,q14=2000000,q15=1000000,q16=1000000,q17=1000000,q18=1000000,q19=1000000,q20=1000000,q21=1000000,q22=4000000"

// parseNexmarkEvents reads -nexmark-events: QUERY=N pairs, or one N for every
// query (the key "").
func parseNexmarkEvents(s string) (map[string]int64, error) {
	out := map[string]int64{}
	for f := range strings.SplitSeq(s, ",") {
		q, n, ok := strings.Cut(strings.TrimSpace(f), "=")
		if !ok {
			q, n = "", q
		}
		v, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not QUERY=N or N with N a positive count of events", f)
		}
		out[strings.TrimSpace(q)] = v
	}
	return out, nil
}

// splitNexmarkQuery returns a query file's two statements: its sink's CREATE
// TABLE and its INSERT, without the comments.
func splitNexmarkQuery(text string) (sink, insert string, err error) {
	var lines []string
	for l := range strings.SplitSeq(text, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			lines = append(lines, l)
		}
	}
	var stmts []string
	for s := range strings.SplitSeq(strings.Join(lines, "\n"), ";") {
		if s = strings.TrimSpace(s); s != "" {
			stmts = append(stmts, s)
		}
	}
	if len(stmts) != 2 || !strings.HasPrefix(stmts[0], "CREATE TABLE") || !strings.HasPrefix(stmts[1], "INSERT INTO") {
		return "", "", errors.New("want a CREATE TABLE and an INSERT INTO")
	}
	return stmts[0], stmts[1], nil
}

// nexmarkTables declares the person, auction and bid tables of ddl.sql.
type nexmarkTables struct {
	h         *hummerServer
	ddl       string
	eventRate float64
	events    int64  // what they are declared with; 0: not yet
	sideInput string // q13's side input, a CSV file (sideInputCSV)
}

// sideInputCSV writes q13's side input into dir, as the Flink suite's
// side_input.txt holds it: the keys 0 to 9999, each with its text.
func sideInputCSV(dir string) (string, error) {
	var b strings.Builder
	for k := range 10000 {
		fmt.Fprintf(&b, "%d,%d\n", k, k)
	}
	path := filepath.Join(dir, "side_input.csv")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

func (t *nexmarkTables) declare(ctx context.Context, events int64) error {
	if t.events == events {
		return nil
	}
	if t.events != 0 {
		for _, name := range []string{"person", "auction", "bid", "side_input"} {
			if err := t.h.exec(ctx, "DROP TABLE "+name); err != nil {
				return err
			}
		}
	}
	// continuous=true plans them as streams although they end (nexmark.go).
	ddl := strings.NewReplacer("${EVENTS}", strconv.FormatInt(events, 10),
		"${EVENT_RATE}", strconv.FormatFloat(t.eventRate, 'f', -1, 64)+"&continuous=true", "${SIDE_INPUT}", t.sideInput).Replace(t.ddl)
	if err := t.h.exec(ctx, ddl); err != nil {
		return fmt.Errorf("declaring the Nexmark tables: %w", err)
	}
	t.events = events
	return nil
}

// jobStarted is the notice an INSERT INTO a connector table answers with.
var jobStarted = regexp.MustCompile(`^job (\d+) started`)

// runJob sends insert at the given parallelism and measures it until its job
// has finished: the statement returns as soon as the job starts (with a notice
// naming it), so the clock runs from sending it until SHOW PROCESSLIST says
// the job is no longer running, polled every 5 ms on the same connection. It
// returns the job's rows_out, the rows it wrote into its sink.
func (s *hummerServer) runJob(ctx context.Context, parallelism int, insert string, timeout time.Duration) (measurement, int64, error) {
	if err := s.exec(ctx, fmt.Sprintf("SET parallelism = %d", parallelism)); err != nil {
		return measurement{}, 0, err
	}
	var rows int64
	m, err := s.measure(func() error {
		s.notice = ""
		if _, err := s.conn.Exec(ctx, insert); err != nil {
			return err
		}
		started := jobStarted.FindStringSubmatch(s.notice)
		if started == nil {
			return fmt.Errorf("the INSERT named no job (its notice: %q)", s.notice)
		}
		job := started[1]
		deadline := time.Now().Add(timeout)
		for {
			state, out, jerr, err := s.jobState(ctx, job)
			switch {
			case err != nil:
				return err
			case state == "finished":
				rows = out
				return nil
			case state == "failed" || state == "cancelled":
				return fmt.Errorf("job %s %s: %s", job, state, jerr)
			case time.Now().After(deadline):
				s.exec(ctx, "KILL "+job)
				return fmt.Errorf("job %s still %s after %s", job, state, timeout)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	return m, rows, err
}

// jobState reads one job's state, rows_out and error from SHOW PROCESSLIST.
func (s *hummerServer) jobState(ctx context.Context, job string) (state string, rowsOut int64, jobErr string, err error) {
	rows, err := s.conn.Query(ctx, "SHOW PROCESSLIST")
	if err != nil {
		return "", 0, "", err
	}
	defer rows.Close()
	fields := rows.FieldDescriptions()
	col := map[string]int{}
	for i, f := range fields {
		col[f.Name] = i
	}
	for _, name := range []string{"id", "state", "rows_out", "error"} {
		if _, ok := col[name]; !ok {
			return "", 0, "", fmt.Errorf("SHOW PROCESSLIST has no column %s", name)
		}
	}
	found := false
	for rows.Next() {
		v := rows.RawValues()
		if string(v[col["id"]]) != job {
			continue
		}
		found = true
		state, jobErr = string(v[col["state"]]), string(v[col["error"]])
		if rowsOut, err = strconv.ParseInt(string(v[col["rows_out"]]), 10, 64); err != nil {
			return "", 0, "", fmt.Errorf("SHOW PROCESSLIST: rows_out %q: %w", v[col["rows_out"]], err)
		}
	}
	if err := rows.Err(); err != nil {
		return "", 0, "", err
	}
	if !found {
		return "", 0, "", fmt.Errorf("job %s is not in SHOW PROCESSLIST", job)
	}
	return state, rowsOut, jobErr, nil
}

// runNexmarkGo runs the Go program through bench/cmd/measure and returns its
// output rows.
func runNexmarkGo(ctx context.Context, measure, bin, report, query string, events int64, eventRate float64, workers int) (measurement, int64, error) {
	m, out, err := runMeasured(ctx, measure, report, bin, "-query", query, "-events", strconv.FormatInt(events, 10),
		"-event-rate", strconv.FormatFloat(eventRate, 'f', -1, 64), "-workers", strconv.Itoa(workers))
	if err != nil {
		return m, 0, err
	}
	for l := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(l, "rows "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return m, n, err
		}
	}
	return m, 0, fmt.Errorf("%s printed no rows line: %q", bin, out)
}

// runMeasured runs name with args through bench/cmd/measure and returns its
// measurement and standard output.
func runMeasured(ctx context.Context, measure, report, name string, args ...string) (measurement, string, error) {
	var stdout, stderr strings.Builder
	cmd := osexec.CommandContext(ctx, measure, append([]string{"-o", report, "--", name}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return measurement{}, "", fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	m, err := readMeasure(report)
	if err != nil {
		return m, "", fmt.Errorf("%s: %w", name, err)
	}
	return m, stdout.String(), nil
}

// writeJSONFile writes v, indented, to path, making its directory.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
