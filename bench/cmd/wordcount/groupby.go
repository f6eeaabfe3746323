package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The group-by suite (issue 20): a GROUP BY over many distinct keys (10
// million by default, a CSV file of some 110 MB) under a memory limit of
// 1 GiB, where the groups do not fit and both engines spill to disk: Hummer
// (`hummer serve --memory 1GiB`) against DuckDB (`SET memory_limit`), and
// Hummer without the limit for what spilling costs. Its results go to their
// own file, groupby.json.
const (
	groupByFile  = "groupby.json"
	groupByLimit = "1GiB"
	// groupBySQL is Hummer's query; bench/cmd/duckgroup has DuckDB's.
	groupBySQL = "SELECT COUNT(*), SUM(s) FROM (SELECT k, SUM(v) AS s FROM %s GROUP BY k) AS t"

	nameHummerLimit  = "hummer --memory " + groupByLimit
	nameHummerFree   = "hummer, no --memory"
	nameDuckDBLimit  = "duckdb memory_limit " + groupByLimit
	groupByPeakGoal  = "Hummer's peak RSS within --memory"
	groupByRightGoal = "every run answers right"
)

// groupByReport is what groupby.json holds.
type groupByReport struct {
	Date        string            `json:"date"`
	DurationS   float64           `json:"duration_s"`
	Keys        int               `json:"keys"`
	Bytes       int64             `json:"bytes"`
	MemoryLimit string            `json:"memory_limit"`
	Reps        int               `json:"reps"`
	Versions    versions          `json:"versions"`
	Contenders  []contenderReport `json:"contenders"`
	WantGroups  int64             `json:"want_groups"`
	WantSum     int64             `json:"want_sum"`
	Runs        []groupByRun      `json:"runs"`
	Summary     []groupByRow      `json:"summary"`
	Goals       []goal            `json:"goals"`
}

type groupByRun struct {
	Contender  string  `json:"contender"`
	Rep        int     `json:"rep"`
	WallS      float64 `json:"wall_s"`
	CPUS       float64 `json:"cpu_s"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	Groups     int64   `json:"groups"`
	Sum        int64   `json:"sum"`
	Error      string  `json:"error,omitempty"`
}

// groupByRow is the median of a contender's successful runs.
type groupByRow struct {
	Contender  string  `json:"contender"`
	Runs       int     `json:"runs"`
	WallS      float64 `json:"wall_s"`
	CPUS       float64 `json:"cpu_s"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	VsDuckDB   float64 `json:"time_vs_duckdb"` // wall time ratio, Hummer's over DuckDB's
}

// writeGroupByInput writes n rows "k<key>,<v>": every key once, in an order
// scattered by a multiplicative step (n must not be a multiple of 7919), and
// v = row % 10. It returns the file's size and the expected answer.
func writeGroupByInput(path string, n int) (size, groups, sum int64, err error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, 0, 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	buf := make([]byte, 0, 32)
	for i := range n {
		buf = append(buf[:0], 'k')
		buf = strconv.AppendInt(buf, int64((i*7919)%n), 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(i%10), 10)
		buf = append(buf, '\n')
		w.Write(buf)
		sum += int64(i % 10)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, 0, 0, err
	}
	st, err := f.Stat()
	f.Close()
	if err != nil {
		return 0, 0, 0, err
	}
	return st.Size(), int64(n), sum, nil
}

// runGroupBy runs the suite and writes its report to results/groupby.json. It
// returns how many runs failed.
func runGroupBy(ctx context.Context, cfg config, b bins, vers versions, work string) (int, error) {
	start := time.Now()
	if cfg.groupByKeys%7919 == 0 {
		return 0, fmt.Errorf("-groupby-keys %d is a multiple of 7919", cfg.groupByKeys)
	}
	rep := &groupByReport{Date: start.UTC().Format(time.RFC3339), Keys: cfg.groupByKeys, MemoryLimit: groupByLimit,
		Reps: cfg.groupByReps, Versions: vers}
	path := filepath.Join(work, "groupby.csv")
	progress("groupby: writing %d keys to %s", cfg.groupByKeys, path)
	var err error
	if rep.Bytes, rep.WantGroups, rep.WantSum, err = writeGroupByInput(path, cfg.groupByKeys); err != nil {
		return 0, err
	}
	defer os.Remove(path)
	if _, err := os.ReadFile(path); err != nil { // into the page cache for everyone
		return 0, err
	}
	duckSQL, err := output(b.duckgroup, "-print", "%s")
	if err != nil {
		return 0, err
	}
	rep.Contenders = []contenderReport{
		{Name: nameHummerLimit, Query: groupBySQL, Notes: "`hummer serve --memory " + groupByLimit + "`, one server for all its runs, table `kv (k TEXT, v BIGINT) ENGINE=file` over the CSV file; parallelism 2. " +
			"The aggregation's budget is the TaskManager's default work_mem (an eighth of the limit per slot); past it the groups held stay, and the rows of other groups are partitioned to spill files by key hash and aggregated after"},
		{Name: nameHummerFree, Query: groupBySQL, Notes: "the same server flags without --memory (the limit is then 90% of the machine's memory): every group in memory, no spilling"},
		{Name: nameDuckDBLimit, Query: strings.TrimSpace(duckSQL), Notes: "`bench/cmd/duckgroup`: in-memory DuckDB, `SET threads = 2`, `SET memory_limit = '" + groupByLimit + "'`, `SET temp_directory` in the scratch directory; one process per run (start-up included)"},
	}
	servers := map[string]*hummerServer{}
	for name, extra := range map[string][]string{nameHummerLimit: {"--memory", groupByLimit}, nameHummerFree: nil} {
		h, err := startHummer(ctx, b.hummer, work, strings.NewReplacer(" ", "-", ",", "").Replace(name), 0, extra...)
		if err != nil {
			return 0, err
		}
		defer h.Close()
		if err := h.exec(ctx, fmt.Sprintf("CREATE TABLE kv (k TEXT, v BIGINT) ENGINE=file CONNECTION='file://%s?format=csv'", path)); err != nil {
			return 0, err
		}
		if err := h.exec(ctx, "SET parallelism = 2"); err != nil {
			return 0, err
		}
		servers[name] = h
	}
	temp := filepath.Join(work, "duckdb-temp")
	runOne := func(name string) (measurement, int64, int64, error) {
		if h := servers[name]; h != nil {
			var groups, sum int64
			m, err := h.measure(func() error {
				return h.conn.QueryRow(ctx, fmt.Sprintf(groupBySQL, "kv")).Scan(&groups, &sum)
			})
			return m, groups, sum, err
		}
		return runGroupChild(ctx, b.measure, filepath.Join(work, "measure.json"), b.duckgroup,
			"-threads", "2", "-memory-limit", groupByLimit, "-temp", temp, path)
	}
	failed := 0
	names := []string{nameHummerLimit, nameHummerFree, nameDuckDBLimit}
	for r := range cfg.groupByReps + 1 { // the first pass warms up and is not kept
		for k := range names {
			name := names[(k+r)%len(names)]
			m, groups, sum, err := runOne(name)
			if err == nil && (groups != rep.WantGroups || sum != rep.WantSum) {
				err = fmt.Errorf("wrong result: %d groups summing to %d, want %d and %d", groups, sum, rep.WantGroups, rep.WantSum)
			}
			if r == 0 {
				if err != nil {
					return 0, fmt.Errorf("%s warm-up: %w", name, err)
				}
				continue
			}
			run := groupByRun{Contender: name, Rep: r, WallS: m.Wall.Seconds(), CPUS: m.CPU.Seconds(), PeakRSSMiB: mib(m.PeakRSS), Groups: groups, Sum: sum}
			if err != nil {
				run.Error = err.Error()
				failed++
				progress("groupby, run %d/%d, %-24s FAILED: %v", r, cfg.groupByReps, name, err)
			} else {
				progress("groupby, run %d/%d, %-24s %6.2f s wall %6.2f s CPU %7.1f MiB peak RSS", r, cfg.groupByReps, name, run.WallS, run.CPUS, run.PeakRSSMiB)
			}
			rep.Runs = append(rep.Runs, run)
		}
	}
	rep.DurationS = round(time.Since(start).Seconds(), 1)
	rep.summarise()
	if err := writeJSONFile(filepath.Join(cfg.results, groupByFile), rep); err != nil {
		return 0, err
	}
	rep.writeTable(os.Stdout)
	return failed, nil
}

// runGroupChild runs duckgroup under bench/cmd/measure and reads its answer.
func runGroupChild(ctx context.Context, measure, report, name string, args ...string) (measurement, int64, int64, error) {
	var stdout strings.Builder
	var m measurement
	cmd := exec.CommandContext(ctx, measure, append([]string{"-o", report, "--", name}, args...)...)
	cmd.Stdout = &stdout
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return m, 0, 0, fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	m, err := readMeasure(report)
	if err != nil {
		return m, 0, 0, err
	}
	var groups, sum int64
	if _, err := fmt.Sscan(stdout.String(), &groups, &sum); err != nil {
		return m, 0, 0, fmt.Errorf("%s printed %q: %w", name, stdout.String(), err)
	}
	return m, groups, sum, nil
}

func (r *groupByReport) summarise() {
	r.Summary, r.Goals = nil, nil
	rows := map[string]groupByRow{}
	for _, c := range r.Contenders {
		var wall, cpu, rss []float64
		for _, run := range r.Runs {
			if run.Contender == c.Name && run.Error == "" {
				wall, cpu, rss = append(wall, run.WallS), append(cpu, run.CPUS), append(rss, run.PeakRSSMiB)
			}
		}
		row := groupByRow{Contender: c.Name, Runs: len(wall)}
		if len(wall) > 0 {
			row.WallS, row.CPUS, row.PeakRSSMiB = round(median(wall), 2), round(median(cpu), 2), round(median(rss), 1)
		}
		rows[c.Name] = row
	}
	for _, c := range r.Contenders {
		row := rows[c.Name]
		if d := rows[nameDuckDBLimit]; d.WallS > 0 && row.WallS > 0 {
			row.VsDuckDB = round(row.WallS/d.WallS, 2)
		}
		r.Summary = append(r.Summary, row)
	}
	// Goals: every run of Hummer under the limit peaks within it, and every
	// run of every contender answers right.
	maxPeak, failed := 0.0, 0
	for _, run := range r.Runs {
		if run.Error != "" {
			failed++
		}
		if run.Contender == nameHummerLimit {
			maxPeak = max(maxPeak, run.PeakRSSMiB)
		}
	}
	limit := 1024.0 // groupByLimit in MiB
	r.Goals = append(r.Goals,
		goal{Name: groupByPeakGoal, Value: maxPeak, Target: fmt.Sprintf("≤ %.0f MiB (the highest of its runs)", limit), Pass: maxPeak > 0 && maxPeak <= limit},
		goal{Name: groupByRightGoal, Value: float64(failed), Target: "0 failed", Pass: failed == 0 && len(r.Runs) > 0})
}

func (r *groupByReport) writeTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "contender\truns\twall s\tCPU s\tpeak RSS MiB\ttime vs DuckDB\t\n")
	for _, s := range r.Summary {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.1f\t%.2f\t\n", s.Contender, s.Runs, s.WallS, s.CPUS, s.PeakRSSMiB, s.VsDuckDB)
	}
	tw.Flush()
	for _, g := range r.Goals {
		fmt.Fprintf(w, "goal %s: %.1f (%s) %s\n", g.Name, g.Value, g.Target, passMark(g.Pass))
	}
}

// readGroupBy reads groupby.json; a missing file is a nil report.
func readGroupBy(path string) (*groupByReport, error) { return readSummarised[groupByReport](path) }

// readme is the README's section on the suite.
func (r *groupByReport) readme(resultsDir string, p func(string, ...any)) {
	p("## A GROUP BY larger than memory: Hummer and DuckDB spilling under a 1 GiB limit (issue 20)")
	p("")
	p("<!-- From %s, written by `make bench` (suite groupby of bench/cmd/wordcount; the section is bench/cmd/wordcount/groupby.go). -->", filepath.Join(resultsDir, groupByFile))
	p("")
	p("Run of %s: `%s` over %d distinct keys (a CSV file of %.0f MB, every key once, `k<n>,<digit>`), medians of %d runs per contender after one warm-up each, the contenders alternating; %.0f s in all. Each answer is checked against the count and sum computed while writing the file (%d groups, sum %d).",
		r.Date, fmt.Sprintf(groupBySQL, "kv"), r.Keys, float64(r.Bytes)/1e6, r.Reps, r.DurationS, r.WantGroups, r.WantSum)
	p("")
	p("| contender | runs | wall s | CPU s | peak RSS MiB | time vs DuckDB |")
	p("| --- | ---: | ---: | ---: | ---: | ---: |")
	for _, s := range r.Summary {
		if s.Runs == 0 {
			p("| %s | 0 | failed | | | |", s.Contender)
			continue
		}
		p("| %s | %d | %.2f | %.2f | %.1f | %.2f |", s.Contender, s.Runs, s.WallS, s.CPUS, s.PeakRSSMiB, s.VsDuckDB)
	}
	p("")
	p("| goal | target | value |")
	p("| --- | --- | ---: |")
	for _, g := range r.Goals {
		p("| %s | %s | %.1f %s |", g.Name, g.Target, g.Value, passMark(g.Pass))
	}
	p("")
	for _, c := range r.Contenders {
		p("- **%s**: %s.", c.Name, c.Notes)
	}
	p("")
	p("Peak RSS: Hummer's is the server's `VmHWM` after resetting it before the query (so it includes what the long-lived server holds); DuckDB's is its process's, through `bench/cmd/measure`. Wall time is at the client for Hummer and from start to exit for DuckDB.")
	p("")
}
