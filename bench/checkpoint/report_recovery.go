package checkpoint

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// Recovery is the second part: TaskManagers killed under a running job.
type Recovery struct {
	Setup   RecoverySetup `json:"setup"`
	Machine Machine       `json:"machine"`
	Kills   []Kill        `json:"kills"`
	// Summary has a row per signal, then one over every failure.
	Summary []RecoveryRow `json:"summary"`
	// Lines is how many lines were produced over the part; Missing,
	// Duplicates and Bad are what a read_committed reader of the output got
	// wrong in the end: lines never seen, extra copies, records never sent.
	Lines      int64 `json:"lines"`
	Missing    int64 `json:"missing"`
	Duplicates int64 `json:"duplicates"`
	Bad        int64 `json:"bad"`
	// Job is the job's SHOW PROCESSLIST row at the end; JobManagerWarnings
	// counts the WARN lines of the JobManager's log (each kill logs some).
	Job                string `json:"job"`
	JobManagerWarnings int    `json:"jobmanager_warnings"`
}

// RecoverySetup is the second part's configuration.
type RecoverySetup struct {
	Kills              int     `json:"kills"`   // TaskManagers killed with SIGKILL
	Freezes            int     `json:"freezes"` // then frozen with SIGSTOP
	Rate               int     `json:"rate"`    // lines per second
	Partitions         int     `json:"partitions"`
	Parallelism        int     `json:"parallelism"`
	SettleS            float64 `json:"settle_s"`
	CheckpointInterval string  `json:"checkpoint_interval"`
	Query              string  `json:"query"`
	CaughtUpMs         int64   `json:"caught_up_ms"` // the latency that counts as caught up
}

// Kill is one TaskManager made to fail and the job's recovery, in
// milliseconds from the signal unless named otherwise.
type Kill struct {
	N      int    `json:"n"`
	Signal string `json:"signal"` // SignalKill or SignalStop
	Victim string `json:"victim"` // the TaskManager's id, its data address
	// DetectMs: the JobManager logged "TaskManager lost"; RestartMs: it
	// logged "job failed; restarting from its last checkpoint".
	DetectMs  float64 `json:"detect_ms"`
	RestartMs float64 `json:"restart_ms"`
	// TasksReadyMs: both restored sink tasks logged that they are ready
	// (their transactions recovered from the checkpoint).
	TasksReadyMs float64 `json:"tasks_ready_ms"`
	// FirstOutputMs: the first record written by the restored job reached a
	// read_uncommitted reader; DetectToOutputMs is the same from the
	// detection (the earlier of the two log lines).
	FirstOutputMs    float64 `json:"first_output_ms"`
	DetectToOutputMs float64 `json:"detect_to_output_ms"`
	// FirstCommittedMs: the first record of the restored job reached a
	// read_committed reader (a checkpoint of the new attempt completed).
	FirstCommittedMs float64 `json:"first_committed_ms"`
	// CaughtUpMs: the first record of the restored job with a latency (its
	// arrival − its production time) under Setup.CaughtUpMs: the outage's
	// backlog is drained.
	CaughtUpMs float64 `json:"caught_up_ms"`
	// ReplayedLines says the restored job's first record was a line that had
	// come out before the kill: it replays from the checkpoint's offsets.
	ReplayedLines bool  `json:"replayed_lines"`
	Restarts      int64 `json:"restarts"`      // SHOW PROCESSLIST's, after the recovery
	RestoredFrom  int64 `json:"restored_from"` // SHOW PROCESSLIST's checkpoint column then
}

// Spread is the median, minimum and maximum of one measure over the kills,
// in milliseconds.
type Spread struct {
	MedianMs float64 `json:"median_ms"`
	MinMs    float64 `json:"min_ms"`
	MaxMs    float64 `json:"max_ms"`
}

// RecoveryRow summarises the recoveries from one signal, or ("all") from
// every failure.
type RecoveryRow struct {
	Signal    string `json:"signal"`
	Failures  int    `json:"failures"`  // planned
	Recovered int    `json:"recovered"` // measured

	Detect         Spread `json:"detect"`
	Restart        Spread `json:"restart"`
	TasksReady     Spread `json:"tasks_ready"`
	FirstOutput    Spread `json:"first_output"`
	DetectToOutput Spread `json:"detect_to_output"`
	FirstCommitted Spread `json:"first_committed"`
	CaughtUp       Spread `json:"caught_up"`
}

// signalAll names the summary row over every failure.
const signalAll = "all"

func (r *Recovery) summarise() {
	r.Summary = nil
	for _, sig := range []string{SignalKill, SignalStop, signalAll} {
		planned := map[string]int{SignalKill: r.Setup.Kills, SignalStop: r.Setup.Freezes, signalAll: r.Setup.Kills + r.Setup.Freezes}[sig]
		var ks []Kill
		for _, k := range r.Kills {
			if sig == signalAll || k.Signal == sig {
				ks = append(ks, k)
			}
		}
		if planned == 0 || sig == signalAll && (r.Setup.Kills == 0 || r.Setup.Freezes == 0) {
			continue
		}
		s := RecoveryRow{Signal: sig, Failures: planned, Recovered: len(ks)}
		spread := func(f func(Kill) float64) Spread {
			var xs []float64
			for _, k := range ks {
				xs = append(xs, f(k))
			}
			if len(xs) == 0 {
				return Spread{}
			}
			return Spread{MedianMs: round(median(xs), 1), MinMs: slices.Min(xs), MaxMs: slices.Max(xs)}
		}
		s.Detect = spread(func(k Kill) float64 { return k.DetectMs })
		s.Restart = spread(func(k Kill) float64 { return k.RestartMs })
		s.TasksReady = spread(func(k Kill) float64 { return k.TasksReadyMs })
		s.FirstOutput = spread(func(k Kill) float64 { return k.FirstOutputMs })
		s.DetectToOutput = spread(func(k Kill) float64 { return k.DetectToOutputMs })
		s.FirstCommitted = spread(func(k Kill) float64 { return k.FirstCommittedMs })
		s.CaughtUp = spread(func(k Kill) float64 { return k.CaughtUpMs })
		r.Summary = append(r.Summary, s)
	}
}

// total returns the summary row over every failure: the "all" row, or the
// only one.
func (r *Recovery) total() RecoveryRow {
	if len(r.Summary) == 0 {
		return RecoveryRow{}
	}
	return r.Summary[len(r.Summary)-1]
}

// measures lists the summary's measures with their names, in the order a
// reader follows a recovery.
func (s RecoveryRow) measures() []struct {
	Name string
	S    Spread
} {
	return []struct {
		Name string
		S    Spread
	}{
		{"failure → JobManager logs \"TaskManager lost\" (detection)", s.Detect},
		{"failure → JobManager logs \"job failed; restarting\"", s.Restart},
		{"failure → restored sink tasks ready", s.TasksReady},
		{"failure → first output of the restored job", s.FirstOutput},
		{"detection → first output of the restored job", s.DetectToOutput},
		{"failure → first committed output of the restored job", s.FirstCommitted},
		{fmt.Sprintf("failure → caught up (an output line's latency under %d ms)", caughtUpLatency.Milliseconds()), s.CaughtUp},
	}
}

func (r *Recovery) writeTable(w io.Writer) {
	if len(r.Summary) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "recovery, median (min–max) ms\t"
	for _, s := range r.Summary {
		head += fmt.Sprintf("%s (%d of %d)\t", s.Signal, s.Recovered, s.Failures)
	}
	fmt.Fprintln(tw, head)
	for i, m := range r.Summary[0].measures() {
		line := m.Name + "\t"
		for _, s := range r.Summary {
			x := s.measures()[i].S
			line += fmt.Sprintf("%.1f (%.1f–%.1f)\t", x.MedianMs, x.MinMs, x.MaxMs)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	fmt.Fprintf(w, "lines %d: a read_committed reader missed %d, got %d extra copies and %d records never sent\n", r.Lines, r.Missing, r.Duplicates, r.Bad)
}
