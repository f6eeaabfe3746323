package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"text/tabwriter"
	"time"
)

// ResultsFile is the report's name in the results directory.
const ResultsFile = "checkpoint.json"

// The goals of issue 6, and names of the overhead's.
const (
	GoalThroughput     = "throughput lost to 1 s checkpoints against none (issue 6; medians)"
	GoalThroughputIdle = "throughput lost to 1 s checkpoints against the transactional sink without them (medians)"
	GoalCPU            = "server CPU time per run added by 1 s checkpoints against none (medians)"

	goalOverheadPct = 10.0 // throughput with 1 s checkpoints at most this much below none
	goalRecoveryS   = 2.0  // detection to the restored job's first output
)

// Report is one run of the checkpoint benchmark: what results/checkpoint.json
// holds and what the README's checkpoint section is drawn from.
type Report struct {
	Date      string   `json:"date"`
	DurationS float64  `json:"duration_s"`
	Machine   Machine  `json:"machine"`
	Versions  Versions `json:"versions"`
	Overhead  Overhead `json:"overhead"`
	Recovery  Recovery `json:"recovery"`
	Goals     []Goal   `json:"goals"`
	Errors    []string `json:"errors,omitempty"`
}

// Versions names what was measured.
type Versions struct {
	Hummer  string `json:"hummer"`   // git describe of the repository
	FranzGo string `json:"franz_go"` // the bench's producers and consumers
	KFake   string `json:"kfake"`    // the broker
	Go      string `json:"go"`
}

// Overhead is the first part: throughput with and without checkpoints.
type Overhead struct {
	Setup   OverheadSetup    `json:"setup"`
	Lines   map[string]int64 `json:"lines"` // input lines by query
	Machine Machine          `json:"machine"`
	Runs    []OverheadRun    `json:"runs"` // every run, warm-ups (Round 0) included
	Summary []OverheadRow    `json:"summary"`
}

// OverheadSetup is the first part's configuration.
type OverheadSetup struct {
	Copies      int      `json:"copies"`      // of data/kjv.txt, WordCount's input
	PassCopies  int      `json:"pass_copies"` // the pass-through's
	Reps        int      `json:"reps"`
	Partitions  int      `json:"partitions"`
	Parallelism int      `json:"parallelism"`
	QuietMs     int64    `json:"quiet_ms"` // WordCount's output counts as complete after this long unchanged
	Tables      []string `json:"tables"`
	WordCount   string   `json:"wordcount"`
	PassThrough string   `json:"pass_through"`
}

// OverheadRun is one job over the whole input. Times run from sending the
// INSERT.
type OverheadRun struct {
	Query string `json:"query"`
	Mode  string `json:"mode"`
	Round int    `json:"round"` // 0 for the warm-up
	Lines int64  `json:"lines"`
	// FirstInS is when SHOW PROCESSLIST first showed input read, InputS when
	// it showed all of it, WallS when the output was complete: the sink had
	// written every line (pass-through) or the upsert topic held the final
	// count of "the" (WordCount).
	FirstInS  float64 `json:"first_input_s"`
	InputS    float64 `json:"input_s"`
	WallS     float64 `json:"wall_s"`
	LinesPerS float64 `json:"lines_per_s"` // Lines / WallS
	// CommittedS (with checkpoints) is when a read_committed reader could
	// see the whole output: the checkpoint after the last record completed
	// and the sink committed its transaction.
	CommittedS  float64 `json:"committed_s,omitempty"`
	HummerCPUS  float64 `json:"hummer_cpu_s"` // the server's CPU time from the INSERT to WallS
	BenchCPUS   float64 `json:"bench_cpu_s"`  // this process's meanwhile: mostly the broker's
	RowsOut     int64   `json:"rows_out"`
	Checkpoints int64   `json:"checkpoints"` // the newest complete checkpoint's id at WallS
	Restarts    int64   `json:"restarts"`
	// Of the newest complete checkpoint at WallS, from SHOW PROCESSLIST:
	// trigger to complete, the state stored, the longest barrier alignment.
	LastCheckpointMs    float64 `json:"last_checkpoint_ms,omitempty"`
	LastCheckpointBytes int64   `json:"last_checkpoint_bytes,omitempty"`
	LastAlignmentMs     float64 `json:"last_alignment_ms,omitempty"`
	// RowsAfterDone counts rows written after the output was taken as
	// complete (WordCount's quiet period too short): 0 in a sound run.
	RowsAfterDone int64 `json:"rows_after_done,omitempty"`
	// Checked says the output was read back and matched the reference
	// (the warm-up's WordCount).
	Checked bool `json:"checked,omitempty"`
}

// OverheadRow summarises one query in one mode: medians of the measured runs.
type OverheadRow struct {
	Query      string  `json:"query"`
	Mode       string  `json:"mode"`
	Runs       int     `json:"runs"`
	WallS      float64 `json:"wall_s"`
	WallMinS   float64 `json:"wall_min_s"`
	WallMaxS   float64 `json:"wall_max_s"`
	LinesPerS  float64 `json:"lines_per_s"` // Lines / median WallS
	HummerCPUS float64 `json:"hummer_cpu_s"`
	BenchCPUS  float64 `json:"bench_cpu_s"`
	CommittedS float64 `json:"committed_s,omitempty"`
	// Medians of the runs' checkpoints (the newest one's id, so the number
	// taken) and of their newest checkpoint's duration and size.
	Checkpoints     float64 `json:"checkpoints"`
	RowsOut         float64 `json:"rows_out"`
	CheckpointMs    float64 `json:"checkpoint_ms,omitempty"`
	CheckpointBytes float64 `json:"checkpoint_bytes,omitempty"`
	// VsNone is this mode's throughput over the same query's without
	// checkpoints, CPUVsNone the same for the server's CPU time per run;
	// VsIdle and CPUVsIdle compare 1 s checkpoints with checkpointing on
	// and none taken (the transactional sink without checkpoints).
	VsNone    float64 `json:"vs_none"`
	CPUVsNone float64 `json:"cpu_vs_none"`
	VsIdle    float64 `json:"vs_idle,omitempty"`
	CPUVsIdle float64 `json:"cpu_vs_idle,omitempty"`
	// BestVsNone compares the best runs (shortest wall times): what each
	// mode does when the machine's other tenants leave it alone.
	BestVsNone float64 `json:"best_vs_none"`
}

// Goal is one target of issue 6, judged.
type Goal struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Target string  `json:"target"`
	Pass   bool    `json:"pass"`
}

// summarise fills the summary from the measured runs.
func (o *Overhead) summarise() {
	o.Summary = nil
	for _, q := range []string{QueryWordCount, QueryPassThrough} {
		var rows []OverheadRow
		for _, m := range modes {
			row := OverheadRow{Query: q, Mode: m}
			var wall, cpu, bench, committed, cks, ckMs, ckBytes, out []float64
			for _, r := range o.Runs {
				if r.Query == q && r.Mode == m && r.Round > 0 {
					wall, cpu, bench = append(wall, r.WallS), append(cpu, r.HummerCPUS), append(bench, r.BenchCPUS)
					cks, out = append(cks, float64(r.Checkpoints)), append(out, float64(r.RowsOut))
					if r.CommittedS > 0 {
						committed = append(committed, r.CommittedS)
					}
					if r.Checkpoints > 0 {
						ckMs, ckBytes = append(ckMs, r.LastCheckpointMs), append(ckBytes, float64(r.LastCheckpointBytes))
					}
				}
			}
			if len(wall) == 0 {
				continue
			}
			row.Runs = len(wall)
			row.WallS, row.WallMinS, row.WallMaxS = median(wall), slices.Min(wall), slices.Max(wall)
			row.LinesPerS = round(float64(o.Lines[q])/row.WallS, 0)
			row.HummerCPUS, row.BenchCPUS = median(cpu), median(bench)
			row.CommittedS = median(committed)
			row.Checkpoints, row.CheckpointMs, row.CheckpointBytes = median(cks), median(ckMs), median(ckBytes)
			row.RowsOut = median(out)
			rows = append(rows, row)
		}
		for i := range rows {
			for _, base := range rows {
				switch base.Mode {
				case ModeNone:
					rows[i].VsNone = round(base.WallS/rows[i].WallS, 3) // the same lines: throughputs are as the inverse times
					rows[i].CPUVsNone = round(rows[i].HummerCPUS/base.HummerCPUS, 3)
					rows[i].BestVsNone = round(base.WallMinS/rows[i].WallMinS, 3)
				case ModeIdle:
					if rows[i].Mode == ModeCheckpoints {
						rows[i].VsIdle = round(base.WallS/rows[i].WallS, 3)
						rows[i].CPUVsIdle = round(rows[i].HummerCPUS/base.HummerCPUS, 3)
					}
				}
			}
		}
		o.Summary = append(o.Summary, rows...)
	}
}

// row returns the summary of query in mode; a zero row if there is none.
func (o *Overhead) row(query, mode string) OverheadRow {
	for _, s := range o.Summary {
		if s.Query == query && s.Mode == mode {
			return s
		}
	}
	return OverheadRow{}
}

// judge sets the goals from the summaries: issue 6's (throughput, medians),
// and beside it the same loss measured against the transactional sink
// without checkpoints, and in the server's CPU time per run, which the
// machine's other tenants disturb less than wall time.
func (r *Report) judge() {
	r.Goals = nil
	loss := func(name, q string, ratio float64, cost bool) {
		if ratio <= 0 {
			return
		}
		pct := round(100*(1-ratio), 1)
		if cost { // a cost ratio: more is worse
			pct = round(100*(ratio-1), 1)
		}
		r.Goals = append(r.Goals, Goal{Name: name + ", " + q, Value: pct, Unit: "%", Target: fmt.Sprintf("< %g%%", goalOverheadPct), Pass: pct < goalOverheadPct})
	}
	for _, q := range []string{QueryWordCount, QueryPassThrough} {
		if ck := r.Overhead.row(q, ModeCheckpoints); ck.Runs > 0 {
			loss(GoalThroughput, q, ck.VsNone, false)
			loss(GoalThroughputIdle, q, ck.VsIdle, false)
			loss(GoalCPU, q, ck.CPUVsNone, true)
		}
	}
	if s := r.Recovery.total(); s.Recovered > 0 {
		all := s.Recovered == s.Failures // a failure the job did not recover from fails both
		med, mx := round(s.DetectToOutput.MedianMs/1000, 3), round(s.DetectToOutput.MaxMs/1000, 3)
		r.Goals = append(r.Goals,
			Goal{Name: "detection → first output after restore, median of every failure", Value: med, Unit: "s",
				Target: fmt.Sprintf("< %g s", goalRecoveryS), Pass: all && med < goalRecoveryS},
			Goal{Name: "detection → first output after restore, max of every failure", Value: mx, Unit: "s",
				Target: fmt.Sprintf("< %g s", goalRecoveryS), Pass: all && mx < goalRecoveryS})
	}
}

// median returns the median of xs (the mean of the middle two for an even
// count), 0 for none; it sorts a copy.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return round((s[n/2-1]+s[n/2])/2, 4)
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// secs is d in seconds, to the millisecond.
func secs(d time.Duration) float64 { return round(d.Seconds(), 3) }

// WriteJSON writes the report to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadReport reads a report WriteJSON wrote; it returns nil and no error if
// there is no file at path.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.Overhead.summarise() // from the runs, so changes to the summary apply too
	r.Recovery.summarise()
	r.judge()
	return &r, nil
}

// WriteTable prints the summaries and the goals for a terminal.
func (r *Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "query\tmode\truns\twall s\tmin–max s\tlines/s\tvs none\tbest vs none\tvs idle\tCPU s\tCPU vs none\tbench CPU s\tcommitted s\t")
	for _, s := range r.Overhead.Summary {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f–%.3f\t%.0f\t%.3f\t%.3f\t%s\t%.2f\t%.3f\t%.2f\t%s\t\n", s.Query, s.Mode, s.Runs, s.WallS, s.WallMinS, s.WallMaxS,
			s.LinesPerS, s.VsNone, s.BestVsNone, opt(s.VsIdle), s.HummerCPUS, s.CPUVsNone, s.BenchCPUS, opt(s.CommittedS))
	}
	tw.Flush()
	fmt.Fprintln(w)
	r.Recovery.writeTable(w)
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, g := range r.Goals {
		fmt.Fprintf(tw, "%s\t%g %s\t%s\t%s\n", g.Name, g.Value, g.Unit, g.Target, map[bool]string{true: "pass", false: "FAIL"}[g.Pass])
	}
	tw.Flush()
	for _, e := range r.Errors {
		fmt.Fprintln(w, "error:", e)
	}
}

// opt formats an optional figure: blank when 0.
func opt(x float64) string {
	if x == 0 {
		return ""
	}
	return fmt.Sprintf("%.3f", x)
}
