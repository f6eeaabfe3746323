package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/hummer-db/hummer/bench/counts"
)

// report is one benchmark run: what results/*.json hold and what the README and the
// plot are drawn from.
type report struct {
	Date       string            `json:"date"`
	DurationS  float64           `json:"duration_s"`
	Machine    machine           `json:"machine"`
	Versions   versions          `json:"versions"`
	Reps       int               `json:"reps"`
	Inputs     []inputReport     `json:"inputs"`
	Contenders []contenderReport `json:"contenders"`
	Runs       []runReport       `json:"runs"`
	Summary    []summaryRow      `json:"summary"`
	Goals      []goal            `json:"goals"`

	Distributed *distributedReport `json:"distributed,omitempty"` // issue 4's suite, if it ran
}

type versions struct {
	Hummer string `json:"hummer"` // git describe of the repository benchmarked
	DuckDB string `json:"duckdb"`
	Mawk   string `json:"mawk"`
	Go     string `json:"go"`
}

type inputReport struct {
	Copies    int           `json:"copies"`
	Bytes     int64         `json:"bytes"`
	Reference counts.Digest `json:"reference"`
}

type contenderReport struct {
	Name  string `json:"name"`
	Notes string `json:"notes"`
	Query string `json:"query"` // %s stands for the input (table or file)
}

type runReport struct {
	Contender    string        `json:"contender"`
	Copies       int           `json:"copies"`
	Rep          int           `json:"rep"`
	WallS        float64       `json:"wall_s"`
	CPUS         float64       `json:"cpu_s"`
	PeakRSSMiB   float64       `json:"peak_rss_mib"`
	RSSBeforeMiB float64       `json:"rss_before_mib,omitempty"`
	Result       counts.Digest `json:"result"`
	Error        string        `json:"error,omitempty"`
}

// summaryRow is the median of one contender's successful runs on one input. Each
// column is its own median.
type summaryRow struct {
	Contender  string  `json:"contender"`
	Copies     int     `json:"copies"`
	Runs       int     `json:"runs"` // successful ones
	WallS      float64 `json:"wall_s"`
	MBPerS     float64 `json:"mb_per_s"` // input bytes / 10^6 / median wall
	CPUS       float64 `json:"cpu_s"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// RSSBeforeMiB is, for Hummer, the server's RSS when the query started: what the
	// long-lived server held from earlier queries.
	RSSBeforeMiB float64 `json:"rss_before_mib,omitempty"`
	VsDuckDB     float64 `json:"vs_duckdb"`     // throughput ratio
	VsGo         float64 `json:"vs_go_counter"` // throughput ratio
}

// goal is one of issue 3's targets, judged on one input.
type goal struct {
	Name   string  `json:"name"`
	Copies int     `json:"copies"`
	Value  float64 `json:"value"`
	Target string  `json:"target"`
	Pass   bool    `json:"pass"`
}

func (r *report) summarise() {
	r.Summary, r.Goals = nil, nil
	for _, in := range r.Inputs {
		for _, c := range r.Contenders {
			var wall, cpu, rss, before []float64
			for _, run := range r.Runs {
				if run.Contender == c.Name && run.Copies == in.Copies && run.Error == "" {
					wall, cpu, rss = append(wall, run.WallS), append(cpu, run.CPUS), append(rss, run.PeakRSSMiB)
					if run.RSSBeforeMiB > 0 {
						before = append(before, run.RSSBeforeMiB)
					}
				}
			}
			row := summaryRow{Contender: c.Name, Copies: in.Copies, Runs: len(wall)}
			if len(wall) > 0 && median(wall) > 0 {
				row.WallS, row.CPUS, row.PeakRSSMiB = median(wall), median(cpu), median(rss)
				row.MBPerS = float64(in.Bytes) / 1e6 / row.WallS
				if len(before) > 0 {
					row.RSSBeforeMiB = median(before)
				}
			}
			r.Summary = append(r.Summary, row)
		}
		duck, gow := r.row(nameDuckDB, in.Copies), r.row(nameGo, in.Copies)
		for i := range r.Summary {
			s := &r.Summary[i]
			if s.Copies == in.Copies {
				s.VsDuckDB, s.VsGo = ratio(s.MBPerS, duck.MBPerS), ratio(s.MBPerS, gow.MBPerS)
			}
		}
		if len(r.Contenders) == 0 { // that suite did not run
			continue
		}
		h2, h1 := r.row(nameHummer2, in.Copies), r.row(nameHummer1, in.Copies)
		add := func(name string, value float64, target string, pass bool) {
			r.Goals = append(r.Goals, goal{Name: name, Copies: in.Copies, Value: round(value, 3), Target: target, Pass: pass && value > 0})
		}
		add("Hummer p=2 throughput / DuckDB's", h2.VsDuckDB, "≥ 1.5", h2.VsDuckDB >= 1.5)
		add("Hummer p=2 throughput / the Go counter's", h2.VsGo, "≥ 0.8", h2.VsGo >= 0.8)
		rssRatio := ratio(h2.PeakRSSMiB, duck.PeakRSSMiB)
		add("Hummer p=2 peak RSS / DuckDB's", rssRatio, "≤ 1", rssRatio <= 1)
		scale := ratio(h2.MBPerS, h1.MBPerS)
		add("Hummer throughput, parallelism 2 / 1", scale, "≥ 1.8", scale >= 1.8)
		for _, v := range []string{nameUpper, nameLonger} {
			slow := ratio(r.row(v, in.Copies).WallS, h2.WallS)
			add(fmt.Sprintf("%s time / plain query's", v), slow, "≤ 1.2", slow <= 1.2)
		}
	}
	for i := range r.Summary {
		s := &r.Summary[i]
		s.WallS, s.MBPerS, s.CPUS = round(s.WallS, 3), round(s.MBPerS, 1), round(s.CPUS, 2)
		s.VsDuckDB, s.VsGo = round(s.VsDuckDB, 2), round(s.VsGo, 2)
	}
	if r.Distributed != nil {
		r.Distributed.summarise(r.Inputs)
	}
}

// row returns the summary of contender name on copies; a zero row if it has none.
func (r *report) row(name string, copies int) summaryRow {
	for _, s := range r.Summary {
		if s.Contender == name && s.Copies == copies {
			return s
		}
	}
	return summaryRow{}
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratio returns a/b, or 0 when either is missing.
func ratio(a, b float64) float64 {
	if a == 0 || b == 0 {
		return 0
	}
	return a / b
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

func (r *report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func readReport(path string) (*report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// writeTable prints the summary and the goals for a terminal.
func (r *report) writeTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "contender\tinput\tMB/s\twall s\tCPU s\tpeak RSS MiB\tvs DuckDB\tvs Go counter\t")
	for _, s := range r.Summary {
		if s.Runs == 0 {
			fmt.Fprintf(tw, "%s\t%dx\tfailed\t\t\t\t\t\t\n", s.Contender, s.Copies)
			continue
		}
		fmt.Fprintf(tw, "%s\t%dx\t%.1f\t%.3f\t%.2f\t%.1f\t%.2f\t%.2f\t\n",
			s.Contender, s.Copies, s.MBPerS, s.WallS, s.CPUS, s.PeakRSSMiB, s.VsDuckDB, s.VsGo)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, g := range r.Goals {
		fmt.Fprintf(tw, "%s\t%dx\t%.3f\t%s\t%s\n", g.Name, g.Copies, g.Value, g.Target, passMark(g.Pass))
	}
	tw.Flush()
	if r.Distributed != nil {
		fmt.Fprintln(w)
		r.Distributed.writeTable(w)
	}
}

func passMark(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

// summarised is a suite's results file, whose derived fields summarise fills.
type summarised[T any] interface {
	*T
	summarise()
}

// readSummarised reads a suite's results file and summarises it; a missing
// file is a nil report.
func readSummarised[T any, P summarised[T]](path string) (*T, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r T
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	P(&r).summarise()
	return &r, nil
}
