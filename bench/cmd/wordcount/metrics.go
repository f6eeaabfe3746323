package main

// The metrics suite (issue 26): what the per-task accounting behind EXPLAIN
// ANALYZE, the dashboard and /metrics costs. One `hummer serve` runs WordCount
// and Nexmark q0 with the accounting on and off (SET task_metrics, per job),
// interleaved, and the medians of their CPU and wall times are compared. One
// process for both, not two (one with --task-metrics=false): two servers of
// the same binary, both with metrics on, differed by 6 to 10% on a loaded
// machine, more than what is measured.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hummer-db/hummer/bench/counts"
)

const (
	suiteMetrics = "metrics"
	metricsFile  = "metrics_overhead.json"
	// metricsGoal is the issue's: under 2% on WordCount and on Nexmark q0.
	metricsGoal = 0.02
)

// metricsReport is the suite's results file.
type metricsReport struct {
	Date      string        `json:"date"`
	DurationS float64       `json:"duration_s"`
	Versions  versions      `json:"versions"`
	Machine   machine       `json:"machine"`
	Reps      int           `json:"reps"`
	Copies    int           `json:"wordcount_copies"`
	Events    int64         `json:"q0_events"`
	Workloads []metricsLoad `json:"workloads"`
	Runs      []metricsRun  `json:"runs"`
	// Derived by summarise.
	Summary []metricsSummary `json:"summary"`
	Goals   []goal           `json:"goals"`
}

// metricsLoad is one workload: its name and SQL.
type metricsLoad struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
}

// metricsRun is one run of a workload on one server.
type metricsRun struct {
	Workload string  `json:"workload"`
	Metrics  bool    `json:"metrics"` // the job ran with task_metrics on (the default)
	Rep      int     `json:"rep"`
	WallS    float64 `json:"wall_s"`
	CPUS     float64 `json:"cpu_s"`
	Rows     int64   `json:"rows,omitempty"`
	Error    string  `json:"error,omitempty"`
}

// metricsSummary is a workload's medians with metrics on and off, and the
// overheads (on / off - 1).
type metricsSummary struct {
	Workload     string  `json:"workload"`
	Runs         int     `json:"runs"` // per mode, without error
	OnCPUS       float64 `json:"on_cpu_s"`
	OffCPUS      float64 `json:"off_cpu_s"`
	OnWallS      float64 `json:"on_wall_s"`
	OffWallS     float64 `json:"off_wall_s"`
	CPUOverhead  float64 `json:"cpu_overhead"`
	WallOverhead float64 `json:"wall_overhead"`
	// PairedCPU is the median over repetitions of a repetition's on / off - 1:
	// the two runs of a pair are seconds apart, so the machine's slow spells
	// hit both more alike.
	PairedCPU float64 `json:"paired_cpu_overhead"`
	// Spread is the interquartile range of the CPU times with metrics off
	// over their median: how far apart runs of the same thing fall here.
	Spread float64 `json:"off_cpu_spread"`
}

const (
	metricsWordCount = "WordCount"
	metricsQ0        = "Nexmark q0"
)

// runMetrics runs the suite and writes results/metrics_overhead.json. It
// returns how many runs failed.
func runMetrics(ctx context.Context, cfg config, b bins, vers versions, repo, work string) (int, error) {
	start := time.Now()
	rep := &metricsReport{Date: start.UTC().Format(time.RFC3339), Versions: vers, Machine: readMachine(runtime.NumCPU()),
		Reps: cfg.metricsReps, Copies: cfg.metricsCopies, Events: cfg.metricsEvents}
	rep.Machine.LoadAvg = loadAvg()

	// WordCount's input and its reference counts.
	kjv, err := os.ReadFile(filepath.Join(repo, "data", "kjv.txt"))
	if err != nil {
		return 0, err
	}
	in := filepath.Join(work, fmt.Sprintf("metrics-kjv-x%d.txt", cfg.metricsCopies))
	if err := os.WriteFile(in, slices.Repeat(kjv, cfg.metricsCopies), 0o644); err != nil {
		return 0, err
	}
	ref, err := counts.Reference(in)
	if err != nil {
		return 0, err
	}
	want := counts.Of(ref)
	wcSQL := fmt.Sprintf(wordCountSQL, "kjv")

	// Nexmark q0, as the nexmark suite runs it: an INSERT INTO a blackhole
	// table over the bid stream, a continuous job.
	dir := filepath.Join(repo, "bench", "nexmark")
	ddl, err := os.ReadFile(filepath.Join(dir, "ddl.sql"))
	if err != nil {
		return 0, err
	}
	text, err := os.ReadFile(filepath.Join(dir, "q0.sql"))
	if err != nil {
		return 0, err
	}
	sink, insert, err := splitNexmarkQuery(string(text))
	if err != nil {
		return 0, fmt.Errorf("q0.sql: %w", err)
	}
	side, err := sideInputCSV(work)
	if err != nil {
		return 0, err
	}
	rep.Workloads = []metricsLoad{{metricsWordCount, wcSQL}, {metricsQ0, insert}}

	if err := os.RemoveAll(filepath.Join(work, "metrics-data")); err != nil {
		return 0, err
	}
	h, err := startHummer(ctx, b.hummer, work, "metrics", 0)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	for _, stmt := range []string{"SET checkpoint_interval = '180s'", sink,
		fmt.Sprintf("CREATE TABLE kjv (line TEXT) ENGINE=file CONNECTION='file://%s'", in)} {
		if err := h.exec(ctx, stmt); err != nil {
			return 0, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	tables := &nexmarkTables{h: h, ddl: string(ddl), eventRate: cfg.nexmarkEventRate, sideInput: side}
	if err := tables.declare(ctx, cfg.metricsEvents); err != nil {
		return 0, err
	}

	type contender struct {
		workload string
		on       bool
	}
	cs := []contender{{metricsWordCount, true}, {metricsWordCount, false}, {metricsQ0, true}, {metricsQ0, false}}
	run := func(c contender, r int) metricsRun {
		res := metricsRun{Workload: c.workload, Metrics: c.on, Rep: r}
		var m measurement
		err := h.exec(ctx, "SET task_metrics = "+map[bool]string{true: "on", false: "off"}[c.on])
		switch {
		case err != nil:
		case c.workload == metricsWordCount:
			var got counts.Digest
			if m, got, err = h.run(ctx, 1, wcSQL); err == nil && got != want {
				err = fmt.Errorf("wrong result: got %v, want %v", got, want)
			}
		default:
			m, res.Rows, err = h.runJob(ctx, 1, insert, cfg.nexmarkTimeout)
		}
		res.WallS, res.CPUS = round(m.Wall.Seconds(), 4), round(m.CPU.Seconds(), 3)
		if err != nil {
			res.Error = err.Error()
		}
		return res
	}
	// One warm-up of each (not recorded): the first query pays for lazily
	// built state.
	for _, c := range cs {
		if res := run(c, 0); res.Error != "" {
			return 0, fmt.Errorf("metrics warm-up of %s: %s", c.workload, res.Error)
		}
	}
	failed := 0
	for r := range cfg.metricsReps {
		for _, i := range runOrder(len(cs), r) {
			res := run(cs[i], r+1)
			mode := map[bool]string{true: "on", false: "off"}[res.Metrics]
			if res.Error != "" {
				failed++
				progress("metrics run %d/%d, %-10s metrics %-3s FAILED: %s", r+1, cfg.metricsReps, res.Workload, mode, res.Error)
			} else {
				progress("metrics run %d/%d, %-10s metrics %-3s %7.3f s wall %7.3f s CPU", r+1, cfg.metricsReps, res.Workload, mode, res.WallS, res.CPUS)
			}
			rep.Runs = append(rep.Runs, res)
		}
	}
	rep.DurationS = round(time.Since(start).Seconds(), 1)
	rep.summarise()
	if err := writeJSONFile(filepath.Join(cfg.results, metricsFile), rep); err != nil {
		return 0, err
	}
	rep.writeTable(os.Stdout)
	return failed, nil
}

func (r *metricsReport) summarise() {
	r.Summary, r.Goals = nil, nil
	for _, w := range r.Workloads {
		s := metricsSummary{Workload: w.Name}
		cpu, wall := map[bool][]float64{}, map[bool][]float64{}
		byRep := map[bool]map[int]float64{true: {}, false: {}}
		for _, run := range r.Runs {
			if run.Workload == w.Name && run.Error == "" {
				cpu[run.Metrics] = append(cpu[run.Metrics], run.CPUS)
				wall[run.Metrics] = append(wall[run.Metrics], run.WallS)
				byRep[run.Metrics][run.Rep] = run.CPUS
			}
		}
		s.Runs = min(len(cpu[true]), len(cpu[false]))
		pass := s.Runs > 0
		if pass {
			s.OnCPUS, s.OffCPUS = round(median(cpu[true]), 3), round(median(cpu[false]), 3)
			s.OnWallS, s.OffWallS = round(median(wall[true]), 4), round(median(wall[false]), 4)
			s.CPUOverhead = round(median(cpu[true])/median(cpu[false])-1, 4)
			s.WallOverhead = round(median(wall[true])/median(wall[false])-1, 4)
			off := slices.Sorted(slices.Values(cpu[false]))
			s.Spread = round((off[len(off)*3/4]-off[len(off)/4])/median(off), 4)
			var paired []float64
			for rep, on := range byRep[true] {
				if off, ok := byRep[false][rep]; ok && off > 0 {
					paired = append(paired, on/off-1)
				}
			}
			if len(paired) > 0 {
				s.PairedCPU = round(median(paired), 4)
			}
		}
		r.Summary = append(r.Summary, s)
		// The goal takes the paired figure: the machine's load drifts over
		// the minutes of a run, and the medians of all runs of either mode
		// moved from -6% to +9% from one run of the suite to the next, the pairs'
		// from -4% to +3%.
		r.Goals = append(r.Goals, goal{Name: "overhead of task metrics on " + w.Name + " (median over repetitions of CPU time on / off - 1)",
			Value: s.PairedCPU, Target: "< 2%", Pass: pass && s.PairedCPU < metricsGoal})
	}
}

func (r *metricsReport) writeTable(w io.Writer) {
	for _, s := range r.Summary {
		fmt.Fprintf(w, "%-10s CPU s on %.3f off %.3f (%+.1f%%, paired %+.1f%%), wall s on %.3f off %.3f (%+.1f%%), %d runs each\n",
			s.Workload, s.OnCPUS, s.OffCPUS, 100*s.CPUOverhead, 100*s.PairedCPU, s.OnWallS, s.OffWallS, 100*s.WallOverhead, s.Runs)
	}
	for _, g := range r.Goals {
		fmt.Fprintf(w, "goal %s: %+.2f%% (%s) %s\n", g.Name, 100*g.Value, g.Target, passMark(g.Pass))
	}
}

// readMetrics reads metrics_overhead.json; a missing file is a nil report.
func readMetrics(path string) (*metricsReport, error) { return readSummarised[metricsReport](path) }

// readme is the README's section on the suite.
func (r *metricsReport) readme(resultsDir string, p func(string, ...any)) {
	p("## The cost of task metrics (issue 26)")
	p("")
	p("<!-- From %s, written by `make bench-metrics` (suite metrics of bench/cmd/wordcount; the section is bench/cmd/wordcount/metrics.go). -->", filepath.Join(resultsDir, metricsFile))
	p("")
	p("Run of %s (Hummer `%s`), %.0f s in all, load average %.2f just before, on a machine shared with other work. One `hummer serve` runs each workload as a job with `SET task_metrics = on` (the default) and `off`, which leaves the job's tasks without their accounting of where their time goes (busy, idle and backpressured, a clock read or two per batch) and of each operator's rows and time in their fused chains (EXPLAIN ANALYZE, the dashboard's boxes, `/metrics`), as `--task-metrics=false` leaves every job of a process; both keep the rows and batches in and out that SHOW PROCESSLIST shows, which are the same counters either way. %d repetitions of the four runs after one warm-up each, in the orders of a Williams design; CPU time is the server's utime + stime from `/proc/PID/stat` across the run (in clock ticks of 10 ms), wall time is the client's. One process for both modes, not two: two servers of the same binary, both with metrics on, differed by 6 to 10%% in CPU time here, more than the goal.",
		r.Date, r.Versions.Hummer, r.DurationS, r.Machine.LoadAvg, r.Reps)
	p("")
	p("| goal | target | value |")
	p("| --- | --- | ---: |")
	for _, g := range r.Goals {
		p("| %s | %s | %+.2f%% %s |", g.Name, g.Target, 100*g.Value, passMark(g.Pass))
	}
	p("")
	p("| workload | median CPU s, on | off | overhead | paired | spread | median wall s, on | off | overhead | runs |")
	p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, s := range r.Summary {
		p("| %s | %.3f | %.3f | %+.1f%% | %+.1f%% | %.0f%% | %.3f | %.3f | %+.1f%% | %d |", s.Workload, s.OnCPUS, s.OffCPUS, 100*s.CPUOverhead, 100*s.PairedCPU,
			100*s.Spread, s.OnWallS, s.OffWallS, 100*s.WallOverhead, s.Runs)
	}
	p("")
	p("*paired* is the median over repetitions of one repetition's on / off - 1, its two runs seconds apart, which the goal takes: the machine's load drifts over the minutes of a run, and the medians of all runs of either mode (*overhead*) moved from -6%% to +9%% from one run of the suite to the next, the paired figures from -4%% to +3%%; *spread* is the interquartile range of the CPU times with metrics off over their median, how far apart runs of the same job fall on this machine. An overhead well inside the spread is not told apart from none by these runs: the accounting's own cost is a few clock reads and atomic adds per batch and operator (`BenchmarkTimeSplit`: about 90 ns a message), against tens of microseconds of work per batch, and a CPU profile of 40 runs of WordCount in one process (`go test -bench 'WordCount/parallelism=1' -cpuprofile` in cmd/hummer, 706 samples) has none in it. The workloads, at parallelism 1:")
	p("")
	for _, w := range r.Workloads {
		what := fmt.Sprintf("%d copies of kjv.txt in an `ENGINE=file` table, every result checked against `bench/counts`", r.Copies)
		if w.Name == metricsQ0 {
			what = fmt.Sprintf("bench/nexmark/q0.sql into a blackhole table over the bid stream of %d events at rate=0, a continuous job timed until SHOW PROCESSLIST says it finished", r.Events)
		}
		p("- **%s** (%s):", w.Name, what)
		p("  ```sql")
		p("  %s", strings.ReplaceAll(w.SQL, "\n", " "))
		p("  ```")
	}
	p("")
	var failed []string
	for _, run := range r.Runs {
		if run.Error != "" {
			failed = append(failed, fmt.Sprintf("%s (metrics %v, rep %d): %s", run.Workload, run.Metrics, run.Rep, run.Error))
		}
	}
	if len(failed) > 0 {
		p("Failed runs: %s.", strings.Join(failed, "; "))
		p("")
	}
}
