package latency

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
const ResultsFile = "latency.json"

// The two paths every rate is measured on.
const (
	PathHummer = "hummer" // in -> Hummer's continuous INSERT job -> out
	PathRaw    = "raw"    // produce into a topic and consume it: the broker's own round trip
)

// The goals the report judges.
const (
	goalRate     = 5000 // the rate issue 5 sets its goal at
	goalDiffMs   = 1.0  // Hummer's p99 at most this much above the raw round trip's
	paperP99Ms   = 30.0 // the paper's end-to-end p99
	goalDiffName = "Hummer p99 − raw p99"
	goalPaper    = "Hummer p99"
	goalLost     = "lines lost (both paths)"
)

// Report is one run of the latency benchmark: what results/latency.json holds
// and what the README's latency section is drawn from.
type Report struct {
	Date      string   `json:"date"`
	DurationS float64  `json:"duration_s"`
	Machine   Machine  `json:"machine"`
	Versions  Versions `json:"versions"`
	Setup     Setup    `json:"setup"`
	// Job is Hummer's SHOW PROCESSLIST row for the job once the runs were done.
	Job string `json:"job"`
	// ServerWarnings counts the WARN lines in the server's log; the sample holds
	// the first few.
	ServerWarnings       int       `json:"server_warnings"`
	ServerWarningsSample []string  `json:"server_warnings_sample,omitempty"`
	Segments             []Segment `json:"segments"` // every segment, warm-ups (Round 0) included
	// Duplicates counts lines that came back more than once, over the whole run.
	Duplicates int64  `json:"duplicates"`
	Summary    []Row  `json:"summary"` // per rate and path, over the measured segments' lines
	Goals      []Goal `json:"goals"`
}

// Machine describes the computer and how busy it was.
type Machine struct {
	CPUs         int     `json:"cpus"`
	CPUModel     string  `json:"cpu_model"`
	Kernel       string  `json:"kernel"`
	LoadAvg      float64 `json:"loadavg_1m_before"`
	LoadAvgAfter float64 `json:"loadavg_1m_after"`
	// While the segments ran (RunsS of wall time): the CPU time of the bench
	// process (broker, producer, consumers) and of Hummer's server; CPUWaitS, the
	// time during which some runnable task, of any process, waited for a core
	// (the kernel's pressure stall information, "some" line; -1 where the kernel
	// does not keep it); and the time the hypervisor stole. The machine's own
	// busy time is not reported: /proc/stat samples it at each scheduler tick,
	// which misses most of this benchmark's short wake-ups.
	RunsS      float64 `json:"runs_s"`
	BenchCPUS  float64 `json:"bench_cpu_s"`
	HummerCPUS float64 `json:"hummer_cpu_s"`
	CPUWaitS   float64 `json:"cpu_wait_s"`
	StealS     float64 `json:"steal_s"`
}

// Versions names what was measured.
type Versions struct {
	Hummer  string `json:"hummer"`   // git describe of the repository
	FranzGo string `json:"franz_go"` // the bench's producer and consumers
	KFake   string `json:"kfake"`    // the broker
	Go      string `json:"go"`
}

// Setup is the run's configuration.
type Setup struct {
	Rates       []int   `json:"rates"` // lines per second
	WarmupS     float64 `json:"warmup_s"`
	MeasureS    float64 `json:"measure_s"` // per rate and path, split into Rounds segments
	Rounds      int     `json:"rounds"`
	Parallelism string  `json:"parallelism"` // the job's SET parallelism
	Query       string  `json:"query"`
	Tables      string  `json:"tables"`
}

// Segment is one stretch of lines sent on one path at one rate, and what came
// back of them.
type Segment struct {
	Rate  int    `json:"rate"`
	Path  string `json:"path"`
	Round int    `json:"round"` // 0 for the warm-up
	Lines int    `json:"lines"`
	Lost  int    `json:"lost"`
	// WallS runs from the first line sent to the last received (or the drain's
	// deadline); HummerCPUS is what Hummer's server used meanwhile.
	WallS      float64 `json:"wall_s"`
	HummerCPUS float64 `json:"hummer_cpu_s"`
	Stats
}

// Stats are latency percentiles, in milliseconds, of the lines that came back.
type Stats struct {
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"`
}

// Row summarises one path at one rate over its measured segments.
type Row struct {
	Rate      int     `json:"rate"`
	Path      string  `json:"path"`
	Lines     int     `json:"lines"`
	Lost      int     `json:"lost"`
	SegP99Min float64 `json:"segment_p99_min_ms"` // the spread of the segments' own p99s
	SegP99Max float64 `json:"segment_p99_max_ms"`
	// HummerCPUPct is Hummer's server CPU time over its segments' wall time, in
	// percent of one core (hummer rows only).
	HummerCPUPct float64 `json:"hummer_cpu_pct,omitempty"`
	Stats
}

// Goal is one target judged at one rate.
type Goal struct {
	Name   string  `json:"name"`
	Rate   int     `json:"rate"`
	Value  float64 `json:"value"`
	Target string  `json:"target"`
	Pass   bool    `json:"pass"`
}

// stats computes the percentiles of latencies given in nanoseconds; it sorts
// them. Percentiles are nearest-rank: p99 is the smallest latency at least 99%
// of the lines were within.
func stats(lat []int64) Stats {
	if len(lat) == 0 {
		return Stats{}
	}
	slices.Sort(lat)
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(lat)))) - 1
		return ms(lat[max(i, 0)])
	}
	var sum float64
	for _, l := range lat {
		sum += float64(l)
	}
	return Stats{P50Ms: q(0.50), P90Ms: q(0.90), P99Ms: q(0.99), P999Ms: q(0.999), MaxMs: ms(lat[len(lat)-1]),
		MeanMs: round(sum/float64(len(lat))/1e6, 3)}
}

func ms(ns int64) float64 { return round(float64(ns)/float64(time.Millisecond), 3) }

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// row returns the summary of path at rate; a zero row if there is none.
func (r *Report) row(rate int, path string) Row {
	for _, s := range r.Summary {
		if s.Rate == rate && s.Path == path {
			return s
		}
	}
	return Row{}
}

// judge sets the goals from the summary.
func (r *Report) judge() {
	r.Goals = nil
	for _, rate := range r.Setup.Rates {
		h, raw := r.row(rate, PathHummer), r.row(rate, PathRaw)
		if h.Lines == 0 || raw.Lines == 0 {
			continue
		}
		if rate == goalRate {
			d := round(h.P99Ms-raw.P99Ms, 3)
			r.Goals = append(r.Goals, Goal{Name: goalDiffName, Rate: rate, Value: d, Target: fmt.Sprintf("≤ %g ms (issue 5)", goalDiffMs), Pass: d <= goalDiffMs})
		}
		r.Goals = append(r.Goals, Goal{Name: goalPaper, Rate: rate, Value: h.P99Ms, Target: fmt.Sprintf("< %g ms (the paper)", paperP99Ms), Pass: h.P99Ms < paperP99Ms})
		lost := h.Lost + raw.Lost
		r.Goals = append(r.Goals, Goal{Name: goalLost, Rate: rate, Value: float64(lost), Target: "0", Pass: lost == 0})
	}
}

// Lost returns how many measured lines never came back, over every rate and path.
func (r *Report) Lost() int {
	n := 0
	for _, s := range r.Summary {
		n += s.Lost
	}
	return n
}

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
	r.judge() // from the summary, so changes to the goals apply too
	return &r, nil
}

// WriteTable prints the summary and the goals for a terminal.
func (r *Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rate/s\tpath\tlines\tlost\tp50 ms\tp90 ms\tp99 ms\tp99.9 ms\tmax ms\tseg p99 ms\thummer CPU %\t")
	for _, s := range r.Summary {
		cpu := ""
		if s.Path == PathHummer {
			cpu = fmt.Sprintf("%.0f", s.HummerCPUPct)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.2f–%.2f\t%s\t\n", s.Rate, s.Path, s.Lines, s.Lost,
			s.P50Ms, s.P90Ms, s.P99Ms, s.P999Ms, s.MaxMs, s.SegP99Min, s.SegP99Max, cpu)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, g := range r.Goals {
		fmt.Fprintf(tw, "%s\t%d/s\t%g\t%s\t%s\n", g.Name, g.Rate, g.Value, g.Target, map[bool]string{true: "pass", false: "FAIL"}[g.Pass])
	}
	tw.Flush()
}
