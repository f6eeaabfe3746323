package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hummer-db/hummer/bench/counts"
)

// The distributed suite (issue 4): WordCount at parallelism 3 in local mode, one
// `hummer serve --slots 3`, against a cluster of one JobManager and three
// TaskManagers of one slot each on loopback.
const (
	distTMs         = 3
	distParallelism = 3

	modeLocal   = "local"
	modeCluster = "3 TaskManagers"

	// distGoal is the least throughput the cluster must keep of local mode's: the
	// network tasks cost under 10%.
	distGoal = 0.9
)

// distributedReport is the distributed suite's part of the results.
type distributedReport struct {
	Parallelism  int `json:"parallelism"`
	TaskManagers int `json:"task_managers"`
	// Like machine's: the wall time of the suite's runs, the CPU time other processes
	// used meanwhile and the time the hypervisor stole.
	RunsS     float64           `json:"runs_s"`
	OtherCPUS float64           `json:"other_cpu_s"`
	StealS    float64           `json:"steal_s"`
	Modes     []contenderReport `json:"modes"`
	// Analyses hold one EXPLAIN ANALYZE per mode and input, outside the timed runs.
	Analyses []analysisReport `json:"explain_analyze"`
	Runs     []runReport      `json:"runs"` // Contender is the mode
	Summary  []distRow        `json:"summary"`
	Goals    []goal           `json:"goals"`
}

type analysisReport struct {
	Mode   string `json:"mode"`
	Copies int    `json:"copies"`
	analysis
}

// distRow is the median of one mode's successful runs on one input.
type distRow struct {
	Mode         string  `json:"mode"`
	Copies       int     `json:"copies"`
	Runs         int     `json:"runs"`
	WallS        float64 `json:"wall_s"`
	MBPerS       float64 `json:"mb_per_s"`
	CPUS         float64 `json:"cpu_s"`        // summed over the mode's processes
	PeakRSSMiB   float64 `json:"peak_rss_mib"` // each process's peak, summed
	RSSBeforeMiB float64 `json:"rss_before_mib"`
	NetBytes     int64   `json:"net_bytes"` // from EXPLAIN ANALYZE
	VsLocal      float64 `json:"vs_local"`  // throughput ratio
}

func distModes() []contenderReport {
	return []contenderReport{
		{Name: modeLocal, Query: wordCountSQL, Notes: fmt.Sprintf(
			"`hummer serve --slots %d`: one process; the edges between tasks are in-memory queues", distParallelism)},
		{Name: modeCluster, Query: wordCountSQL, Notes: fmt.Sprintf(
			"`hummer jobmanager` (PostgreSQL frontend, planning, scheduling; no tasks of its own) and %d × `hummer taskmanager --slots 1`, all on 127.0.0.1; "+
				"edges between TaskManagers are network channels (Arrow IPC over TCP), and the result tasks send their rows to the JobManager over TCP too", distTMs)},
	}
}

// runDistributed runs the distributed suite, records it in rep.Distributed and
// returns how many runs failed.
func runDistributed(ctx context.Context, cfg config, rep *report, bin, work string, inputs []*input) (int, error) {
	d := &distributedReport{Parallelism: distParallelism, TaskManagers: distTMs, Modes: distModes()}
	progress("distributed: starting hummer serve --slots %d and a cluster of 1 JobManager + %d TaskManagers", distParallelism, distTMs)
	local, err := startHummer(ctx, bin, work, "local", distParallelism)
	if err != nil {
		return 0, err
	}
	defer local.Close()
	cluster, err := startCluster(ctx, bin, work, "cluster", distTMs)
	if err != nil {
		return 0, err
	}
	defer cluster.Close()
	servers := map[string]*hummerServer{modeLocal: local, modeCluster: cluster}
	for _, h := range servers {
		for _, in := range inputs {
			if err := h.createTable(ctx, in.Table, in.Path); err != nil {
				return 0, err
			}
		}
	}

	others, err := startOtherWork(append(local.pids(), cluster.pids()...))
	if err != nil {
		return 0, err
	}
	failed := 0
	for _, in := range inputs {
		query := fmt.Sprintf(wordCountSQL, in.Table)
		want := counts.Of(in.Ref)
		for _, mode := range d.Modes {
			h := servers[mode.Name]
			// One warm-up per mode and input, then EXPLAIN ANALYZE for the network bytes;
			// neither is timed.
			if _, got, err := h.run(ctx, distParallelism, query); err != nil || got != want {
				return 0, fmt.Errorf("%s warm-up on %d copies: %v (got %v, want %v)", mode.Name, in.Copies, err, got, want)
			}
			a, err := h.analyze(ctx, distParallelism, query)
			if err != nil {
				return 0, fmt.Errorf("%s: EXPLAIN ANALYZE on %d copies: %w", mode.Name, in.Copies, err)
			}
			if mode.Name == modeCluster && (len(a.TaskManagers) != distTMs || a.NetBytesOut == 0) {
				return 0, fmt.Errorf("%s: EXPLAIN ANALYZE on %d copies shows tasks on %v and %d network bytes; want %d TaskManagers and bytes > 0",
					mode.Name, in.Copies, a.TaskManagers, a.NetBytesOut, distTMs)
			}
			progress("%d x, %-14s EXPLAIN ANALYZE: %d tasks on %v, %d rows in, %d network bytes out",
				in.Copies, mode.Name, a.Tasks, a.TaskManagers, a.RowsIn, a.NetBytesOut)
			d.Analyses = append(d.Analyses, analysisReport{Mode: mode.Name, Copies: in.Copies, analysis: a})
		}
		for r := range cfg.reps {
			for k := range d.Modes { // alternating which mode goes first
				mode := d.Modes[(k+r)%len(d.Modes)].Name
				m, got, err := servers[mode].run(ctx, distParallelism, query)
				if err == nil && got != want {
					err = fmt.Errorf("wrong result: got %v, want %v", got, want)
				}
				run := runReport{Contender: mode, Copies: in.Copies, Rep: r + 1, WallS: m.Wall.Seconds(), CPUS: m.CPU.Seconds(),
					PeakRSSMiB: mib(m.PeakRSS), RSSBeforeMiB: mib(m.RSSBefore), Result: got}
				if err != nil {
					run.Error = err.Error()
					failed++
					progress("%d x, run %d/%d, %-22s FAILED: %v", in.Copies, r+1, cfg.reps, mode, err)
				} else {
					progress("%d x, run %d/%d, %-22s %6.3f s wall %6.3f s CPU %7.1f MiB peak RSS",
						in.Copies, r+1, cfg.reps, mode, m.Wall.Seconds(), m.CPU.Seconds(), mib(m.PeakRSS))
				}
				d.Runs = append(d.Runs, run)
			}
		}
	}
	runs, other, steal, err := others.done()
	if err != nil {
		return 0, err
	}
	d.RunsS, d.OtherCPUS, d.StealS = round(runs.Seconds(), 1), round(other.Seconds(), 1), round(steal.Seconds(), 1)
	rep.Distributed = d
	return failed, nil
}

func (d *distributedReport) summarise(inputs []inputReport) {
	d.Summary, d.Goals = nil, nil
	for _, in := range inputs {
		for _, mode := range d.Modes {
			var wall, cpu, rss, before []float64
			for _, run := range d.Runs {
				if run.Contender == mode.Name && run.Copies == in.Copies && run.Error == "" {
					wall, cpu, rss, before = append(wall, run.WallS), append(cpu, run.CPUS), append(rss, run.PeakRSSMiB), append(before, run.RSSBeforeMiB)
				}
			}
			row := distRow{Mode: mode.Name, Copies: in.Copies, Runs: len(wall), NetBytes: d.analysis(mode.Name, in.Copies).NetBytesOut}
			if len(wall) > 0 && median(wall) > 0 {
				row.WallS, row.CPUS, row.PeakRSSMiB, row.RSSBeforeMiB = median(wall), median(cpu), median(rss), median(before)
				row.MBPerS = float64(in.Bytes) / 1e6 / row.WallS
			}
			d.Summary = append(d.Summary, row)
		}
		local := d.row(modeLocal, in.Copies)
		for i := range d.Summary {
			if s := &d.Summary[i]; s.Copies == in.Copies {
				s.VsLocal = ratio(s.MBPerS, local.MBPerS)
			}
		}
		v := d.row(modeCluster, in.Copies).VsLocal
		d.Goals = append(d.Goals, goal{Name: fmt.Sprintf("%s throughput / local mode's", modeCluster), Copies: in.Copies,
			Value: round(v, 3), Target: fmt.Sprintf("≥ %.1f", distGoal), Pass: v >= distGoal})
	}
	for i := range d.Summary {
		s := &d.Summary[i]
		s.WallS, s.MBPerS, s.CPUS, s.VsLocal = round(s.WallS, 3), round(s.MBPerS, 1), round(s.CPUS, 2), round(s.VsLocal, 2)
		s.PeakRSSMiB, s.RSSBeforeMiB = round(s.PeakRSSMiB, 1), round(s.RSSBeforeMiB, 1)
	}
}

func (d *distributedReport) row(mode string, copies int) distRow {
	for _, s := range d.Summary {
		if s.Mode == mode && s.Copies == copies {
			return s
		}
	}
	return distRow{}
}

func (d *distributedReport) analysis(mode string, copies int) analysis {
	for _, a := range d.Analyses {
		if a.Mode == mode && a.Copies == copies {
			return a.analysis
		}
	}
	return analysis{}
}

// readme renders the suite's section of the README.
func (d *distributedReport) readme(r *report, p func(string, ...any)) {
	p("## Distributed: %d TaskManagers over loopback against local mode (issue 4)", d.TaskManagers)
	p("")
	p("WordCount (the query of the table above) with `SET parallelism = %d`, medians of %d runs per mode and input, the two modes alternating. "+
		"While these runs went on (%.0f s), other processes used %.1f CPU s and the hypervisor stole %.1f s.",
		d.Parallelism, r.Reps, d.RunsS, d.OtherCPUS, d.StealS)
	p("")
	p("| mode | input | MB/s | wall s | CPU s | peak RSS MiB | network MB | throughput vs local |")
	p("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, s := range d.Summary {
		in := fmt.Sprintf("%d x kjv (%.0f MB)", s.Copies, r.inputBytes(s.Copies)/1e6)
		if s.Runs == 0 {
			p("| %s | %s | failed | | | | %.1f | |", s.Mode, in, float64(s.NetBytes)/1e6)
			continue
		}
		p("| %s | %s | %.1f | %.3f | %.2f | %.1f | %.1f | %.2f |", s.Mode, in, s.MBPerS, s.WallS, s.CPUS, s.PeakRSSMiB, float64(s.NetBytes)/1e6, s.VsLocal)
	}
	p("")
	p("| goal | target | %s |", strings.Join(mapInputs(r, func(c int) string { return fmt.Sprintf("%d x kjv", c) }), " | "))
	p("| --- | --- |%s", strings.Repeat(" ---: |", len(r.Inputs)))
	var names []string
	for _, g := range d.Goals {
		if !slices.Contains(names, g.Name) {
			names = append(names, g.Name)
		}
	}
	for _, name := range names {
		target := ""
		cells := mapInputs(r, func(c int) string {
			for _, g := range d.Goals {
				if g.Name == name && g.Copies == c {
					target = g.Target
					return fmt.Sprintf("%.3f %s", g.Value, map[bool]string{true: "✅", false: "❌"}[g.Pass])
				}
			}
			return ""
		})
		p("| %s | %s (the network tasks cost under %.0f%%) | %s |", name, target, 100*(1-distGoal), strings.Join(cells, " | "))
	}
	p("")
	p("**This machine has %d cores**: parallelism %d oversubscribes them, in both modes alike (%d tasks, %d reading and pre-aggregating and %d finishing the aggregation, run at once on %d cores). "+
		"Local mode multiplexes its tasks on %d threads (one per core); each of the cluster's %d TaskManagers runs on as many cores as it has slots (GOMAXPROCS = --slots = 1), %d threads in all for the kernel to share out, plus the JobManager's.",
		r.Machine.CPUs, d.Parallelism, 2*d.Parallelism, d.Parallelism, d.Parallelism, r.Machine.CPUs, r.Machine.CPUs, d.TaskManagers, d.TaskManagers)
	p("")
	for _, m := range d.Modes {
		p("- **%s**: %s.", m.Name, m.Notes)
	}
	for _, in := range r.Inputs {
		if a := d.analysis(modeCluster, in.Copies); a.Tasks > 0 {
			p("- On %d x kjv, EXPLAIN ANALYZE placed the cluster's %d tasks on %d TaskManagers; channels: %s.", in.Copies, a.Tasks, len(a.TaskManagers), a.Channels)
			break
		}
	}
	p("- Readiness: the TaskManagers count as registered once `SET parallelism = %d` succeeds on the JobManager (it fails while fewer slots exist); the driver polls it with a one-minute deadline.", d.Parallelism)
	p("- One warm-up query per mode and input, then one `EXPLAIN ANALYZE` of the query (not timed): **network MB** is the sum of its tasks' `net_bytes_out`, the bytes they wrote to network channels between TaskManagers (10^6 bytes). The rows the result tasks send to the JobManager are not in that count; local mode reports 0. " +
		"The count does not grow with the input: each task pre-aggregates before the hash exchange, so what crosses it is one (word, partial count) row per distinct word and task.")
	p("- Wall time at the client as above. **CPU s** is utime + stime from `/proc/PID/stat` summed over every process of the mode (1 for local, %d for the cluster). **Peak RSS** is the sum of each process's `VmHWM` after resetting it (`clear_refs`) before the query: an upper bound of the cluster's footprint at any instant, and it carries %d Go runtimes and what each process held before the query (median: %s).",
		d.TaskManagers+1, d.TaskManagers+1, strings.Join(heldBefore(d, r), "; "))
	p("")
}

func heldBefore(d *distributedReport, r *report) []string {
	var out []string
	for _, in := range r.Inputs {
		l, c := d.row(modeLocal, in.Copies), d.row(modeCluster, in.Copies)
		out = append(out, fmt.Sprintf("%.0f MiB local, %.0f MiB cluster on %d x kjv", l.RSSBeforeMiB, c.RSSBeforeMiB, in.Copies))
	}
	return out
}

func mapInputs(r *report, f func(copies int) string) []string {
	var out []string
	for _, in := range r.Inputs {
		out = append(out, f(in.Copies))
	}
	return out
}

// writeTable prints the suite's summary and goal for a terminal.
func (d *distributedReport) writeTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tinput\tMB/s\twall s\tCPU s\tpeak RSS MiB\tnetwork MB\tvs local\t")
	for _, s := range d.Summary {
		if s.Runs == 0 {
			fmt.Fprintf(tw, "%s\t%dx\tfailed\t\t\t\t\t\t\n", s.Mode, s.Copies)
			continue
		}
		fmt.Fprintf(tw, "%s\t%dx\t%.1f\t%.3f\t%.2f\t%.1f\t%.1f\t%.2f\t\n",
			s.Mode, s.Copies, s.MBPerS, s.WallS, s.CPUS, s.PeakRSSMiB, float64(s.NetBytes)/1e6, s.VsLocal)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, g := range d.Goals {
		fmt.Fprintf(w, "%s  %dx  %.3f  %s  %s\n", g.Name, g.Copies, g.Value, g.Target, passMark(g.Pass))
	}
}
