// Command wordcount is the WordCount benchmark of issues 3 and 4: Hummer through its real user
// path (`hummer serve` and a PostgreSQL client) against DuckDB, mawk and a hand-written
// Go counter, interleaved in one run on 10 and 50 copies of kjv.txt; then, at
// parallelism 3, a cluster of one JobManager and three TaskManagers on loopback
// against local mode (`hummer serve --slots 3`). It checks every result against a
// reference, writes results/ (JSON and a PNG plot) and regenerates README.md from them.
//
// Run it from bench/ (`make bench` does): go run ./cmd/wordcount -repo ..
// With -render FILE it only redraws the plot and README from a results file.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hummer-db/hummer/bench/counts"
	"github.com/hummer-db/hummer/bench/latency"
	benchrepo "github.com/hummer-db/hummer/bench/repo"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.repo, "repo", "..", "the Hummer repository (holds cmd/hummer and data/kjv.txt)")
	flag.StringVar(&cfg.hummer, "hummer", "", "a hummer binary to use instead of building one from -repo")
	copies := flag.String("copies", "10,50", "input sizes, in copies of kjv.txt")
	flag.IntVar(&cfg.reps, "reps", 8, "interleaved runs of every contender per input; medians are reported (8: one cycle of the run orders of the 8 contenders)")
	flag.StringVar(&cfg.results, "results", "results", "directory for the JSON results and the plot")
	flag.StringVar(&cfg.readme, "readme", "README.md", "the README to regenerate (empty: none)")
	flag.StringVar(&cfg.work, "work", "", "scratch directory for inputs and binaries (default: a fresh temporary one, removed after)")
	suites := flag.String("suites", suiteEngines+","+suiteDistributed+","+suiteGroupBy, "which suites to run: "+suiteEngines+" (Hummer against DuckDB, mawk and a Go counter), "+suiteDistributed+" (3 TaskManagers against local mode), "+suiteGroupBy+" (a GROUP BY larger than memory, Hummer against DuckDB; results in "+groupByFile+"), "+suiteTPCH+" (TPC-H's 22 queries, Hummer against DuckDB and PostgreSQL; results in "+tpchFile+"; not run by default, make bench-tpch runs it), "+suiteTables+" (\\copy and INSERT into Hummer's own tables against PostgreSQL; results in "+tablesFile+"; make bench-tables runs it), "+suiteNexmark+" (the Nexmark queries at parallelism 1 and 2 against a Go program; results in "+nexmarkFile+"; make bench-nexmark runs it), "+suiteState+" (the disk state backend: a GROUP BY over many keys, disk against memory, incremental checkpoints; results in "+stateFile+"; make bench-state runs it), "+suiteMetrics+" (WordCount and Nexmark q0 with task metrics on and off; results in "+metricsFile+"; make bench-metrics runs it)")
	flag.IntVar(&cfg.groupByKeys, "groupby-keys", 10_000_000, "distinct keys of the groupby suite's input")
	flag.IntVar(&cfg.groupByReps, "groupby-reps", 3, "runs per contender of the groupby suite, after one warm-up")
	flag.Float64Var(&cfg.tpchSF, "tpch-sf", 1, "TPC-H scale factor of the tpch suite")
	flag.IntVar(&cfg.tpchReps, "tpch-reps", 3, "runs per contender and query of the tpch suite, after one warm-up")
	flag.DurationVar(&cfg.tpchTimeout, "tpch-timeout", 5*time.Minute, "time allowed per query and contender in the tpch suite")
	flag.IntVar(&cfg.tablesRows, "tables-rows", 10_000_000, "rows of the tables suite's \\copy")
	flag.IntVar(&cfg.tablesReps, "tables-reps", 3, "\\copy runs per contender of the tables suite")
	flag.DurationVar(&cfg.tablesInsert, "tables-insert", 10*time.Second, "how long pgbench inserts, per contender and session count, in the tables suite")
	nxEvents := flag.String("nexmark-events", nexmarkDefaultEvents, "events (of all three kinds) per run of the nexmark suite: QUERY=N,... (sized for runs of a few seconds here), or one N for every query")
	flag.Float64Var(&cfg.nexmarkEventRate, "nexmark-event-rate", 10_000_000, "events per second of event time in the nexmark suite's tables (the Flink suite's 10M/s)")
	flag.IntVar(&cfg.nexmarkReps, "nexmark-reps", 3, "interleaved runs per contender, query and parallelism of the nexmark suite")
	flag.DurationVar(&cfg.nexmarkTimeout, "nexmark-timeout", 5*time.Minute, "time allowed per job of the nexmark suite")
	nxQueries := flag.String("nexmark-queries", strings.Join(nexmarkQueries, ","), "the nexmark suite's queries (files of bench/nexmark)")
	flag.IntVar(&cfg.stateKeys, "state-keys", 50_000_000, "distinct keys of the state suite's GROUP BY on the disk backend")
	flag.Int64Var(&cfg.stateMemory, "state-memory", 256<<20, "bytes of state memory in the state suite (--state-memory of one slot)")
	flag.IntVar(&cfg.stateFitKeys, "state-fit-keys", 1<<19, "keys of the state suite's disk-against-memory runs, on a state that fits")
	flag.IntVar(&cfg.stateReps, "state-reps", 5, "runs per backend of the state suite's disk-against-memory comparison")
	flag.IntVar(&cfg.stateWinKeys, "state-window-keys", 1<<17, "keys per window of the state suite's window aggregation, disk against memory")
	flag.Int64Var(&cfg.stateWinMemory, "state-window-memory", 32<<20, "bytes of state memory of the state suite's window aggregation on disk whose windows outgrow its cache")
	flag.Int64Var(&cfg.stateCkptBytes, "state-checkpoint-bytes", 2_000_000_000, "bytes of keys and values of the state suite's checkpointed state")
	flag.IntVar(&cfg.metricsReps, "metrics-reps", 20, "interleaved runs per workload and mode of the metrics suite")
	flag.IntVar(&cfg.metricsCopies, "metrics-copies", 30, "copies of kjv.txt in the metrics suite's WordCount")
	flag.Int64Var(&cfg.metricsEvents, "metrics-events", 4_000_000, "events of the metrics suite's Nexmark q0")
	flag.StringVar(&cfg.pgBin, "pg-bin", "/usr/lib/postgresql/15/bin", "where PostgreSQL's initdb and postgres are, for the tpch suite")
	render := flag.String("render", "", "only redraw the plot and README from this results JSON")
	flag.Parse()
	var err error
	if *render != "" {
		err = rerender(*render, cfg)
	} else {
		for f := range strings.SplitSeq(*copies, ",") {
			n, perr := strconv.Atoi(strings.TrimSpace(f))
			if perr != nil || n < 1 {
				fmt.Fprintf(os.Stderr, "wordcount: -copies: %q is not a positive number\n", f)
				os.Exit(2)
			}
			cfg.copies = append(cfg.copies, n)
		}
		var perr error
		if cfg.nexmarkEvents, perr = parseNexmarkEvents(*nxEvents); perr != nil {
			fmt.Fprintf(os.Stderr, "wordcount: -nexmark-events: %v\n", perr)
			os.Exit(2)
		}
		for q := range strings.SplitSeq(*nxQueries, ",") {
			if q = strings.TrimSpace(q); q != "" {
				cfg.nexmarkQueries = append(cfg.nexmarkQueries, q)
			}
		}
		cfg.suites = map[string]bool{}
		for f := range strings.SplitSeq(*suites, ",") {
			f = strings.TrimSpace(f)
			if f != suiteEngines && f != suiteDistributed && f != suiteGroupBy && f != suiteTPCH && f != suiteTables && f != suiteNexmark && f != suiteState && f != suiteMetrics {
				fmt.Fprintf(os.Stderr, "wordcount: -suites: unknown suite %q\n", f)
				os.Exit(2)
			}
			cfg.suites[f] = true
		}
		err = run(context.Background(), cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wordcount:", err)
		os.Exit(1)
	}
}

type config struct {
	repo, hummer, results, readme, work string
	copies                              []int
	reps                                int
	suites                              map[string]bool
	groupByKeys, groupByReps            int
	tpchSF                              float64
	tpchReps                            int
	tpchTimeout                         time.Duration
	tablesRows, tablesReps              int
	tablesInsert                        time.Duration
	pgBin                               string
	nexmarkEvents                       map[string]int64 // per query; "" for any other
	nexmarkEventRate                    float64
	nexmarkReps                         int
	nexmarkTimeout                      time.Duration
	nexmarkQueries                      []string
	stateKeys, stateFitKeys, stateReps  int
	stateMemory, stateCkptBytes         int64
	metricsReps, metricsCopies          int
	metricsEvents                       int64
	stateWinKeys                        int
	stateWinMemory                      int64
}

// The suites of the benchmark, for -suites.
const (
	suiteEngines     = "engines"     // issue 3: Hummer against DuckDB, mawk and the Go counter
	suiteDistributed = "distributed" // issue 4: three TaskManagers over loopback against local mode
	suiteGroupBy     = "groupby"     // issue 20: a GROUP BY larger than memory, spilling
	suiteTPCH        = "tpch"        // issue 21: TPC-H's 22 queries against DuckDB and PostgreSQL
	// suiteTables is in tables.go: issue 22, \copy and INSERT into Hummer's own tables against PostgreSQL.
)

func run(ctx context.Context, cfg config) error {
	start := time.Now()
	cpus := runtime.NumCPU()
	rep := &report{
		Date:    start.UTC().Format(time.RFC3339),
		Machine: readMachine(cpus),
		Reps:    cfg.reps,
	}
	rep.Machine.LoadAvg = loadAvg()
	work := cfg.work
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "hummer-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	repo, err := filepath.Abs(cfg.repo)
	if err != nil {
		return err
	}

	// Binaries: the contenders run as compiled programs, never under `go run`.
	hummerBin := cfg.hummer
	if hummerBin == "" {
		hummerBin = filepath.Join(work, "hummer")
		if err := goBuild(repo, hummerBin, "./cmd/hummer"); err != nil {
			return err
		}
	}
	duckwc, gowc, measure := filepath.Join(work, "duckwc"), filepath.Join(work, "gowc"), filepath.Join(work, "measure")
	duckgroup := filepath.Join(work, "duckgroup")
	for bin, pkg := range map[string]string{duckwc: "./cmd/duckwc", gowc: "./cmd/gowc", measure: "./cmd/measure", duckgroup: "./cmd/duckgroup"} {
		if err := goBuild(".", bin, pkg); err != nil {
			return err
		}
	}
	if rep.Versions, err = readVersions(repo, duckwc); err != nil {
		return err
	}
	duckSQL, err := output(duckwc, "-print", "%s")
	if err != nil {
		return err
	}

	// Inputs, their reference counts, and a first read so that every contender finds
	// them in the page cache.
	kjv, err := os.ReadFile(filepath.Join(repo, "data", "kjv.txt"))
	if err != nil {
		return err
	}
	wordCount := cfg.suites[suiteEngines] || cfg.suites[suiteDistributed]
	var inputs []*input
	for _, n := range cfg.copies {
		if !wordCount {
			break
		}
		in := &input{Copies: n, Path: filepath.Join(work, fmt.Sprintf("kjv-x%d.txt", n)), Table: fmt.Sprintf("kjv_x%d", n)}
		in.Bytes = int64(n * len(kjv))
		if err := os.WriteFile(in.Path, slices.Repeat(kjv, n), 0o644); err != nil {
			return err
		}
		progress("reference counts of %d x kjv.txt (%.0f MB)", n, float64(in.Bytes)/1e6)
		if in.Ref, err = counts.Reference(in.Path); err != nil {
			return err
		}
		inputs = append(inputs, in)
		rep.Inputs = append(rep.Inputs, inputReport{Copies: n, Bytes: in.Bytes, Reference: counts.Of(in.Ref)})
	}

	failed := 0
	b := bins{hummer: hummerBin, measure: measure, duckwc: duckwc, gowc: gowc, duckgroup: duckgroup, duckSQL: strings.TrimSpace(duckSQL)}
	if cfg.suites[suiteEngines] {
		n, err := runEngines(ctx, cfg, rep, b, work, inputs)
		if err != nil {
			return err
		}
		failed += n
	}
	if cfg.suites[suiteDistributed] {
		n, err := runDistributed(ctx, cfg, rep, hummerBin, work, inputs)
		if err != nil {
			return err
		}
		failed += n
	}
	if cfg.suites[suiteGroupBy] {
		n, err := runGroupBy(ctx, cfg, b, rep.Versions, work)
		if err != nil {
			return err
		}
		failed += n
	}
	if cfg.suites[suiteTPCH] {
		n, err := runTPCH(ctx, cfg, b, rep.Versions, repo, work)
		if err != nil {
			return err
		}
		failed += n
	}
	if cfg.suites[suiteTables] {
		n, err := runTables(ctx, cfg, b, rep.Versions, work)
		if err != nil {
			return err
		}
		failed += n
	}
	if cfg.suites[suiteNexmark] {
		n, err := runNexmark(ctx, cfg, b, rep.Versions, repo, work)
		if err != nil {
			return err
		}
		failed += n
	}
	if cfg.suites[suiteState] {
		n, err := runState(ctx, cfg, b, rep.Versions, repo, work)
		if err != nil {
			return err
		}
		failed += n
	}
	if cfg.suites[suiteMetrics] {
		n, err := runMetrics(ctx, cfg, b, rep.Versions, repo, work)
		if err != nil {
			return err
		}
		failed += n
	}
	if !wordCount {
		// The README is redrawn from the WordCount results already there.
		if err := rerender(filepath.Join(cfg.results, "latest.json"), cfg); err != nil {
			return err
		}
		if failed > 0 {
			return fmt.Errorf("%d runs failed (see the suites' files in %s)", failed, cfg.results)
		}
		return nil
	}
	rep.DurationS = round(time.Since(start).Seconds(), 1)
	rep.summarise()

	if err := os.MkdirAll(cfg.results, 0o755); err != nil {
		return err
	}
	// One file per suite: earlier runs are in git history.
	if err := rep.writeJSON(filepath.Join(cfg.results, "latest.json")); err != nil {
		return err
	}
	if err := publish(rep, cfg); err != nil {
		return err
	}
	rep.writeTable(os.Stdout)
	if failed > 0 {
		return fmt.Errorf("%d runs failed (see the table and %s)", failed, filepath.Join(cfg.results, "latest.json"))
	}
	return nil
}

// bins are the compiled programs the benchmark runs.
type bins struct {
	hummer, measure, duckwc, gowc, duckgroup string
	duckSQL                                  string // duckwc's query, %s for the input
}

// runEngines is issue 3's benchmark: Hummer against DuckDB, mawk and the Go counter.
// It appends its runs to rep and returns how many failed.
func runEngines(ctx context.Context, cfg config, rep *report, b bins, work string, inputs []*input) (int, error) {
	cpus := rep.Machine.CPUs
	h, err := startHummer(ctx, b.hummer, work, "hummer", 0)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	for _, in := range inputs {
		if err := h.createTable(ctx, in.Table, in.Path); err != nil {
			return 0, err
		}
	}
	cs := contenders(h, b.measure, b.duckwc, b.duckSQL, b.gowc, cpus)
	floor, _, err := runChild(ctx, b.measure, filepath.Join(work, "measure.json"), "true")
	if err != nil {
		return 0, err
	}
	rep.Machine.RSSFloorMiB = mib(floor.PeakRSS)
	for _, c := range cs {
		rep.Contenders = append(rep.Contenders, contenderReport{Name: c.Name, Notes: c.Notes, Query: c.Query})
	}

	pr := newProber()
	sc := &scaling{}
	sc.Memory[0], sc.Cache[0], sc.Arithmetic[0] = pr.probe()
	others, err := startOtherWork(h.pids())
	if err != nil {
		return 0, err
	}
	failed := 0
	for _, in := range inputs {
		// Hummer's one warm-up: its first query pays for lazily built state (and
		// the page cache is warm for everyone).
		if _, _, err := h.run(ctx, cpus, fmt.Sprintf(wordCountSQL, in.Table)); err != nil {
			return 0, fmt.Errorf("hummer warm-up on %d copies: %w", in.Copies, err)
		}
		wants := make([]counts.Digest, len(cs))
		for i, c := range cs {
			wants[i] = counts.Of(c.Want(in.Ref))
		}
		for r := range cfg.reps {
			// Interleaved, in the orders of a Williams design: no contender
			// always runs right after the same other one.
			for _, i := range runOrder(len(cs), r) {
				c := cs[i]
				m, got, err := c.Run(ctx, in)
				if err == nil && got != wants[i] {
					err = fmt.Errorf("wrong result: got %v, want %v", got, wants[i])
				}
				run := runReport{Contender: c.Name, Copies: in.Copies, Rep: r + 1,
					WallS: m.Wall.Seconds(), CPUS: m.CPU.Seconds(), PeakRSSMiB: mib(m.PeakRSS), Result: got}
				if m.RSSBefore != 0 {
					run.RSSBeforeMiB = mib(m.RSSBefore)
				}
				if err != nil {
					run.Error = err.Error()
					failed++
					progress("%d x, run %d/%d, %-22s FAILED: %v", in.Copies, r+1, cfg.reps, c.Name, err)
				} else {
					progress("%d x, run %d/%d, %-22s %6.3f s wall %6.3f s CPU %7.1f MiB peak RSS",
						in.Copies, r+1, cfg.reps, c.Name, m.Wall.Seconds(), m.CPU.Seconds(), mib(m.PeakRSS))
				}
				rep.Runs = append(rep.Runs, run)
			}
		}
	}
	runs, other, steal, err := others.done()
	if err != nil {
		return 0, err
	}
	sc.Memory[1], sc.Cache[1], sc.Arithmetic[1] = pr.probe()
	rep.Machine.Scaling = sc
	rep.Machine.RunsS, rep.Machine.OtherCPUS, rep.Machine.StealS = round(runs.Seconds(), 1), round(other.Seconds(), 1), round(steal.Seconds(), 1)
	return failed, nil
}

// publish draws the plot and regenerates the README from rep and, if there is
// one, the latency benchmark's results in the same directory.
func publish(rep *report, cfg config) error {
	if len(rep.Contenders) > 0 {
		if err := plotThroughput(rep, filepath.Join(cfg.results, plotFile)); err != nil {
			return err
		}
	}
	if cfg.readme == "" {
		return nil
	}
	lat, err := latency.ReadReport(filepath.Join(cfg.results, latency.ResultsFile))
	if err != nil {
		return err
	}
	return os.WriteFile(cfg.readme, []byte(rep.readme(cfg.results, lat)), 0o644)
}

func rerender(path string, cfg config) error {
	rep, err := readReport(path)
	if err != nil {
		return err
	}
	rep.summarise() // from the runs, so changes to the summary apply too
	if err := publish(rep, cfg); err != nil {
		return err
	}
	// The TPC-H plot is redrawn too, from its own results.
	if tp, err := readTPCH(filepath.Join(cfg.results, tpchFile)); err != nil {
		return err
	} else if tp != nil {
		if err := plotTPCH(tp, filepath.Join(cfg.results, tpchPlot)); err != nil {
			return err
		}
	}
	// And the Nexmark plot, from its.
	if nx, err := readNexmark(filepath.Join(cfg.results, nexmarkFile)); err != nil {
		return err
	} else if nx != nil {
		if err := plotNexmark(nx, filepath.Join(cfg.results, nexmarkPlot)); err != nil {
			return err
		}
	}
	rep.writeTable(os.Stdout)
	return nil
}

func goBuild(dir, out, pkg string) error {
	progress("go build -o %s %s (in %s)", out, pkg, dir)
	return benchrepo.Build(dir, out, pkg)
}

func output(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}

func readVersions(repo, duckwc string) (versions, error) {
	var v versions
	v.Go = runtime.Version()
	d, err := output(duckwc, "-version")
	if err != nil {
		return v, err
	}
	v.DuckDB = strings.TrimSpace(d)
	m, err := exec.Command("mawk", "-W", "version").CombinedOutput()
	if err != nil {
		return v, fmt.Errorf("mawk -W version: %w (install it: apt-get install -y mawk)", err)
	}
	v.Mawk, _, _ = strings.Cut(string(m), "\n")
	v.Hummer = benchrepo.Version(repo)
	return v, nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func mib(b int64) float64 { return round(float64(b)/(1<<20), 1) }

// orderCycle is how many repetitions runOrder takes to balance n contenders.
func orderCycle(n int) int {
	if n%2 == 1 {
		return 2 * n
	}
	return n
}

// runOrder returns the order in which n contenders run in repetition r: the
// rows of a Williams design. A run leaves things behind for the next one (cold
// caches, a process exiting, a server that idled while others ran), so a
// contender should not always follow the same other one, as it does when one
// order is rotated. Over n repetitions (2n when n is odd, the second n mirrored)
// every contender runs first equally often and right after every other one
// equally often: once each for n even, twice for n odd.
func runOrder(n, r int) []int {
	// Row 0 is 0, 1, n-1, 2, n-2, ...; row r adds r to each (mod n).
	order := make([]int, n)
	lo, hi := 1, n-1
	for j := 1; j < n; j++ {
		if j%2 == 1 {
			order[j], lo = lo, lo+1
		} else {
			order[j], hi = hi, hi-1
		}
	}
	for j := range order {
		order[j] = (order[j] + r) % n
	}
	if n%2 == 1 && (r/n)%2 == 1 {
		slices.Reverse(order)
	}
	return order
}
