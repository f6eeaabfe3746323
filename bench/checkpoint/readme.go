package checkpoint

import (
	"fmt"
	pathpkg "path"
	"strings"
)

// Readme renders the README's checkpoint section from r; resultsDir is where
// the results file is, relative to the README.
func (r *Report) Readme(resultsDir string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	m := r.Machine
	p("## Checkpoints: what they cost a job's throughput, and recovery from a lost TaskManager (issue 6)")
	p("")
	p("<!-- From %s, written by `make bench` or `make bench-checkpoint` (bench/cmd/checkpoint; the section is bench/checkpoint/readme.go). -->", pathpkg.Join(resultsDir, ResultsFile))
	p("")
	p("Run of %s on %d x %s, Linux %s; %.0f s in all.", r.Date, m.CPUs, m.CPUModel, m.Kernel, r.DurationS)
	for _, e := range r.Errors {
		p("")
		p("**The run failed**: %s", strings.ReplaceAll(e, "\n", " "))
	}
	p("")
	r.readmeGoals(p)
	if len(r.Overhead.Summary) > 0 {
		r.readmeOverhead(p)
	}
	if len(r.Recovery.Summary) > 0 {
		r.readmeRecovery(p)
	}
	return b.String()
}

func (r *Report) readmeGoals(p func(string, ...any)) {
	if len(r.Goals) == 0 {
		return
	}
	p("| goal | target | value |")
	p("| --- | --- | ---: |")
	for _, g := range r.Goals {
		p("| %s | %s | %g %s %s |", g.Name, g.Target, g.Value, g.Unit, map[bool]string{true: "✅", false: "❌"}[g.Pass])
	}
	p("")
}

// noise describes how busy the machine was while a part ran.
func noise(m Machine, hummer string) string {
	wait := "the kernel keeps no CPU pressure figures here"
	if m.CPUWaitS >= 0 {
		wait = fmt.Sprintf("for %.1f s of them some runnable task waited for a core (`/proc/pressure/cpu`)", m.CPUWaitS)
	}
	return fmt.Sprintf("While it ran (%.0f s), %s, the hypervisor stole %.1f s and the load average was %.2f before; the bench process (broker, producers, readers) used %.1f CPU s%s.",
		m.RunsS, wait, m.StealS, m.LoadAvg, m.BenchCPUS, hummer)
}

func (r *Report) readmeOverhead(p func(string, ...any)) {
	o := r.Overhead
	s := o.Setup
	p("### Overhead: throughput with checkpoints every second and without")
	p("")
	hummer := ""
	if o.Machine.HummerCPUS > 0 {
		hummer = fmt.Sprintf(", Hummer's server %.1f", o.Machine.HummerCPUS)
	}
	p("Medians of %d runs per job and mode, the modes alternating. **The figures are noisy**: the machine has %d cores and is shared with other engineers' builds and tests, and the broker runs in the bench process, beside the server. %s "+
		"The min–max column shows how far single runs stray; the server's CPU time per run moves less than the wall time.",
		s.Reps, o.Machine.CPUs, noise(o.Machine, hummer))
	p("")
	p("| job | mode | wall s, median (min–max) | lines/s | vs no checkpoints: median (best runs) | Hummer CPU s | CPU vs no checkpoints | broker CPU s | checkpoints | last checkpoint ms | state bytes | all committed s |")
	p("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, row := range o.Summary {
		p("| %s | %s | %.3f (%.3f–%.3f) | %.0f | %.3f (%.3f) | %.2f | %.3f | %.2f | %g | %s | %s | %s |", row.Query, row.Mode,
			row.WallS, row.WallMinS, row.WallMaxS, row.LinesPerS, row.VsNone, row.BestVsNone, row.HummerCPUS, row.CPUVsNone, row.BenchCPUS,
			row.Checkpoints, optF(row.CheckpointMs, 1), optF(row.CheckpointBytes, 0), opt(row.CommittedS))
	}
	p("")
	p("What runs:")
	p("")
	p("- **Broker**: franz-go's kfake (%s) in the bench process, as in the latency benchmark: in memory, nothing replicated. The input is preloaded before any run: `%s` holds %d copies of `data/kjv.txt` for WordCount and `%s` %d copies for the pass-through (%s lines), each over %d partitions, line i of the input in partition i mod %d. Each run writes a topic of its own (%d partitions), deleted after the run.",
		r.Versions.KFake, topicVerses, s.Copies, topicLong, s.PassCopies, joinLines(o.Lines), s.Partitions, s.Partitions, s.Partitions)
	p("- **Hummer**: one `hummer serve --slots %d` for the whole part, driven with pgx over the PostgreSQL wire (simple protocol); `SET parallelism = %d`. Each run sets the mode, creates its output table and starts the continuous job, which reads its input topic from the start:", s.Parallelism, s.Parallelism)
	p("  ```sql")
	p("  %s", fmt.Sprintf(s.WordCount, "ADDR", 1))
	p("  %s", fmt.Sprintf(s.PassThrough, "ADDR", 2))
	p("  ```")
	p("  with `%s` (an upsert topic) and `%s`.", fmt.Sprintf(countsTableSQL, "ADDR", 1), fmt.Sprintf(outTableSQL, "ADDR", 2))
	p("- **Modes**: `SET checkpoint_interval = '0'` (*no checkpoints*: the kafka sink writes with kafka-go, at least once), `'1s'` (*1 s checkpoints*: barriers every second, state stored under the data directory, the sink writing each checkpoint's records in a franz-go transaction committed when the checkpoint completes) and `'1h'` (*checkpointing on, none taken*: the transactional sink, but no run lasts until the first checkpoint). Issue 6 compares the first two; as the two sinks' writers differ, the third isolates what the checkpoints themselves cost.")
	p("- **Wall time** runs from sending the INSERT (the job starts) until the output is complete: for the pass-through, when `SHOW PROCESSLIST`, polled every %d ms, shows the sink's `rows_out` at the number of input lines; for WordCount, which writes an update per changed word at every flush, when `rows_in` is the number of input lines and `rows_out` has not moved for %d ms (the time taken is when it last moved). Throughput = input lines / wall time; \"vs no checkpoints\" is the throughput ratio of the medians, and of the best (shortest) runs, which show what each mode does when the machine's other tenants leave it alone. **Hummer CPU s** is the server's user + system time over the same span (`/proc/PID/stat`), **broker CPU s** the bench process's (the broker serving the job, and the polling).",
		pollProcessList.Milliseconds(), s.QuietMs)
	p("- **checkpoints** is the newest complete checkpoint's number when the output was complete (checkpoints taken in the run); **last checkpoint ms** and **state bytes** are that checkpoint's duration (trigger to complete) and stored state, from `SHOW PROCESSLIST`. **all committed s**: with 1 s checkpoints a `read_committed` reader sees the last records only once the checkpoint after them completes and the sink commits; this is when the topic's last stable offset reached its end.")
	p("- Each run's job is stopped with `KILL` once measured. The warm-up (one WordCount with 1 s checkpoints, one pass-through without, not counted) also checks WordCount's result: a `read_committed` reader of the upsert topic, each key's last value, against a reference count of the input (`bench/counts`).")
	late := 0
	for _, run := range o.Runs {
		if run.RowsAfterDone > 0 {
			late++
		}
	}
	if late > 0 {
		p("- **%d runs wrote rows after their output was taken as complete** (`rows_after_done` in the JSON): their wall time is too short.", late)
	} else {
		p("- No run wrote a row after its output was taken as complete (checked once more just before `KILL`).")
	}
	var rows []string
	for _, row := range o.Summary {
		if row.Query == QueryWordCount {
			rows = append(rows, fmt.Sprintf("%s %.0f", row.Mode, row.RowsOut))
		}
	}
	if len(rows) > 0 {
		p("- What WordCount writes: `rows_out` counts the rows its sink takes, update-before and update-after rows alike (the upsert sink writes a message for the latter only); median per run, for %d input lines: %s. The task of the final aggregation emits its changes whenever its inbox runs empty (and at least every 100 ms, `exec/task/task.go`), so the sooner the sink returns, the more often it finds the inbox empty and the more updates it writes.",
			o.Lines[QueryWordCount], strings.Join(rows, "; "))
	}
	p("")
}

func (r *Report) readmeRecovery(p func(string, ...any)) {
	rc := r.Recovery
	s := rc.Setup
	p("### Recovery: a TaskManager lost under a running job")
	p("")
	p("%d TaskManagers killed with SIGKILL, then %d frozen with SIGSTOP, one at a time, under a pass-through job with 1 s checkpoints; median (min–max) milliseconds. %s",
		s.Kills, s.Freezes, noise(rc.Machine, ""))
	p("")
	head, rule := "| from → to |", "| --- |"
	for _, row := range rc.Summary {
		name := map[string]string{SignalKill: "SIGKILL (process killed)", SignalStop: "SIGSTOP (process frozen)", signalAll: "every failure"}[row.Signal]
		head += fmt.Sprintf(" %s, %d of %d |", name, row.Recovered, row.Failures)
		rule += " ---: |"
	}
	p("%s", head)
	p("%s", rule)
	for i, m := range rc.Summary[0].measures() {
		line := "| " + m.Name + " |"
		for _, row := range rc.Summary {
			x := row.measures()[i].S
			line += fmt.Sprintf(" %.0f (%.0f–%.0f) |", x.MedianMs, x.MinMs, x.MaxMs)
		}
		p("%s", line)
	}
	p("")
	p("What runs:")
	p("")
	p("- `hummer jobmanager --checkpoint-interval 1s` and `hummer taskmanager --slots 1` processes on loopback, the broker (kfake) in the bench process. Two TaskManagers take the job (`SET parallelism = %d`, input and output topics of %d partitions), then a third, spare one registers:", s.Parallelism, s.Partitions)
	p("  ```sql")
	p("  %s", s.Query)
	p("  ```")
	p("- A producer sends %d lines per second, each `ts=<unix ns> seq=<n>`, its time taken as it is handed to the client; two readers consume the output from its start, one `read_uncommitted` (every record as the sink writes it) and one `read_committed` (what a downstream consumer sees), each record stamped with the time its poll returned, on the producer's clock.", s.Rate)
	p("- Before each failure the job runs undisturbed for %.0f s and until a checkpoint of its current attempt has completed. Then one of the two TaskManagers running its tasks (the ones whose kafka sinks logged that they were ready) gets the signal. **SIGKILL**: the kernel closes the process's connections, so the JobManager's control stream breaks at once. **SIGSTOP**: the process hangs with its connections open, as a frozen or cut-off machine would; only the heartbeat timeout (3 s, heartbeats every 500 ms) finds it lost. After the recovery the frozen process is killed, and a new TaskManager is started as the next spare.", s.SettleS)
	p("- **Detection** is the JobManager's log line `TaskManager lost` (the bench reads the processes' logs as they write them, and stamps each line on arrival); `job failed; restarting` follows once the surviving task has stopped. **First output**: the first record a reader gets after that line from a producer epoch never seen before the failure: the restored tasks fence the old transactional producers, so everything they write carries a new epoch. **Caught up**: the first such record whose own latency (arrival − `ts`) is under %d ms: the outage's backlog is drained.", s.CaughtUpMs)
	p("- In the end a `read_committed` reader must hold every line produced exactly once: %d lines, %d missing, %d extra copies, %d records never sent. The JobManager's log holds %d warnings (each failure logs some).", rc.Lines, rc.Missing, rc.Duplicates, rc.Bad, rc.JobManagerWarnings)
	p("- The job at the end, from `SHOW PROCESSLIST`: `%s`.", rc.Job)
	p("")
	if b, ok := rc.breakdown(); ok {
		p("Where the time from detection to the first output goes (medians over every failure): %.0f ms from detection to the JobManager's `job failed; restarting` line (the surviving task stopping), %.0f ms from there until both restored sinks are ready (`exec/jobmanager/job.go` `Job.restart` waits %d ms before its first redeployment; deploying, restoring the checkpoint, committing its pending transactions and fencing the old producers take the rest), and %.0f ms from there to the first record at the reader. A `read_committed` reader waits on for the restored attempt's first checkpoint, which its coordinator triggers one interval after the attempt starts.",
			b.detectToRestart, b.restartToReady, restartBackoffMs, b.readyToOutput)
		p("")
	}
}

// restartBackoffMs is the engine's first restart delay (exec/jobmanager/job.go,
// Job.restart), named in the README's explanation of the recovery time.
const restartBackoffMs = 500

type breakdown struct{ detectToRestart, restartToReady, readyToOutput float64 }

// breakdown splits detection → first output into its stages, medians over
// the failures.
func (rc *Recovery) breakdown() (breakdown, bool) {
	if len(rc.Kills) == 0 {
		return breakdown{}, false
	}
	var a, b, c []float64
	for _, k := range rc.Kills {
		detect := k.FirstOutputMs - k.DetectToOutputMs
		a, b, c = append(a, k.RestartMs-detect), append(b, k.TasksReadyMs-k.RestartMs), append(c, k.FirstOutputMs-k.TasksReadyMs)
	}
	return breakdown{median(a), median(b), median(c)}, true
}

func joinLines(lines map[string]int64) string {
	return fmt.Sprintf("%d and %d", lines[QueryWordCount], lines[QueryPassThrough])
}

// optF formats an optional figure with the given decimals: blank when 0.
func optF(x float64, decimals int) string {
	if x == 0 {
		return ""
	}
	return fmt.Sprintf("%.*f", decimals, x)
}
