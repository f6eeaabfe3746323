package main

// The nexmark suite's summary, goals, table, README section and plot, and the
// published figures it compares with.

import (
	"fmt"
	"io"
	"path"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// nexmarkFigure is one published per-core throughput of another system.
type nexmarkFigure struct {
	System  string  `json:"system"`
	Query   string  `json:"query"`
	PerCore float64 `json:"events_per_s_per_core"` // 0: not published
	Source  string  `json:"source"`
}

// The systems compared with, and where their figures come from.
const (
	sysFlink      = "Flink"
	sysRisingWave = "RisingWave"
	sysArroyo     = "Arroyo"
)

var nexmarkSystems = []string{sysFlink, sysRisingWave, sysArroyo}

var nexmarkSources = map[string]string{
	sysFlink:      "the nexmark/nexmark project's README (github.com/nexmark/nexmark, README.md, \"Benchmark Results\": Flink 1.13, 8 TaskManagers of 1 slot on 3 workers of 8 cores, 100M events from the datagen source at 10M/s, checkpoints every 3 minutes, RocksDB; Throughput/Cores, cores being the CPU its collector measured)",
	sysRisingWave: "RisingWave's documentation, \"Stream processing benchmarks: Nexmark results\" (https://docs.risingwave.com/get-started/rw-benchmarks-stream-processing; risingwavelabs/risingwave-docs, get-started/rw-benchmarks-stream-processing.mdx: nightly-20230309, one 8-vCPU node, sources from Kafka, blackhole sinks; Throughput/core; q11 is NA there)",
	sysArroyo:     "n/a: not published: Arroyo's blog compares a sliding-window query with Flink (https://www.arroyo.dev/blog/how-arroyo-beats-flink-at-sliding-windows) but the text found gives no per-core Nexmark figure for these queries",
}

// nexmarkPublished are the per-core figures, in events/s, as published.
var nexmarkPublished = map[string]map[string]float64{
	sysFlink: {"q0": 155_020, "q1": 157_940, "q2": 175_210, "q3": 152_120, "q4": 34_330, "q5": 22_140, "q7": 12_330, "q8": 146_140,
		"q9": 14_240, "q10": 57_810, "q11": 39_700, "q12": 75_670, "q13": 130_730, "q14": 161_230, "q15": 72_420, "q16": 18_650,
		"q17": 116_800, "q18": 53_700, "q19": 44_040, "q20": 18_980, "q21": 98_490, "q22": 129_960},
	// q11, q12, q13 and q19 are NA there.
	sysRisingWave: {"q0": 118_410, "q1": 119_370, "q2": 127_360, "q3": 97_358, "q4": 13_923, "q5": 5_224.9, "q7": 20_348, "q8": 60_732,
		"q9": 8_220.8, "q10": 106_150, "q14": 45_371, "q15": 78_525, "q16": 8_056.5, "q17": 17_314, "q18": 9_845.5, "q20": 12_726,
		"q21": 89_377, "q22": 110_500},
}

// nexmarkProfiles is, per query, where its CPU went in a CPU profile of the
// server (HUMMER_CPUPROFILE, one run at parallelism 1 on 2026-12-06; q9, q19
// and q20 again later that day, on a busy machine); the
// README gives it for the queries short of a goal. storeFinal is the state
// each task stores as it ends (exec/task/checkpoint.go), here once, when the
// input ends: every key of a join's or Top-N's state as JSON (the Arrow IPC
// bytes in base64), written through gocloud's blob.WriteAll, which hashes it
// with MD5 three times (WriteAll, the Writer, fileblob's attributes file).
var nexmarkProfiles = map[string]string{
	"q3":  "a stream_join of people and auctions; not profiled (it passes when the machine is quiet)",
	"q4":  "the stream_join of auctions and bids keeping both sides' rows: its ProcessBatch 43% (inserting into its keyed state, KeyTable.InsertRows, 28%); the final state stored when the input ends 37% (MD5 17%, JSON 8%); the generator 17%",
	"q5":  "the HOP window copies each bid into 5 windows (series 60%) before counting them per auction and window (window_agg 44%, its keyed state 29%); the generator's own work is a tenth",
	"q7":  "the interval_join of the bids with each window's highest price (stream_join's code with interval bounds) keeps every bid by price until the watermark passes it, and a run covers 0.2 s of event time, so it keeps them all: its ProcessBatch 53% (keyed-state inserts 35%), the generator 37%",
	"q8":  "window_join of people and auctions; not profiled",
	"q9":  "(profiled again after the final state left out the join's and the Top-N's rows, one run of 1M events) keyed-state inserts 46%: the Top-N interning each candidate winner's whole row 26%, the stream_join indexing both sides 22%; the Top-N's compaction of rows that left the top 16%",
	"q11": "session windows per bidder; not profiled",
	"q13": "the lookup join; not profiled",
	"q18": "the Top-N per bidder and auction 38% (keyed-state inserts 32%); the final state stored when the input ends 28% (MD5 11%)",
	"q19": "(profiled again after the final state left out the Top-N's rows, one run of 1M events) the Top-N per auction 49% (interning each row that may enter a top, keyed-state inserts, 36%); the generator 30%; the Top-N's flush 17%",
	"q20": "(profiled again after the final state left out the join's rows, one run of 1M events) the stream_join keeping every bid and auction 63% (keyed-state inserts 49%); the generator 33%",
}

// nexmarkTarget is issues 24 and 25's per-core target for a query, in
// events/s; 0: none (the issues set none for q10, q12, q14-q17, q21, q22).
func nexmarkTarget(q string) float64 {
	switch q {
	case "q0", "q1", "q2":
		return 1_000_000
	case "q5", "q7", "q8", "q11":
		return 300_000
	case "q3", "q4", "q9", "q13", "q18", "q19", "q20":
		return 200_000
	}
	return 0
}

func readNexmark(path string) (*nexmarkReport, error) { return readSummarised[nexmarkReport](path) }

func (r *nexmarkReport) queryNames() []string {
	var qs []string
	for _, q := range r.Queries {
		qs = append(qs, q.Name)
	}
	return qs
}

func (r *nexmarkReport) summarise() {
	cpus := r.Machine.CPUs
	if cpus == 0 {
		cpus = runtime.NumCPU()
	}
	r.Summary, r.Goals, r.Published, r.Checks = nil, nil, nil, map[string]string{}
	for _, q := range r.queryNames() {
		for _, c := range []string{nameNxHummer, nameNxGo} {
			for _, p := range []int{1, 2} {
				var walls, cpu, rss, before []float64
				row := nexmarkRow{Query: q, Contender: c, Parallelism: p}
				seen := false
				for _, run := range r.Runs {
					if run.Query != q || run.Contender != c || run.Parallelism != p {
						continue
					}
					seen = true
					if run.Error != "" {
						continue
					}
					walls, cpu, rss = append(walls, run.WallS), append(cpu, run.CPUS), append(rss, run.PeakRSSMiB)
					if run.RSSBeforeMiB > 0 {
						before = append(before, run.RSSBeforeMiB)
					}
					row.Events, row.Rows = run.Events, run.Rows
				}
				if !seen {
					continue
				}
				row.Runs = len(walls)
				if row.Runs > 0 {
					row.WallS, row.CPUS, row.PeakRSSMiB = round(median(walls), 4), round(median(cpu), 3), round(median(rss), 1)
					if len(before) > 0 {
						row.RSSBeforeMiB = round(median(before), 1)
					}
					row.EventsPerS = round(float64(row.Events)/row.WallS, 0)
					row.PerCore = round(row.EventsPerS/float64(min(p, cpus)), 0)
					if row.CPUS > 0 {
						row.PerCPUS = round(float64(row.Events)/row.CPUS, 0)
					}
				}
				r.Summary = append(r.Summary, row)
			}
		}
		r.check(q)
		for _, sys := range nexmarkSystems {
			r.Published = append(r.Published, nexmarkFigure{System: sys, Query: q, PerCore: nexmarkPublished[sys][q], Source: nexmarkSources[sys]})
		}
		h1, h := r.nxRow(q, nameNxHummer, 1), r.nxRow(q, nameNxHummer, 2)
		if target := nexmarkTarget(q); target > 0 {
			for _, g := range []nexmarkGoal{
				{Query: q, Name: "Hummer p=2 events/s per core", Value: h.PerCore, Pass: h.Runs > 0 && h.PerCore >= target, Note: failedNote(h)},
				// At parallelism 1 the tasks of a plan's several vertices still run
				// at once, on more than one core: count the CPU it used.
				{Query: q, Name: "Hummer p=1 events per CPU s", Value: h1.PerCPUS, Pass: h1.Runs > 0 && h1.PerCPUS >= target, Note: failedNote(h1)},
			} {
				g.Target = fmt.Sprintf("≥ %s", kilo(target))
				r.Goals = append(r.Goals, g)
			}
		}
		best, by := 0.0, ""
		for _, sys := range nexmarkSystems {
			if v := nexmarkPublished[sys][q]; v > best {
				best, by = v, sys
			}
		}
		if best > 0 {
			v := 0.0
			if h.Runs > 0 {
				v = round(h.PerCore/best, 2)
			}
			r.Goals = append(r.Goals, nexmarkGoal{Query: q, Name: "Hummer p=2 per core / best published per core", Target: "> 1", Value: v, Pass: v > 1,
				Note: fmt.Sprintf("best published: %s, %s", by, kilo(best))})
		} else {
			r.Goals = append(r.Goals, nexmarkGoal{Query: q, Name: "Hummer p=2 per core / best published per core", Target: "> 1", Note: "no published figure"})
		}
	}
}

func failedNote(s nexmarkRow) string {
	if s.Runs == 0 {
		return "failed"
	}
	return ""
}

// check notes where runs of a query disagree on the rows they wrote: every
// Hummer run over the same events, and the Go program's q0 and q5, must agree
// (but for nexmarkVarying's).
func (r *nexmarkReport) check(q string) {
	if nexmarkVarying[q] {
		return
	}
	rows := map[int64][]string{}
	for _, run := range r.Runs {
		if run.Query == q && run.Error == "" {
			rows[run.Rows] = append(rows[run.Rows], fmt.Sprintf("%s p=%d run %d", run.Contender, run.Parallelism, run.Rep))
		}
	}
	if len(rows) <= 1 {
		return
	}
	var parts []string
	for n, who := range rows {
		parts = append(parts, fmt.Sprintf("%d rows (%s)", n, strings.Join(who, ", ")))
	}
	slices.Sort(parts)
	r.Checks[q] = strings.Join(parts, "; ")
}

func (r *nexmarkReport) nxRow(q, contender string, p int) nexmarkRow {
	for _, s := range r.Summary {
		if s.Query == q && s.Contender == contender && s.Parallelism == p {
			return s
		}
	}
	return nexmarkRow{}
}

// kilo formats events/s in thousands (k) or millions (M).
func kilo(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f k", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// cell is a row's figure, or "failed" or nothing.
func (s nexmarkRow) cell(v float64) string {
	switch {
	case s.Parallelism == 0:
		return ""
	case s.Runs == 0:
		return "failed"
	}
	return kilo(v)
}

func (r *nexmarkReport) writeTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "query\tcontender\tp\tevents\twall s\tCPU s\tevents/s\tper core\tper CPU s\trows\t")
	for _, s := range r.Summary {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.3f\t%.2f\t%s\t%s\t%s\t%d\t\n", s.Query, s.Contender, s.Parallelism, s.Events,
			s.WallS, s.CPUS, s.cell(s.EventsPerS), s.cell(s.PerCore), s.cell(s.PerCPUS), s.Rows)
	}
	tw.Flush()
	for _, g := range r.Goals {
		fmt.Fprintf(w, "goal %s %s: %.2f (%s) %s %s\n", g.Query, g.Name, g.Value, g.Target, passMark(g.Pass), g.Note)
	}
	for q, c := range r.Checks {
		fmt.Fprintf(w, "check %s: runs disagree: %s\n", q, c)
	}
}

// readme is the README's section on the suite.
func (r *nexmarkReport) readme(resultsDir string, p func(string, ...any)) {
	p("## Nexmark (issues 24 and 25)")
	p("")
	p("<!-- From %s, written by `make bench-nexmark` (suite nexmark of bench/cmd/wordcount; the section is bench/cmd/wordcount/nexmark_report.go). -->", path.Join(resultsDir, nexmarkFile))
	p("")
	p("![Nexmark events/s per core: Hummer, the Go program and published figures](%s)", path.Join(resultsDir, nexmarkPlot))
	p("")
	var sizes []string
	for _, q := range r.queryNames() {
		sizes = append(sizes, fmt.Sprintf("%s %s (%.2g s of event time)", q, kilo(float64(r.Events[q])), float64(r.Events[q])/r.EventRate))
	}
	p("Run of %s on %d x %s: the queries of `bench/nexmark` (the Nexmark suite's texts, the DDL for Hummer) over `ENGINE=nexmark` tables generating as fast as they can (`rate=0`), event time at %s events/s (`event_rate`, the Flink suite's rate), into `ENGINE=blackhole` tables (with a PRIMARY KEY for the queries whose rows change: q4, q6, q9, q15-q19). The tables end after a number of events but are planned as streams (`continuous=true`), as Flink's streaming mode runs its bounded generator: every query runs as the continuous job it is over a stream without end (stream joins with keyed state, updating aggregations and Top-N emitting their changes, window operators closing on watermarks), and ends with its input; checkpoints every 3 minutes, as the Flink suite takes them, so a run takes none. Events per run (all three kinds): %s. Medians of %d interleaved runs per contender, query and parallelism; %.0f s in all. While the runs went on (%.0f s), other processes used %.1f CPU s (load average %.2f just before) and the hypervisor stole %.1f s.",
		r.Date, r.Machine.CPUs, r.Machine.CPUModel, kilo(r.EventRate), strings.Join(sizes, ", "), r.Reps, r.DurationS, r.RunsS, r.OtherCPUS, r.Machine.LoadAvg, r.StealS)
	p("")
	p("q6 runs as Hummer's over_window: an OVER aggregation reading the changing rows of a Top-N (the best bid per auction changes as bids arrive, retracting the old), which Flink cannot run (FLINK-19059: its suite skips q6, so no figure is published for it); TestNexmarkQ6Stream checks its answer over streams against PostgreSQL. Runs need not agree on the rows written (rows into the sink) for q12, which groups by processing time (`PROCTIME()`), nor for the queries whose rows change (q4, q6, q9, q15-q19): how many updates they write depends on how their inputs' batches interleave.")
	p("")
	p("At that rate a run covers under a second of event time, where the Flink suite's 100M events at 10M/s cover 10 s: the windowed queries close few windows (q5's bids fall in 5 hop windows of 10 s, q7's and q8's in one tumbling window of 10 s, and q11 has one session per bidder), so they hold every auction's, person's or bidder's state until the end of the input. `-nexmark-event-rate` spreads the same events over more event time.")
	p("")
	if busy := r.OtherCPUS / (r.RunsS * float64(max(r.Machine.CPUs, 1))); r.RunsS > 0 && busy > 0.2 {
		p("**The machine was not quiet**: other processes took %.0f%% of its %d cores while the runs went on, so a run at parallelism 2 got well under two cores and its events/s per core (divided by 2) understates it; events per CPU second, which counts only the CPU the server got, is the fairer comparison between the two parallelisms then.", 100*busy, r.Machine.CPUs)
		p("")
	}
	p("Events/s per core, with events/s in the columns of parallelism 2:")
	p("")
	p("| query | Hummer p=1 | Hummer p=2 | Hummer p=2, events/s | Hummer p=2, per CPU s | Hummer p=2, peak RSS MiB (held before) | Go program p=1 | Go program p=2 | Hummer / Go, p=2 | Flink | RisingWave | Arroyo |")
	p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, q := range r.queryNames() {
		h1, h2 := r.nxRow(q, nameNxHummer, 1), r.nxRow(q, nameNxHummer, 2)
		g1, g2 := r.nxRow(q, nameNxGo, 1), r.nxRow(q, nameNxGo, 2)
		vs := ""
		if h2.Runs > 0 && g2.Runs > 0 {
			vs = fmt.Sprintf("%.2f", h2.PerCore/g2.PerCore)
		}
		rss := ""
		if h2.Runs > 0 {
			rss = fmt.Sprintf("%.0f", h2.PeakRSSMiB)
			if h2.RSSBeforeMiB > 0 {
				rss += fmt.Sprintf(" (%.0f)", h2.RSSBeforeMiB)
			}
		}
		line := fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |", q, h1.cell(h1.PerCore), h2.cell(h2.PerCore), h2.cell(h2.EventsPerS), h2.cell(h2.PerCPUS),
			rss, g1.cell(g1.PerCore), g2.cell(g2.PerCore), vs)
		for _, sys := range nexmarkSystems {
			if v := nexmarkPublished[sys][q]; v > 0 {
				line += fmt.Sprintf(" %s |", kilo(v))
			} else {
				line += " n/a |"
			}
		}
		p("%s", line)
	}
	p("")
	p("Per core = events / median wall seconds / cores used, the cores being the parallelism (at most the machine's %d). At parallelism 1 that flatters the plans of several vertices (every query with an exchange: joins, aggregations, Top-N): each vertex's task runs at once with the others, so such a plan uses more than one core even at parallelism 1 (q5's two scans of `bid` run side by side); its goal counts CPU seconds instead. Per CPU s = events / the CPU seconds (user + system) the server used, which is how the nexmark/nexmark project counts Flink's cores (measured CPU, not slots). An event is any of the three kinds, as the Nexmark suite counts them: a query over bids alone still pays for generating the sequence's numbers of people and auctions it skips (it generates none of their fields).", r.Machine.CPUs)
	p("")
	p("| query | goal | target | value | |")
	p("| --- | --- | --- | ---: | --- |")
	for _, g := range r.Goals {
		val, mark := fmt.Sprintf("%.2f", g.Value), passMark(g.Pass)
		if strings.Contains(g.Name, "events") {
			val = kilo(g.Value)
		}
		if g.Note == "no published figure" {
			val, mark = "", "n/a"
		}
		note := ""
		if g.Note != "" {
			note = " (" + g.Note + ")"
		}
		p("| %s | %s | %s | %s | %s%s |", g.Query, g.Name, g.Target, val, mark, note)
	}
	p("")
	if len(r.Checks) > 0 {
		p("**Runs that disagree on the rows written** (they should not: the generator is deterministic):")
		p("")
		for _, q := range r.queryNames() {
			if c, ok := r.Checks[q]; ok {
				p("- %s: %s", q, c)
			}
		}
		p("")
	}
	var errs []string
	for _, run := range r.Runs {
		if run.Error != "" {
			errs = append(errs, fmt.Sprintf("- %s %s p=%d run %d: `%s`", run.Query, run.Contender, run.Parallelism, run.Rep, strings.ReplaceAll(run.Error, "\n", " ")))
		}
	}
	if len(errs) > 0 {
		p("Failed runs:")
		p("")
		for _, e := range errs {
			p("%s", e)
		}
		p("")
	}
	var short []string
	for _, q := range r.queryNames() {
		for _, g := range r.Goals {
			if g.Query == q && !g.Pass && g.Note != "no published figure" {
				short = append(short, q)
				break
			}
		}
	}
	if len(short) > 0 {
		p("Short of a goal in this run, and where the CPU goes (CPU profiles of `hummer serve` under `HUMMER_CPUPROFILE`, one run at parallelism 1, the shares of all the server's samples):")
		p("")
		for _, q := range short {
			why, ok := nexmarkProfiles[q]
			if !ok {
				why = "not profiled"
			}
			p("- %s: %s", q, why)
		}
		p("")
	}
	p("How it is measured:")
	p("")
	p("- **hummer**: one `hummer serve` (the built `bin/hummer`) for the whole run, driven over the PostgreSQL wire protocol with pgx as a user would: the tables of `bench/nexmark/ddl.sql`, each query's blackhole table, then per run `SET parallelism = 1|2` and the query's `INSERT INTO nexmark_qN SELECT ...`. Such an INSERT returns at once with a notice naming its job; the clock runs from sending it until `SHOW PROCESSLIST` (polled every 5 ms on the same connection) shows the job `finished`. CPU s is the server's utime + stime over that span; peak RSS its `VmHWM` after resetting it (`clear_refs`) before the statement, so it includes what the long-lived server held when the statement was sent (in brackets: the server keeps memory the windowed queries' state took; a fresh server runs q0 in under 40 MiB). Every run's `rows_out` (rows into the sink) is recorded, and all runs of a query must agree, the Go program's q0 and q5 included. One warm-up run per query first, not recorded.")
	p("- **go program** (`bench/cmd/nexmarkgo`): q0 and q5 hand-written over the same generator, `connectors/nexmark` driven through its `exec.Source` as Hummer's source tasks drive it (the same Arrow batches), one goroutine per worker generating its share; q0 discards the bids, q5 counts bids per auction in 10 s windows sliding by 2 s, per worker in maps merged at the end, and counts the auctions that reach each window's highest count. It is the machine's practical limit for these queries. One process per run through `bench/cmd/measure` (wall time from start to exit, CPU and peak RSS from rusage; q0 peaks at %.0f MiB, q5 at %.0f MiB at p=2).", r.nxRow("q0", nameNxGo, 2).PeakRSSMiB, r.nxRow("q5", nameNxGo, 2).PeakRSSMiB)
	p("- **Published figures** are quoted as published, on other machines and setups (sources below): they are context, not a measurement on this machine.")
	p("")
	for _, sys := range nexmarkSystems {
		p("- %s: %s.", sys, nexmarkSources[sys])
	}
	p("")
}

// plotNexmark draws, per query, events/s per core of Hummer at both
// parallelisms, the Go program and the published figures, on a log scale
// (bars stand on an unplotted base of 1,000, as a log scale has no zero).
func plotNexmark(r *nexmarkReport, file string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Nexmark, events/s per core, median of %d runs (higher is better)", r.Reps)
	p.Y.Label.Text = "events/s per core (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	const floor = 1000
	qs := r.queryNames()
	series := []struct {
		name  string
		value func(q string) float64
	}{
		{"Hummer p=1", func(q string) float64 { return r.nxRow(q, nameNxHummer, 1).PerCore }},
		{"Hummer p=2", func(q string) float64 { return r.nxRow(q, nameNxHummer, 2).PerCore }},
		{"Go program p=2", func(q string) float64 { return r.nxRow(q, nameNxGo, 2).PerCore }},
		{sysFlink + " (published)", func(q string) float64 { return nexmarkPublished[sysFlink][q] }},
		{sysRisingWave + " (published)", func(q string) float64 { return nexmarkPublished[sysRisingWave][q] }},
	}
	width := vg.Points(9)
	top := float64(floor)
	for _, s := range series {
		for _, q := range qs {
			top = max(top, s.value(q))
		}
	}
	for k, s := range series {
		vals, base := make(plotter.Values, len(qs)), make(plotter.Values, len(qs))
		for i, q := range qs {
			base[i] = floor
			if v := s.value(q); v > floor {
				vals[i] = v - floor
			}
		}
		under, err := plotter.NewBarChart(base, width)
		if err != nil {
			return err
		}
		under.Offset = width * vg.Length(float64(k)-float64(len(series)-1)/2)
		under.LineStyle.Width, under.Color = 0, nil
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		bars.StackOn(under)
		bars.LineStyle.Width = 0
		bars.Color = palette[k%len(palette)]
		p.Add(bars)
		p.Legend.Add(s.name, bars)
	}
	p.NominalX(qs...)
	p.Legend.Top, p.Legend.Left = true, false
	p.Y.Min, p.Y.Max = floor, top*6 // headroom for the legend
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	return p.Save(26*vg.Centimeter, 12*vg.Centimeter, file)
}
